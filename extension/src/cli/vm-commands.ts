import * as os from 'node:os';
import type { Backend } from '../core/backend';
import { listSliceShapes } from '../core/compute/tpu-machine-types';
import { describeError, isTpwError } from '../core/errors';
import { addKeyToVm } from '../core/slices/add-key';
import { ensureExtensionKey } from '../core/ssh/keys';
import { chipsOf, formatCost, generationOf, hourlyCost, PRICE_SOURCE, pricedRegions, type PriceTier } from '../core/tpu/cost';
import { listAllNodes, findNode } from '../core/slices/find';
import { shortName } from '../core/tpu/models';
import { deleteSliceGroup } from '../core/slices/multislice';
import { zonesOffering } from '../core/tpu/zones';
import { openCliBackend } from './backend-from-args';
import { createVm } from './create-command';
import { positionalsUpTo, requireArg, UsageError, type CommandContext } from './context';

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

/** Opens the backend for one `tpw vm` subcommand and closes it after. */
async function withBackend<T>(ctx: CommandContext, use: (backend: Backend) => Promise<T>): Promise<T> {
  const backend = await openCliBackend(ctx.globals);
  try {
    return await use(backend);
  } finally {
    await backend.close();
  }
}

/** `tpw vm list [--json]` */
export function vmList(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return withBackend(ctx, async (backend) => {
    const nodes = await listAllNodes(backend, ctx.globals.zone);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(nodes.map((n) => ({ ...n.node, zone: n.zone })), null, 2));
      return 0;
    }
    if (nodes.length === 0) {
      ctx.out(`No TPU VMs in ${backend.project} (${backend.zones.join(', ')}).`);
      return 0;
    }
    const rows = nodes.map(({ node, zone }) => [
      shortName(node.name), zone, node.acceleratorType, node.state, String(node.networkEndpoints.length), node.runtimeVersion || '-',
      node.controlPlane === 'compute' ? 'compute' : 'tpu-api',
    ]);
    printTable(ctx, ['NAME', 'ZONE', 'TYPE', 'STATE', 'WORKERS', 'RUNTIME', 'CONTROL PLANE'], rows);
    return 0;
  });
}

/** `tpw vm create NAME --type TYPE …`: opens the backend only when it needs it (a dry run may not). */
export function vmCreate(ctx: CommandContext): Promise<number> {
  const [name] = positionalsUpTo(ctx, 1);
  return createVm(ctx, name, (what) => progress(ctx, what));
}

/** `tpw vm add-key NAME`: TPU Workbench's own ed25519 key into the VM's metadata ssh-keys (UpdateNode): no gcloud needed. */
export function vmAddKey(ctx: CommandContext): Promise<number> {
  const [name] = positionalsUpTo(ctx, 1);
  const vmName = requireArg(name, 'VM name (tpw vm add-key NAME)');
  return withBackend(ctx, async (backend) => {
    const { node } = await findNode(backend, vmName, ctx.globals.zone);
    const key = ensureExtensionKey();
    const user = backend.kind === 'emulator' ? (await backend.workersOf(node))[0]?.username ?? os.userInfo().username : os.userInfo().username;
    const added = await addKeyToVm(backend, node, user, key.publicKey);
    const how = added.osLogin ? ' through OS Login' : '';
    ctx.out(`${vmName}: ${key.publicKey.split(' ').slice(0, 2).join(' ').slice(0, 40)}… added${how} for ${added.username} (${key.privateKeyPath})`);
    return 0;
  });
}

/** `tpw vm types`: accelerator types and runtime versions of --zone (or the backend's first zone). */
export function vmTypes(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return withBackend(ctx, async (backend) => {
    const zone = ctx.globals.zone ?? backend.zones[0];
    const [types, versions] = await Promise.all([backend.api.listAcceleratorTypes(backend.project, zone), backend.api.listRuntimeVersions(backend.project, zone)]);
    ctx.out(`Accelerator types in ${zone}: ${types.map((t) => t.type).join(', ')}`);
    ctx.out(`Runtime versions in ${zone}: ${versions.map((v) => v.version).join(', ')}`);
    // Compute Engine's TPU shapes there (TPU7x lives only there); a project without the Compute Engine API says so.
    try {
      const offered = new Set(await backend.compute.listTpuMachineTypes(backend.project, zone));
      const shapes = listSliceShapes().filter((sh) => offered.has(sh.machineType));
      ctx.out(`Compute Engine TPU types in ${zone}: ${shapes.map((sh) => `${sh.acceleratorType} (${sh.vmCount}×${sh.machineType})`).join(', ')}`);
    } catch (e) {
      ctx.err(`Compute Engine TPU types in ${zone}: not available (${describeError(e)})`);
    }
    return 0;
  });
}

