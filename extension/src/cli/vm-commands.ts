import * as os from 'node:os';
import { addKeyToNode, ensureExtensionKey } from '../core/ssh/keys';
import { listAllNodes, findNode } from '../core/tpu/find';
import { NODE_ID_PATTERN, shortName } from '../core/tpu/models';
import { openCliBackend } from './backend-from-args';
import { requireArg, UsageError, type CommandContext } from './main';

const SUBCOMMANDS = ['list', 'create', 'delete', 'start', 'stop', 'types', 'add-key'] as const;
type Sub = (typeof SUBCOMMANDS)[number];

function progress(ctx: CommandContext, what: string): { onProgress: () => void; done: () => void } {
  const started = Date.now();
  let last = 0;
  return {
    onProgress: () => {
      const s = Math.floor((Date.now() - started) / 1000);
      if (s >= last + 5) {
        last = s;
        ctx.err(`  ${what}… ${s}s`);
      }
    },
    done: () => ctx.err(`  ${what}: done in ${((Date.now() - started) / 1000).toFixed(1)}s`),
  };
}

export async function vmCommand(ctx: CommandContext): Promise<number> {
  const [sub, name, ...extra] = ctx.positionals;
  if (!sub || !(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw new UsageError(`expected one of: ${SUBCOMMANDS.join(', ')}${sub ? ` (got "${sub}")` : ''}`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const backend = await openCliBackend(ctx.globals);
  try {
    switch (sub as Sub) {
      case 'list': {
        const nodes = await listAllNodes(backend, ctx.globals.zone);
        if (ctx.values.json) {
          ctx.out(JSON.stringify(nodes.map((n) => ({ ...n.node, zone: n.zone })), null, 2));
          return 0;
        }
        if (nodes.length === 0) {
          ctx.out(`No TPU VMs in ${backend.project} (${backend.zones.join(', ')}).`);
          return 0;
        }
        const rows = nodes.map(({ node, zone }) => [shortName(node.name), zone, node.acceleratorType, node.state, String(node.networkEndpoints.length), node.runtimeVersion]);
        printTable(ctx, ['NAME', 'ZONE', 'TYPE', 'STATE', 'WORKERS', 'RUNTIME'], rows);
        return 0;
      }
      case 'add-key': {
        // TPU Workbench's own ed25519 key into the VM's metadata ssh-keys (UpdateNode): no gcloud needed.
        const vmName = requireArg(name, 'VM name (tpw vm add-key NAME)');
        const { node } = await findNode(backend, vmName, ctx.globals.zone);
        const key = ensureExtensionKey();
        const user = backend.kind === 'emulator' ? (await backend.workersOf(node))[0]?.username ?? os.userInfo().username : os.userInfo().username;
        await addKeyToNode(backend.api, node, user, key.publicKey);
        ctx.out(`${vmName}: ${key.publicKey.split(' ').slice(0, 2).join(' ').slice(0, 40)}… added for ${user} (${key.privateKeyPath})`);
        return 0;
      }
      case 'types': {
        const zone = ctx.globals.zone ?? backend.zones[0];
        const [types, versions] = await Promise.all([backend.api.listAcceleratorTypes(backend.project, zone), backend.api.listRuntimeVersions(backend.project, zone)]);
        ctx.out(`Accelerator types in ${zone}: ${types.map((t) => t.type).join(', ')}`);
        ctx.out(`Runtime versions in ${zone}: ${versions.map((v) => v.version).join(', ')}`);
        return 0;
      }
      case 'create': {
        const node = requireArg(name, 'VM name (tpw vm create NAME --type TYPE)');
        if (!NODE_ID_PATTERN.test(node)) {
          throw new UsageError(`invalid VM name "${node}": use lowercase letters, digits and hyphens, starting with a letter (at most 63)`);
        }
        const type = requireArg(ctx.values.type as string | undefined, '--type (e.g. --type v5litepod-16; see `tpw vm types`)');
        const zone = ctx.globals.zone ?? backend.zones[0];
        const versions = await backend.api.listRuntimeVersions(backend.project, zone);
        const runtimeVersion = (ctx.values.version_ as string | undefined) ?? versions[0]?.version;
        if (!runtimeVersion) throw new UsageError('--version is required: the zone lists no runtime versions');
        ctx.err(`Creating ${node} (${type}, ${runtimeVersion}) in ${zone}…`);
        const p = progress(ctx, `create ${node}`);
        const created = await backend.api.createNode(
          { project: backend.project, zone, nodeId: node, acceleratorType: type, runtimeVersion, spot: Boolean(ctx.values.spot) },
          { onProgress: p.onProgress },
        );
        p.done();
        ctx.out(`${shortName(created.name)} ${created.state}: ${created.networkEndpoints.map((e, i) => `w${i}=${e.ipAddress}`).join(' ')}`);
        return 0;
      }
      case 'delete':
      case 'start':
      case 'stop': {
        const node = requireArg(name, `VM name (tpw vm ${sub} NAME)`);
        const found = await findNode(backend, node, ctx.globals.zone);
        const id = { project: backend.project, zone: found.zone, node };
        const p = progress(ctx, `${sub} ${node}`);
        if (sub === 'delete') await backend.api.deleteNode(id, { onProgress: p.onProgress });
        else if (sub === 'start') await backend.api.startNode(id, { onProgress: p.onProgress });
        else await backend.api.stopNode(id, { onProgress: p.onProgress });
        p.done();
        ctx.out(`${node}: ${sub === 'delete' ? 'deleted' : sub === 'start' ? 'READY' : 'STOPPED'}`);
        return 0;
      }
    }
  } finally {
    await backend.close();
  }
}

function printTable(ctx: CommandContext, head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  ctx.out(fmt(head));
  for (const r of rows) ctx.out(fmt(r));
}
