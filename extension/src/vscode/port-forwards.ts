import * as vscode from 'vscode';
import { parsePortPair, PortForward } from '../core/ssh/port-forward';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';

/** The ports a TPU user forwards most, offered first in "Forward Port…". */
export const WELL_KNOWN_PORTS: readonly { port: number; label: string; detail: string }[] = [
  { port: 6006, label: 'TensorBoard', detail: '6006' },
  { port: 8888, label: 'Jupyter', detail: '8888' },
  // torch_xla's xp.start_server(9012), the port its profiling docs and capture_profile use.
  { port: 9012, label: 'Profiler server (torch_xla)', detail: '9012' },
];

interface Forwarded {
  forward: PortForward;
  vm: string;
  worker: number;
  what: string;
}

/**
 * The window's forwarded ports, over the extension's one ConnectionManager (a dropped connection is made
 * again on the next local connection, so a forward outlives it). Closed when the extension deactivates.
 */
export class PortForwards implements vscode.Disposable {
  private readonly list: Forwarded[] = [];

  constructor(private readonly ctx: Ctx) {}

  get active(): readonly Forwarded[] {
    return this.list;
  }

  /** "Forward Port…" on a worker: a well-known port or one typed as REMOTE or REMOTE:LOCAL. */
  async ask(node: TpuNode, worker: number): Promise<void> {
    const items: (vscode.QuickPickItem & { port?: number })[] = [
      ...WELL_KNOWN_PORTS.map((p) => ({ label: p.label, description: String(p.port), port: p.port })),
      { label: 'Other port…', description: 'REMOTE or REMOTE:LOCAL' },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: `Forward Port from ${shortName(node.name)} worker ${worker}` });
    if (!picked) return;
    let spec: { remotePort: number; localPort?: number };
    if (picked.port !== undefined) spec = { remotePort: picked.port };
    else {
      const text = await vscode.window.showInputBox({
        title: `Forward Port from ${shortName(node.name)} worker ${worker}`,
        prompt: 'The port on the worker, optionally :the local port (e.g. 6006 or 6006:16006)',
        validateInput: (v) => {
          try {
            parsePortPair(v);
            return undefined;
          } catch (e) {
            return (e as Error).message;
          }
        },
      });
      if (!text) return;
      spec = parsePortPair(text);
    }
    const f = await this.open(node, worker, spec, picked.port !== undefined ? picked.label : 'Forwarded port');
    const choice = await vscode.window.showInformationMessage(`${f.what}: worker ${worker} of ${f.vm} port ${f.forward.remotePort} is at localhost:${f.forward.localPort}.`, 'Open in Browser', 'Stop Forwarding');
    if (choice === 'Open in Browser') await openInBrowser(f.forward);
    if (choice === 'Stop Forwarding') await this.stop(f);
  }

  async open(node: TpuNode, worker: number, spec: { remotePort: number; localPort?: number; remoteHost?: string }, what: string): Promise<Forwarded> {
    const backend = await this.ctx.backend();
    const target = (await backend.workersOf(node))[worker];
    const conns = this.ctx.connections(backend);
    await conns.get(target); // a refused host key or an unreachable worker is said now, not on first use
    const forward = await PortForward.open(
      conns,
      { target, ...spec, samePortFirst: backend.kind !== 'emulator' },
      { onError: (e) => this.ctx.log.warn(`forward: ${e.message}`) },
    );
    const f: Forwarded = { forward, vm: shortName(node.name), worker, what };
    this.list.push(f);
    this.ctx.setContext('forwarding', true);
    this.ctx.log.info(`forward: localhost:${forward.localPort} → ${f.vm} w${worker} ${forward.remoteHost}:${forward.remotePort} (${what})`);
    return f;
  }

  /** "Open Forwarded Port in Browser" / "Stop Forwarding Port": a pick among the active forwards. */
  async pick(title: string): Promise<Forwarded | undefined> {
    if (this.list.length === 0) {
      void vscode.window.showInformationMessage('No port is forwarded from a TPU worker.');
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      this.list.map((f) => ({ label: `localhost:${f.forward.localPort}`, description: `${f.what} · ${f.vm} w${f.worker}:${f.forward.remotePort}`, f })),
      { title },
    );
    return picked?.f;
  }

  async stop(f: Forwarded): Promise<void> {
    const i = this.list.indexOf(f);
    if (i >= 0) this.list.splice(i, 1);
    this.ctx.setContext('forwarding', this.list.length > 0);
    await f.forward.close();
  }

  dispose(): void {
    for (const f of this.list.splice(0)) void f.forward.close();
  }
}

/** The browser of the machine the user sits at (asExternalUri: code-server and remote windows map the port). */
export async function openInBrowser(forward: PortForward): Promise<void> {
  const uri = await vscode.env.asExternalUri(vscode.Uri.parse(forward.url));
  await vscode.env.openExternal(uri);
}
