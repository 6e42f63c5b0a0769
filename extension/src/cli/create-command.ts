import * as fs from 'node:fs';
import type { Backend } from '../core/backend';
import { isTpwError, TpwError } from '../core/errors';
import { recommendedRuntime } from '../core/explorer/create-request';
import type { CreateNodeRequest, CreateQueuedResourceRequest } from '../core/tpu/api';
import { formatCost, hourlyCost } from '../core/tpu/cost';
import { gcloudCreateCommand, gcloudQueuedCommand } from '../core/tpu/gcloud-command';
import { NODE_ID_PATTERN, shortName } from '../core/tpu/models';
import { parseValidUntil } from '../core/tpu/valid-until';
import { zonesOffering } from '../core/tpu/zones';
import { openCliBackend } from './backend-from-args';
import { chooseControlPlane, createOnCompute, refuseComputeOnly } from './compute-create';
import { requireArg, UsageError, type CommandContext } from './context';

/**
 * `tpw vm create NAME --type T [--version V] [--zone Z] [--spot|--reserved] [--startup-script FILE]
 *   [--label k=v]… [--data-disk SOURCE[,mode=read-only]]… [--description D]
 *   [--queued [--tier spot|guaranteed] [--valid-until 6h|TIME]] [--dry-run]`
 * A quota/capacity failure names the zones that offer the type, so the next try can go there (or be queued).
 */
export async function createVm(ctx: CommandContext, name: string | undefined, progress: (what: string) => { onProgress: () => void; done: () => void }): Promise<number> {
  const node = requireArg(name, 'VM name (tpw vm create NAME --type TYPE)');
  if (!NODE_ID_PATTERN.test(node)) {
    throw new UsageError(`invalid VM name "${node}": use lowercase letters, digits and hyphens, starting with a letter (at most 63)`);
  }
  const type = requireArg(ctx.values.type as string | undefined, '--type (e.g. --type v5litepod-16; see `tpw vm types`)');
  const plane = chooseControlPlane(ctx, type);
  const opts = parseCreateOptions(ctx, plane === 'compute');
  if (plane === 'compute') {
    const common = { spot: opts.spot, reserved: opts.reserved, labels: opts.labels, startupScript: opts.startupScript?.text, queued: Boolean(ctx.values.queued), slices: opts.slices };
    return createOnCompute(ctx, node, type, common, () => openCliBackend(ctx.globals), progress);
  }
  refuseComputeOnly(ctx);
  const dryRun = Boolean(ctx.values['dry-run']);
  let version = ctx.values.version as string | undefined;
  // A dry run with everything given needs no backend: it only prints the gcloud command.
  const backend: Backend | undefined = dryRun && ctx.globals.zone && version && ctx.globals.project ? undefined : await openCliBackend(ctx.globals);
  try {
    const project = ctx.globals.project ?? backend?.project ?? '';
    const zone = ctx.globals.zone ?? backend?.zones[0] ?? '';
    if (!version && backend) {
      // The runtime recommended for the type where the zone lists it (the API refuses one that does not match the type).
      const listed = (await backend.api.listRuntimeVersions(project, zone)).map((v) => v.version);
      const recommended = recommendedRuntime(type);
      version = recommended && listed.includes(recommended) ? recommended : listed[0];
    }
    if (!version) throw new UsageError('--version is required: the zone lists no runtime versions');
    const req: CreateNodeRequest = {
      project,
      zone,
      nodeId: node,
      acceleratorType: type,
      runtimeVersion: version,
      ...(opts.spot ? { spot: true } : {}),
      ...(opts.reserved ? { reserved: true } : {}),
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.description ? { description: opts.description } : {}),
      ...(opts.startupScript !== undefined ? { startupScript: opts.startupScript.text } : {}),
      ...(opts.dataDisks.length > 0 ? { dataDisks: opts.dataDisks } : {}),
    };
    const tier = opts.spot ? 'spot' : opts.reserved ? 'reserved' : 'on-demand';
    const cost = hourlyCost(type, zone, opts.queued ? (opts.queued.tier === 'spot' ? 'spot' : 'on-demand') : tier);
    const gcloudOpts = { startupScriptFile: opts.startupScript?.file };
    const qr: CreateQueuedResourceRequest | undefined = opts.queued
      ? {
          project,
          zone,
          queuedResourceId: node,
          node: nodeSpecOf(req),
          tier: opts.queued.tier,
          ...(opts.queued.validUntil ? { validUntil: opts.queued.validUntil } : {}),
          ...(opts.slices > 1 ? { slices: opts.slices } : {}),
        }
      : undefined;
    if (dryRun) {
      ctx.out(qr ? gcloudQueuedCommand(qr, gcloudOpts) : gcloudCreateCommand(req, gcloudOpts));
      if (cost) ctx.err(`Estimated cost: ${formatCost(cost, { detail: true, tier: qr ? (qr.tier === 'spot' ? 'spot' : 'on-demand') : tier })}`);
      return 0;
    }
    if (!backend) throw new TpwError('INTERNAL', 'no backend');
    try {
      if (qr) {
        ctx.err(`Queueing ${node} (${qr.slices ? `${qr.slices} slices of ` : ''}${type}, ${version}, ${qr.tier}) in ${zone}…`);
        const created = await backend.api.createQueuedResource(qr);
        const what = created.nodeIds.length > 1 ? `nodes ${created.nodeIds.join(', ')} are` : `node ${created.nodeIds.join(', ')} is`;
        ctx.out(`${shortName(created.name)} ${created.state}: ${what} created once capacity is there (tpw qr list)`);
        return 0;
      }
      ctx.err(`Creating ${node} (${type}, ${version}${opts.spot ? ', spot' : opts.reserved ? ', reserved' : ''}) in ${zone}…${cost ? ` ~${formatCost(cost)}` : ''}`);
      const p = progress(`create ${node}`);
      const created = await backend.api.createNode(req, { onProgress: p.onProgress });
      p.done();
      ctx.out(`${shortName(created.name)} ${created.state}: ${created.networkEndpoints.map((e, i) => `w${i}=${e.ipAddress}`).join(' ')}`);
      return 0;
    } catch (e) {
      if (isTpwError(e, 'RESOURCE_EXHAUSTED')) await suggestZones(ctx, backend, type, zone);
      throw e;
    }
  } finally {
    await backend?.close();
  }
}

