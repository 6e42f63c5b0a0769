import type { Backend } from '../core/backend';
import type { CreateComputeSliceRequest, Provisioning } from '../core/compute/provider';
import { gcloudComputeCommands } from '../core/compute/gcloud-compute-command';
import { createSliceGroup, sliceRequest } from '../core/compute/slice-group';
import { parseAcceleratorType, resolveSliceShape, type TpuSliceShape } from '../core/compute/tpu-machine-types';
import { UsageError, type CommandContext } from './context';

export type ControlPlane = 'tpu-api' | 'compute';

/**
 * Which control plane `tpw vm create` uses: `--control-plane` when given, else Compute Engine for every type the
 * Cloud TPU API does not offer (TPU7x and later) and the Cloud TPU API for the others (as before).
 */
export function chooseControlPlane(ctx: CommandContext, type: string): ControlPlane {
  const asked = ctx.values['control-plane'] as string | undefined;
  if (asked !== undefined && asked !== 'tpu-api' && asked !== 'compute') throw new UsageError(`--control-plane must be tpu-api or compute (got "${asked}")`);
  const parsed = parseAcceleratorType(type);
  if (asked === 'tpu-api' && parsed && !parsed.family.tpuApi) {
    throw new UsageError(`the Cloud TPU API does not offer ${type} (${parsed.family.label} is managed through Compute Engine): drop --control-plane tpu-api, or use --control-plane compute`);
  }
  if (asked) return asked;
  return parsed && !parsed.family.tpuApi ? 'compute' : 'tpu-api';
}

/** Options only Compute Engine has; refused on the Cloud TPU API path so they are never silently ignored. */
const COMPUTE_ONLY = ['topology', 'image', 'flex-start', 'max-run-duration', 'reservation'] as const;

export function refuseComputeOnly(ctx: CommandContext): void {
  const given = COMPUTE_ONLY.filter((o) => ctx.values[o] !== undefined && ctx.values[o] !== false);
  if (given.length > 0) throw new UsageError(`--${given.join(', --')} apply to Compute Engine TPU VMs: add --control-plane compute`);
}

/** `tpw vm create NAME --type T` on Compute Engine: one VM, or a multi-host slice (a MIG) when the topology needs more. */
export async function createOnCompute(
  ctx: CommandContext,
  name: string,
  type: string,
  common: { spot: boolean; reserved: boolean; labels?: Record<string, string>; startupScript?: string; queued: boolean; slices: number },
  open: () => Promise<Backend>,
  progress: (what: string) => { onProgress: () => void; done: () => void },
): Promise<number> {
  if (common.queued) throw new UsageError('--queued is a Cloud TPU API queued resource; on Compute Engine use --flex-start --max-run-duration D (the VM is made when capacity is there)');
  if (ctx.values.version !== undefined) throw new UsageError('--version is a Cloud TPU API runtime version; on Compute Engine pick the boot image with --image');
  const shape = resolveSliceShape(type, ctx.values.topology as string | undefined);
  const provisioning = provisioningOf(ctx, common);
  const maxRun = ctx.values['max-run-duration'] as string | undefined;
  const req = (project: string, zone: string): CreateComputeSliceRequest => ({
    project, zone, name, acceleratorType: shape.acceleratorType, topology: shape.topology, provisioning,
    ...(ctx.values.image ? { image: ctx.values.image as string } : {}),
    ...(ctx.values.reservation ? { reservation: ctx.values.reservation as string } : {}),
    ...(maxRun ? { maxRunDurationSeconds: parseDuration(maxRun) } : {}),
    ...(common.labels ? { labels: common.labels } : {}),
    ...(common.startupScript !== undefined ? { metadata: { 'startup-script': common.startupScript } } : {}),
  });
  const n = common.slices;
  // A multislice group is n slices NAME-0 … (core/compute/slice-group.ts); each one's commands in turn.
  const plan = (r: CreateComputeSliceRequest): string[] => (n > 1 ? Array.from({ length: n }, (_, i) => gcloudComputeCommands(sliceRequest(r, n, i), shape)).flat() : gcloudComputeCommands(r, shape));
  if (ctx.values['dry-run'] && ctx.globals.project && ctx.globals.zone) {
    for (const line of plan(req(ctx.globals.project, ctx.globals.zone))) ctx.out(line);
    return 0;
  }
  const backend = await open();
  try {
    const project = ctx.globals.project ?? backend.project;
    const zone = ctx.globals.zone ?? backend.zones[0];
    const r = req(project, zone);
    if (ctx.values['dry-run']) {
      for (const line of plan(r)) ctx.out(line);
      return 0;
    }
    const p = progress(`create ${name}`);
    if (n > 1) {
      ctx.err(`Creating multislice group ${name} on Compute Engine: ${n} slices ${name}-0 … ${name}-${n - 1} (each ${describeShape(shape)}, ${provisioning}) in ${zone}…`);
      const slices = await createSliceGroup(backend.compute, r, n, { onProgress: p.onProgress });
      p.done();
      for (const slice of slices) ctx.out(`${slice.name} ${slice.state}: ${slice.workers.map((w) => `w${w.index}=${w.internalIp}`).join(' ')}`);
      ctx.out(`${name}: ${n} slices READY (${slices.map((s) => s.name).join(', ')}); tpw run --vm ${name} runs on every worker of every slice`);
      return 0;
    }
    ctx.err(`Creating ${name} on Compute Engine (${describeShape(shape)}, ${provisioning}) in ${zone}…`);
    const slice = await backend.compute.createSlice(r, { onProgress: p.onProgress });
    p.done();
    ctx.out(`${slice.name} ${slice.state}: ${slice.workers.map((w) => `w${w.index}=${w.internalIp}`).join(' ')}`);
    return 0;
  } finally {
    await backend.close();
  }
}

export function describeShape(s: TpuSliceShape): string {
  const vms = s.vmCount === 1 ? '1 VM' : `${s.vmCount} VMs`;
  return `${s.acceleratorType}, topology ${s.topology}, ${vms} of ${s.machineType}, ${s.chips} chips / ${s.devices} devices`;
}

function provisioningOf(ctx: CommandContext, common: { spot: boolean; reserved: boolean }): Provisioning {
  const flex = Boolean(ctx.values['flex-start']);
  const chosen = [common.spot && '--spot', common.reserved && '--reserved', flex && '--flex-start'].filter(Boolean);
  if (chosen.length > 1) throw new UsageError(`${chosen.join(' and ')} cannot be combined`);
  if (ctx.values['max-run-duration'] !== undefined && !flex) throw new UsageError('--max-run-duration applies to --flex-start');
  if (flex && ctx.values['max-run-duration'] === undefined) throw new UsageError('--flex-start needs --max-run-duration (e.g. 4h)');
  if (common.reserved && !ctx.values.reservation) throw new UsageError('--reserved on Compute Engine needs --reservation NAME');
  if (ctx.values.reservation && !common.reserved) throw new UsageError('--reservation applies to --reserved');
  return common.spot ? 'spot' : common.reserved ? 'reservation' : flex ? 'flex-start' : 'on-demand';
}

/** "90m", "4h", "1d", "3600s" or seconds → seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!m) throw new UsageError(`--max-run-duration "${text}": use a duration such as 90m, 4h or 1d`);
  const n = Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (n < 30 || n > 7 * 86400) throw new UsageError(`--max-run-duration "${text}": between 30 seconds and 7 days`);
  return n;
}
