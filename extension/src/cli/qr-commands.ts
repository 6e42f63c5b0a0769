import { TpwError } from '../core/errors';
import type { QueuedResource } from '../core/tpu/models';
import { shortName } from '../core/tpu/models';
import { mapBounded } from '../core/tpu/zones';
import { openCliBackend } from './backend-from-args';
import { requireArg, UsageError, type CommandContext } from './main';
import { printTable } from './vm-commands';

/** `tpw qr list [--zone Z] [--json]` and `tpw qr delete NAME [--zone Z] [--force]`: queued resources. */
export async function qrCommand(ctx: CommandContext): Promise<number> {
  const [sub, name, ...extra] = ctx.positionals;
  if (sub !== 'list' && sub !== 'delete') throw new UsageError(`expected one of: list, delete${sub ? ` (got "${sub}")` : ''}`);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const backend = await openCliBackend(ctx.globals);
  try {
    const zones = ctx.globals.zone ? [ctx.globals.zone] : backend.zones;
    const perZone = await mapBounded(zones, 8, undefined, async (zone) =>
      (await backend.api.listQueuedResources(backend.project, zone)).map((qr) => ({ qr, zone })),
    );
    const all = perZone.flat();
    if (sub === 'list') {
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
    }
    const target = requireArg(name, 'queued resource name (tpw qr delete NAME)');
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