/** After a quota/capacity failure: which other zones offer the type, and the commands that use them. */
async function suggestZones(ctx: CommandContext, backend: Backend, type: string, failedZone: string): Promise<void> {
  try {
    const zones = (await zonesOffering(backend.api, backend.project, type)).filter((z) => z !== failedZone);
    if (zones.length === 0) {
      ctx.err(`No other zone offers ${type}; queue it instead: add --queued.`);
      return;
    }
    ctx.err(`${type} is also offered in: ${zones.join(', ')}. Retry there with --zone ${zones[0]}, or queue it with --queued.`);
  } catch {
    // The suggestion is a courtesy; the create's own error is what the user must see.
  }
}

interface CreateOptions {
  spot: boolean;
  reserved: boolean;
  labels?: Record<string, string>;
  description?: string;
  startupScript?: { file: string; text: string };
  dataDisks: { sourceDisk: string; mode: 'READ_WRITE' | 'READ_ONLY' }[];
  queued?: { tier: 'spot' | 'guaranteed'; validUntil?: string };
  /** Multislice: this many slices (Cloud TPU API: a queued resource with multisliceParams; Compute Engine: N slices); 1 otherwise. */
  slices: number;
}

function strings(v: unknown): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

/** `compute`: the Compute Engine path, where several slices are several MIGs, not a queued resource. */
export function parseCreateOptions(ctx: CommandContext, compute = false): CreateOptions {
  const v = ctx.values;
  const spot = Boolean(v.spot);
  const reserved = Boolean(v.reserved);
  if (spot && reserved) throw new UsageError('--spot and --reserved cannot be combined');
  const labels: Record<string, string> = {};
  for (const l of strings(v.label)) {
    const eq = l.indexOf('=');
    if (eq <= 0) throw new UsageError(`--label "${l}": expected KEY=VALUE`);
    labels[l.slice(0, eq)] = l.slice(eq + 1);
  }
  const dataDisks = strings(v['data-disk']).map(parseDataDisk);
  let startupScript: CreateOptions['startupScript'];
  const file = v['startup-script'] as string | undefined;
  if (file !== undefined) {
    try {
      startupScript = { file, text: fs.readFileSync(file, 'utf8') };
    } catch (e) {
      throw new TpwError('INVALID_ARGUMENT', `Cannot read the startup script ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}.`);
    }
  }
  let queued: CreateOptions['queued'];
  const tierText = v.tier as string | undefined;
  const validUntil = v['valid-until'] as string | undefined;
  const slicesText = v.slices as string | undefined;
  const slices = slicesText === undefined ? 1 : Number(slicesText);
  if (!Number.isInteger(slices) || slices < 1 || slices > 64) throw new UsageError(`--slices must be a whole number from 1 to 64 (got "${slicesText}")`);
  // Cloud TPU makes several slices only through a queued resource (multisliceParams).
  if (v.queued || (slices > 1 && !compute)) {
    if (reserved) throw new UsageError('--reserved applies to a plain create; a queued resource uses --tier');
    const tier = tierText ?? (spot ? 'spot' : 'guaranteed');
    if (tier !== 'spot' && tier !== 'guaranteed') throw new UsageError(`--tier must be spot or guaranteed (got "${tier}")`);
    if (spot && tier !== 'spot') throw new UsageError('--spot with --queued means --tier spot');
    queued = { tier, ...(validUntil ? { validUntil: parseValidUntil(validUntil) } : {}) };
  } else if (tierText !== undefined || validUntil !== undefined) {
    throw new UsageError('--tier and --valid-until apply to queued resources: add --queued');
  }
  const description = v.description as string | undefined;
  return { spot, reserved, slices, ...(Object.keys(labels).length > 0 ? { labels } : {}), ...(description ? { description } : {}), ...(startupScript ? { startupScript } : {}), dataDisks, ...(queued ? { queued } : {}) };
}

