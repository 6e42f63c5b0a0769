import type { CreateComputeSliceRequest, Provisioning } from '../compute/provider';
import { listSliceShapes, parseAcceleratorType, resolveSliceShape, type TpuSliceShape } from '../compute/tpu-machine-types';
import { TpwError } from '../errors';
import { parseDurationMs } from '../tpu/valid-until';
import type { Parsed } from './create-request';
import type { ProvisioningModel } from './node-status';

/**
 * The create wizard's Compute Engine side, without any UI: which control plane a type gets by default, the
 * slice shape a type and topology make (in words: VMs, chips, devices), Compute Engine's own choices (image,
 * spot / flex-start with a maximum run duration / reservation) checked as the user types, and the
 * CreateComputeSliceRequest they make (gcloud-compute-command.ts turns that into `gcloud compute …` lines).
 */

export type ControlPlane = 'compute' | 'tpu-api';

/** Compute Engine for every type the Cloud TPU API does not offer (TPU7x and later); the Cloud TPU API for the rest. */
export function defaultControlPlane(acceleratorType: string): ControlPlane {
  const parsed = parseAcceleratorType(acceleratorType);
  return parsed && !parsed.family.tpuApi ? 'compute' : 'tpu-api';
}

/** Whether the Cloud TPU API can make `acceleratorType` at all (false for TPU7x; true for types we do not know). */
export function tpuApiOffers(acceleratorType: string): boolean {
  return parseAcceleratorType(acceleratorType)?.family.tpuApi ?? true;
}

/** "2 VMs of tpu7x-standard-4t, 8 chips shown as 16 devices" (a TPU7x chip is two devices to the frameworks). */
export function describeSlice(shape: TpuSliceShape): string {
  const vms = shape.vmCount === 1 ? `1 VM of ${shape.machineType}` : `${shape.vmCount} VMs of ${shape.machineType}`;
  const chips = `${shape.chips} chip${shape.chips === 1 ? '' : 's'}`;
  return `${vms}, ${shape.devices === shape.chips ? chips : `${chips} shown as ${shape.devices} devices`}`;
}

/**
 * The accelerator types the type step offers: the Cloud TPU API's list for the zone, and the catalog's Compute
 * Engine slice shapes whose machine type the zone has. Sorted by family, then size; each once.
 */
export function wizardTypes(tpuApiTypes: readonly string[], zoneMachineTypes: readonly string[]): { type: string; shape?: TpuSliceShape; tpuApi: boolean }[] {
  const machines = new Set(zoneMachineTypes);
  const shapes = new Map(listSliceShapes().filter((s) => machines.has(s.machineType)).map((s) => [s.acceleratorType, s]));
  const api = new Set(tpuApiTypes);
  const all = [...new Set([...api, ...shapes.keys()])];
  const key = (t: string) => /^(.*?)-(\d+)$/.exec(t);
  all.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka && kb && ka[1] === kb[1] ? Number(ka[2]) - Number(kb[2]) : a.localeCompare(b);
  });
  return all.map((type) => ({ type, ...(shapes.has(type) ? { shape: shapes.get(type) } : {}), tpuApi: api.has(type) }));
}