/** `tpw vm zones [--type TYPE] [--json]` */
export function vmZones(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return withBackend(ctx, async (backend) => {
    const type = ctx.values.type as string | undefined;
    const zones = type ? await zonesOffering(backend.api, backend.project, type) : (await backend.api.listZones(backend.project)).map((z) => z.locationId);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(zones));
      return 0;
    }
    if (zones.length === 0) {
      ctx.err(type ? `No zone of ${backend.project} offers ${type}.` : `${backend.project} lists no zones.`);
      return 1;
    }
    for (const z of zones) ctx.out(z);
    return 0;
  });
}

/** `tpw vm delete|start|stop NAME`: waits for the operation, with progress on stderr. */
export function vmLifecycle(action: 'delete' | 'start' | 'stop'): (ctx: CommandContext) => Promise<number> {
  return (ctx) => {
    const [name] = positionalsUpTo(ctx, 1);
    const node = requireArg(name, `VM name (tpw vm ${action} NAME)`);
    return withBackend(ctx, async (backend) => {
      const found = await findNode(backend, node, ctx.globals.zone).catch(async (e: unknown) => {
        // Not a VM: `vm delete` of a multislice group deletes every slice of it.
        if (action !== 'delete' || !isTpwError(e, 'NOT_FOUND')) throw e;
        const p = progress(ctx, `delete ${node}`);
        const deleted = await deleteSliceGroup(backend, node, ctx.globals.zone, { onProgress: p.onProgress });
        p.done();
        if (!deleted) throw e;
        return deleted;
      });
      if (Array.isArray(found)) {
        ctx.out(`${node}: deleted (slices ${found.join(', ')})`);
        return 0;
      }
      const id = { project: backend.project, zone: found.zone, node };
      const p = progress(ctx, `${action} ${node}`);
      if (action === 'delete') await backend.api.deleteNode(id, { onProgress: p.onProgress });
      else if (action === 'start') await backend.api.startNode(id, { onProgress: p.onProgress });
      else await backend.api.stopNode(id, { onProgress: p.onProgress });
      p.done();
      ctx.out(`${node}: ${action === 'delete' ? 'deleted' : action === 'start' ? 'READY' : 'STOPPED'}`);
      return 0;
    });
  };
}

/** `tpw vm cost TYPE [--zone Z] [--spot|--reserved]`: the hourly list price, per zone's region or every priced region (no backend). */
export function vmCost(ctx: CommandContext): number {
  const [type] = positionalsUpTo(ctx, 1);
  const t = requireArg(type, 'accelerator type (tpw vm cost TYPE --zone Z)');
  const chips = chipsOf(t);
  const gen = generationOf(t);
  if (chips === undefined || gen === undefined) {
    throw new UsageError(`no prices for "${t}": use a v4, v5litepod (v5e), v5p or v6e type such as v5litepod-16`);
  }
  const tiers: PriceTier[] = ctx.values.spot ? ['spot'] : ctx.values.reserved ? ['reserved'] : ['on-demand', 'spot'];
  const regions = ctx.globals.zone ? [ctx.globals.zone] : pricedRegions(gen);
  if (regions.length === 0) ctx.out(`${t}: the price table has no ${gen} list price (as of ${PRICE_SOURCE.asOf})`);
  let any = false;
  for (const where of regions) {
    const parts = tiers.map((tier) => {
      const c = hourlyCost(t, where, tier);
      if (c) any = true;
      return c ? `${tier} ${formatCost(c)} (${c.chips} chips × $${c.usdPerChipHour.toFixed(2)})` : `${tier}: no list price`;
    });
    ctx.out(`${t} in ${where}: ${parts.join(', ')}`);
  }
  ctx.err(`List prices as of ${PRICE_SOURCE.asOf} (${PRICE_SOURCE.url}); estimates, excluding disks, network and taxes.`);
  return any ? 0 : 1;
}

export function printTable(ctx: CommandContext, head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  ctx.out(fmt(head));
  for (const r of rows) ctx.out(fmt(r));
}