/** `projects/p/zones/z/disks/d[,mode=read-only]` or `source=…,mode=…` → an attached disk. */
function parseDataDisk(text: string): { sourceDisk: string; mode: 'READ_WRITE' | 'READ_ONLY' } {
  let source: string | undefined;
  let mode: 'READ_WRITE' | 'READ_ONLY' = 'READ_WRITE';
  for (const part of text.split(',')) {
    const [k, ...rest] = part.split('=');
    const val = rest.join('=');
    if (rest.length === 0 && source === undefined) source = k;
    else if (k === 'source') source = val;
    else if (k === 'mode' && /^read-?only$/i.test(val)) mode = 'READ_ONLY';
    else if (k === 'mode' && /^read-?write$/i.test(val)) mode = 'READ_WRITE';
    else throw new UsageError(`--data-disk "${text}": expected SOURCE[,mode=read-only|read-write]`);
  }
  if (!source || !/^projects\/[^/]+\/zones\/[^/]+\/disks\/[^/]+$/.test(source)) {
    throw new UsageError(`--data-disk "${text}": the source must be projects/PROJECT/zones/ZONE/disks/DISK`);
  }
  return { sourceDisk: source, mode };
}

/** The node part of a create request, as a queued resource carries it (its tier replaces spot). */
function nodeSpecOf(req: CreateNodeRequest): CreateQueuedResourceRequest['node'] {
  const { nodeId, acceleratorType, runtimeVersion, reserved, labels, description, startupScript, metadata, dataDisks } = req;
  return {
    nodeId,
    acceleratorType,
    runtimeVersion,
    ...(reserved ? { reserved } : {}),
    ...(labels ? { labels } : {}),
    ...(description ? { description } : {}),
    ...(startupScript !== undefined ? { startupScript } : {}),
    ...(metadata ? { metadata } : {}),
    ...(dataDisks ? { dataDisks } : {}),
  };
}