/** The topology field: empty keeps the type's usual one; otherwise it must fit the type (the catalog's message). */
export function parseTopology(acceleratorType: string, text: string): Parsed<TpuSliceShape> {
  try {
    return { ok: true, value: resolveSliceShape(acceleratorType, text.trim() || undefined) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * The boot image field: empty is Google's TPU VM image family for the type; otherwise an image or image family
 * as Compute Engine names them (projects/P/global/images/[family/]NAME, or its https:// URL).
 */
export function parseImage(text: string): Parsed<string | undefined> {
  const t = text.trim();
  if (t === '') return { ok: true, value: undefined };
  if (/^(https:\/\/www\.googleapis\.com\/compute\/v1\/)?projects\/[a-z][-a-z0-9.:]*\/global\/images\/(family\/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(t)) return { ok: true, value: t };
  return { ok: false, error: 'Enter an image as projects/PROJECT/global/images/NAME or projects/PROJECT/global/images/family/FAMILY, or leave it empty for the TPU VM image.' };
}

/** Seconds a flex-start VM may run: a duration such as 4h, 90m or 1d12h, between 30 seconds and 7 days. */
export function parseMaxRunDuration(text: string): Parsed<number> {
  const ms = parseDurationMs(text.trim());
  if (ms === undefined) return { ok: false, error: `"${text.trim()}" is not a duration: write it as 4h, 90m or 1d12h.` };
  const s = ms / 1000;
  if (s < 30 || s > 7 * 86400) return { ok: false, error: `A flex-start VM runs between 30 seconds and 7 days; "${text.trim()}" is ${s < 30 ? 'shorter' : 'longer'}.` };
  return { ok: true, value: s };
}

/** A reservation in the VM's project and zone, by name (Compute Engine's resource name rules). */
export function parseReservation(text: string): Parsed<string> {
  const t = text.trim();
  if (/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(t)) return { ok: true, value: t };
  return { ok: false, error: t === '' ? 'Enter the name of the reservation to use.' : `"${t}" is not a reservation name: lowercase letters, digits and hyphens, starting with a letter.` };
}

export interface ComputeAnswers {
  name: string;
  zone: string;
  acceleratorType: string;
  topologyText: string;
  imageText: string;
  provisioning: Provisioning;
  maxRunText: string;
  reservationText: string;
  labels: Record<string, string>;
  startupScript?: string;
}

/** The Compute Engine create request for the answers; throws naming the field when one does not parse. */
export function createComputeRequest(project: string, a: ComputeAnswers): { request: CreateComputeSliceRequest; shape: TpuSliceShape } {
  const check = <T>(p: Parsed<T>): T => {
    if (!p.ok) throw new TpwError('INVALID_ARGUMENT', p.error);
    return p.value;
  };
  const shape = check(parseTopology(a.acceleratorType, a.topologyText));
  const image = check(parseImage(a.imageText));
  const request: CreateComputeSliceRequest = { project, zone: a.zone, name: a.name, acceleratorType: shape.acceleratorType, topology: shape.topology, provisioning: a.provisioning };
  if (image) request.image = image;
  if (a.provisioning === 'flex-start') request.maxRunDurationSeconds = check(parseMaxRunDuration(a.maxRunText));
  if (a.provisioning === 'reservation') request.reservation = check(parseReservation(a.reservationText));
  if (Object.keys(a.labels).length > 0) request.labels = { ...a.labels };
  if (a.startupScript !== undefined) request.metadata = { 'startup-script': a.startupScript };
  return { request, shape };
}

/** The create wizard's steps, in order; which of them are asked depends on the answers (createStepApplies). */
export const CREATE_STEPS = [
  'name', 'zone', 'type', 'plane', 'topology', 'runtime', 'image', 'provisioning', 'maxRun', 'reservation', 'validUntil', 'startupScript', 'labels', 'dataDisk', 'review',
] as const;
export type CreateStepId = (typeof CREATE_STEPS)[number];

/** What the provisioning step offers: the VM's pricing model, Compute Engine's, or a queued resource in one of its tiers. */
export type ProvisioningChoice = ProvisioningModel | Exclude<Provisioning, 'on-demand' | 'spot'> | 'queued-guaranteed' | 'queued-spot';

/** Steps one control plane has and the other has not. */
const COMPUTE_ONLY: ReadonlySet<CreateStepId> = new Set<CreateStepId>(['topology', 'image', 'maxRun', 'reservation']);
const TPU_API_ONLY: ReadonlySet<CreateStepId> = new Set<CreateStepId>(['runtime', 'validUntil', 'dataDisk']);

/**
 * Answers with a good default that most creates keep: not steps of their own but rows of the review step, each
 * opened from there when it is to change (the boot image, a startup script, labels, a data disk), so the usual
 * create is name, type, provisioning and review.
 */
export const REVIEW_ROWS: ReadonlySet<CreateStepId> = new Set<CreateStepId>(['image', 'startupScript', 'labels', 'dataDisk']);

/** What decides which steps are asked: the answers so far. */
export interface StepAnswers {
  plane?: ControlPlane;
  choice?: ProvisioningChoice;
  /** How many control planes offer the chosen type in the zone: one is chosen without asking. */
  planeChoices?: number;
}

/** Whether step `id` is one the review step offers to change, given the answers (it applies to this plane). */
export function reviewRowApplies(id: CreateStepId, s: StepAnswers): boolean {
  const plane = s.plane ?? 'tpu-api';
  if (!REVIEW_ROWS.has(id)) return false;
  if (COMPUTE_ONLY.has(id) && plane !== 'compute') return false;
  return !(TPU_API_ONLY.has(id) && plane !== 'tpu-api');
}

/**
 * Whether the wizard asks step `id` on its way to the review, given the answers so far and how many zones there
 * are to choose from: a step with one possible answer is not asked (one zone, one control plane for the type).
 */
export function createStepApplies(id: CreateStepId, s: StepAnswers, zoneCount: number): boolean {
  if (id === 'zone') return zoneCount > 1;
  if (REVIEW_ROWS.has(id)) return false;
  if (id === 'plane') return (s.planeChoices ?? 2) > 1;
  const plane = s.plane ?? 'tpu-api';
  if (COMPUTE_ONLY.has(id) && plane !== 'compute') return false;
  if (TPU_API_ONLY.has(id) && plane !== 'tpu-api') return false;
  if (id === 'maxRun') return s.choice === 'flex-start';
  if (id === 'reservation') return s.choice === 'reservation';
  if (id === 'validUntil') return s.choice === 'queued-guaranteed' || s.choice === 'queued-spot';
  return true;
}
