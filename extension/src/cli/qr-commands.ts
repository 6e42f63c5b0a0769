import type { Backend } from '../core/backend';
import { TpwError } from '../core/errors';
import type { QueuedResource } from '../core/tpu/models';
import { shortName } from '../core/tpu/models';
import { mapBounded } from '../core/tpu/zones';
import { openCliBackend } from './backend-from-args';
import { positionalsUpTo, requireArg, type CommandContext } from './context';
import { printTable } from './vm-commands';

interface Located {
  qr: QueuedResource;
  zone: string;
}

/** Every queued resource of --zone (or of every zone of the backend). */
async function listAll(backend: Backend, zone: string | undefined): Promise<{ zones: string[]; all: Located[] }> {
  const zones = zone ? [zone] : backend.zones;
  const perZone = await mapBounded(zones, 8, undefined, async (z) => (await backend.api.listQueuedResources(backend.project, z)).map((qr) => ({ qr, zone: z })));
  return { zones, all: perZone.flat() };
}

/** `tpw qr list [--zone Z] [--json]` */
export async function qrList(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const backend = await openCliBackend(ctx.globals);
  try {
    const { zones, all } = await listAll(backend, ctx.globals.zone);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(all.map(({ qr, zone }) => ({ ...qr, zone })), null, 2));
      return 0;
    }
    if (all.length === 0) {
      ctx.out(`No queued resources in ${backend.project} (${zones.join(', ')}).`);
      return 0;
    }
    printTable(ctx, ['NAME', 'ZONE', 'STATE', 'TYPE', 'TIER', 'NODE', 'VALID UNTIL'], all.map(({ qr, zone }) => row(qr, zone)));
    return 0;
  } finally {
    await backend.close();
  }
}

/** `tpw qr delete NAME [--zone Z] [--force]`: --force deletes its VM too. */
export async function qrDelete(ctx: CommandContext): Promise<number> {
  const [name] = positionalsUpTo(ctx, 1);
  const target = requireArg(name, 'queued resource name (tpw qr delete NAME)');
  const backend = await openCliBackend(ctx.globals);
  try {
    const { zones, all } = await listAll(backend, ctx.globals.zone);
    const hits = all.filter(({ qr }) => shortName(qr.name) === target);
    if (hits.length === 0) throw new TpwError('NOT_FOUND', `Queued resource "${target}" not found in ${backend.project} (zones: ${zones.join(', ')}).`);
    if (hits.length > 1) throw new TpwError('INVALID_ARGUMENT', `Queued resource "${target}" exists in several zones (${hits.map((h) => h.zone).join(', ')}): pick one with --zone.`);
    const force = Boolean(ctx.values.force);
    await backend.api.deleteQueuedResource({ project: backend.project, zone: hits[0].zone, queuedResource: target }, { force });
    ctx.out(`${target}: deleted${force && hits[0].qr.nodeIds.length > 0 ? ` (with node ${hits[0].qr.nodeIds.join(', ')})` : ''}`);
    return 0;
  } finally {
    await backend.close();
  }
}

function row(qr: QueuedResource, zone: string): string[] {
  return [shortName(qr.name), zone, qr.state, qr.acceleratorType ?? '-', qr.tier, qr.nodeIds.join(',') || '-', qr.validUntil ?? '-'];
}
