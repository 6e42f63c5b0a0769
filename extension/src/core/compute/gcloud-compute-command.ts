import { TpwError } from '../errors';
import { shQuote } from '../ssh/quote';
import { parseNodeName, shortName, type TpuNode } from '../tpu/models';
import { familyInfo, type TpuSliceShape } from './tpu-machine-types';
import { ACCELERATOR_TYPE_LABEL, BOOT_DISK_GB, MARK, POLICY_SUFFIX, TEMPLATE_SUFFIX, TPU_IMAGE_PROJECT, type CreateComputeSliceRequest } from './provider';

/** Words joined for a shell; a `--flag=value` keeps its flag bare and quotes only the value (as gcloud's docs write it). */
function shJoin(words: readonly string[]): string {
  return words.map((w) => (/^--[a-z-]+=/.test(w) ? `${w.slice(0, w.indexOf('=') + 1)}${shQuote(w.slice(w.indexOf('=') + 1))}` : shQuote(w))).join(' ');
}

/**
 * The `gcloud compute …` commands equivalent to a Compute Engine slice create, for copy (`tpw vm create
 * --dry-run`, the wizard). One VM: `instances create`; a multi-host slice: the workload policy, the instance
 * template, then the MIG. Flags as gcloud's reference names them (resource-policies create workload-policy:
 * --type, --accelerator-topology, --region). Every value is shell-quoted. Run as printed, they make the resources
 * `tpw vm create` makes (provider.ts), field for field: its label, boot disk, provisioning model, no service
 * account, and the descriptions by which `tpw vm delete` knows the template and policy are its own
 * (test/emulator-clients/test_gcloud_compute.py runs them with the real gcloud and compares).
 */
export function gcloudComputeCommands(req: CreateComputeSliceRequest, shape: TpuSliceShape): string[] {
  const image = imageFlags(req, shape);
  const vmFlags = [...image, `--boot-disk-size=${BOOT_DISK_GB}GB`, ...schedulingFlags(req), ...labelFlags(req, shape), ...metadataFlags(req), '--no-service-account', '--no-scopes'];
  const description = `--description=${MARK} ${req.name}`;
  // gcloud 528 takes --provisioning-model=FLEX_START only on its preview tracks: alpha for VMs, beta for templates.
  const flex = req.provisioning === 'flex-start';
  if (shape.vmCount === 1) {
    return [shJoin(['gcloud', ...(flex ? ['alpha'] : []), 'compute', 'instances', 'create', req.name, `--project=${req.project}`, `--zone=${req.zone}`, `--machine-type=${shape.machineType}`, ...vmFlags])];
  }
  const region = req.zone.replace(/-[a-z]$/, '');
  const policy = `${req.name}${POLICY_SUFFIX}`;
  const template = `${req.name}${TEMPLATE_SUFFIX}`;
  return [
    shJoin(['gcloud', 'compute', 'resource-policies', 'create', 'workload-policy', policy, `--project=${req.project}`, `--region=${region}`, '--type=HIGH_THROUGHPUT', `--accelerator-topology=${shape.topology}`, description]),
    shJoin(['gcloud', ...(flex ? ['beta'] : []), 'compute', 'instance-templates', 'create', template, `--project=${req.project}`, `--machine-type=${shape.machineType}`, ...vmFlags, description]),
    shJoin([
      'gcloud', 'compute', 'instance-groups', 'managed', 'create', req.name, `--project=${req.project}`, `--zone=${req.zone}`,
      `--template=${template}`, `--size=${shape.vmCount}`, `--workload-policy=projects/${req.project}/regions/${region}/resourcePolicies/${policy}`,
    ]),
  ];
}

function imageFlags(req: CreateComputeSliceRequest, shape: TpuSliceShape): string[] {
  if (req.image) return [`--image=${req.image}`];
  return [`--image-family=${familyInfo(shape.family)?.defaultImage ?? ''}`, `--image-project=${TPU_IMAGE_PROJECT}`];
}

function schedulingFlags(req: CreateComputeSliceRequest): string[] {
  switch (req.provisioning) {
    case 'spot':
      return ['--provisioning-model=SPOT', '--instance-termination-action=STOP', '--maintenance-policy=TERMINATE', '--reservation-affinity=none'];
    case 'flex-start':
      return ['--provisioning-model=FLEX_START', `--max-run-duration=${req.maxRunDurationSeconds ?? 0}s`, '--instance-termination-action=DELETE', '--maintenance-policy=TERMINATE', '--no-restart-on-failure', '--reservation-affinity=none'];
    case 'reservation':
      return ['--reservation-affinity=specific', `--reservation=${req.reservation ?? ''}`, '--maintenance-policy=TERMINATE'];
    default:
      return ['--provisioning-model=STANDARD', '--maintenance-policy=TERMINATE'];
  }
}

function labelFlags(req: CreateComputeSliceRequest, shape: TpuSliceShape): string[] {
  const labels = Object.entries({ ...(req.labels ?? {}), [ACCELERATOR_TYPE_LABEL]: shape.acceleratorType });
  return [`--labels=${labels.map(([k, v]) => `${k}=${v}`).join(',')}`];
}

function metadataFlags(req: CreateComputeSliceRequest): string[] {
  const md = Object.entries(req.metadata ?? {});
  if (md.length === 0) return [];
  // A value with a comma needs gcloud's ^DELIM^ list syntax, with a delimiter no value contains.
  if (!md.some(([, v]) => v.includes(','))) return [`--metadata=${md.map(([k, v]) => `${k}=${v}`).join(',')}`];
  const delim = ['~', '|', '#', '@'].find((d) => md.every(([k, v]) => !k.includes(d) && !v.includes(d))) ?? '\u0001';
  return [`--metadata=^${delim}^${md.map(([k, v]) => `${k}=${v}`).join(delim)}`];
}

/**
 * `gcloud compute ssh` onto worker `index` of a Compute Engine slice: each worker is its own VM instance (a MIG
 * member for a multi-host slice), so the command names that instance, not the slice.
 */
export function gcloudComputeSshCommand(node: TpuNode, index: number): string {
  const id = parseNodeName(node.name);
  const instance = node.compute?.workers[index]?.instance ?? (node.compute?.kind === 'instance' && index === 0 ? id.node : undefined);
  if (!instance) throw new TpwError('NOT_FOUND', `Worker ${index} of TPU slice "${shortName(node.name)}" has no VM instance (the slice has ${node.networkEndpoints.length} workers).`);
  return shJoin(['gcloud', 'compute', 'ssh', instance, `--zone=${id.zone}`, `--project=${id.project}`]);
}
