import { TpwError } from '../core/errors';
import { parsePortPair, PortForward } from '../core/ssh/port-forward';
import { findNode } from '../core/slices/find';
import { openCliBackend } from './backend-from-args';
import { connectionsFor } from './connections';
import { requireArg, UsageError, type CommandContext } from './context';

/** `pod`, `pod:2` → the VM's name and the worker index (0 unless given). */
export function parseVmWorker(text: string): { vm: string; worker: number } {
  const m = /^([^:]+)(?::(\d+))?$/.exec(text);
  if (!m) throw new UsageError(`"${text}" is not VM or VM:WORKER (e.g. my-vm or my-vm:1)`);
  return { vm: m[1], worker: m[2] === undefined ? 0 : Number(m[2]) };
}

/**
 * `tpw forward VM[:WORKER] REMOTE[:LOCAL]...`: forwards ports of one worker to this machine's loopback over
 * the invocation's SSH connection until Ctrl-C. The connection is made again when it drops, so the local
 * ports stay usable across a dropped network.
 */
export async function forwardCommand(ctx: CommandContext): Promise<number> {
  const { vm, worker } = parseVmWorker(requireArg(ctx.positionals[0], 'VM[:WORKER] (tpw forward my-vm:0 6006)'));
  const pairs = ctx.positionals.slice(1).map((p) => {
    try {
      return parsePortPair(p);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  });
  if (pairs.length === 0) throw new UsageError('missing REMOTE[:LOCAL] (the port on the worker, e.g. 6006)');
  const backend = await openCliBackend(ctx.globals);
  const forwards: PortForward[] = [];
  try {
    const { node } = await findNode(backend, vm, ctx.globals.zone);
    const workers = await backend.workersOf(node);
    const target = workers[worker];
    if (!target) throw new TpwError('INVALID_ARGUMENT', `TPU VM "${vm}" has ${workers.length} worker(s) (0–${workers.length - 1}); there is no worker ${worker}.`);
    const conns = connectionsFor(ctx, backend);
    // Connect now: a host key refusal or an unreachable worker is reported before anything listens.
    await conns.get(target);
    for (const p of pairs) {
      const f = await PortForward.open(conns, { target, ...p, samePortFirst: backend.kind !== 'emulator' }, { onError: (e) => ctx.err(`tpw: ${e.message}`) });
      forwards.push(f);
      ctx.out(`localhost:${f.localPort} → ${vm} worker ${worker} localhost:${f.remotePort}  ${f.url}`);
    }
    ctx.err('Forwarding until Ctrl-C.');
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    return 0;
  } finally {
    await Promise.all(forwards.map((f) => f.close()));
    await backend.close();
  }
}
