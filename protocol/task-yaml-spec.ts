/**
 * A SkyPilot task YAML (https://docs.skypilot.co/en/latest/reference/yaml-spec.html) as tpw runs it on a
 * Cloud TPU VM: the fields that apply to TPUs, already checked (parse-task-yaml.ts). Field names and meanings
 * are SkyPilot's; what each one becomes here is said next to it.
 */

/** A `file_mounts` entry: a local file or folder copied to every host, or a bucket copied on every host. */
export type FileMount =
  | { dest: string; kind: 'local'; source: string }
  /** gs:// only: a TPU VM has `gcloud storage` / `gsutil` and the VM's service account. */
  | { dest: string; kind: 'bucket'; source: string };

/**
 * Most slices `num_nodes` may ask for (as `tpw vm create --slices`).
 *
 * What SkyPilot 0.14.1 itself does with TPU VMs and num_nodes (its source, not its docs): it refuses num_nodes > 1
 * only for the legacy TPU Node architecture (sky/clouds/gcp.py `_unsupported_features_for_resources`: MULTI_NODE
 * when `is_tpu` and not `is_tpu_vm`); for TPU VMs, pods included, it provisions num_nodes separate TPU VMs of the
 * type and runs the task on `num_nodes * num_ips_per_node` ranks, one per host of every VM in the cluster's IP
 * order (sky/backends/cloud_vm_ray_backend.py `_execute_task_n_nodes`). So a SkyPilot "node" of a TPU pod is the
 * whole pod, and SKYPILOT_NODE_RANK counts hosts. tpw makes those N pods one multislice group (a queued resource
 * with a node count on the Cloud TPU API, N labelled slices on Compute Engine), numbers the hosts the same way
 * (slice s, host w has rank s * hostsPerSlice + w) and adds the multislice variables, which SkyPilot does not set.
 */
export const MAX_NUM_NODES = 64;

export interface TaskSpec {
  name?: string;
  /** The Cloud TPU accelerator type, e.g. "v6e-8" (SkyPilot writes "tpu-v6e-8"). */
  acceleratorType: string;
  /** `resources.accelerator_args.runtime_version`; absent: the runtime recommended for the type. */
  runtimeVersion?: string;
  /** `resources.use_spot`. */
  spot: boolean;
  /** `resources.zone` (or the zone part of `resources.infra`). */
  zone?: string;
  /** `resources.region` (or the region part of `resources.infra`): the VM goes to a zone of it. */
  region?: string;
  /** `resources.labels`, set on the VM. */
  labels: Record<string, string>;
  /** `num_nodes`: slices of `acceleratorType` (1: one VM; more: a multislice group, see MAX_NUM_NODES). */
  numNodes: number;
  /** Local folder synced to `~/sky_workdir` on every host; setup and run start there. Relative to the YAML's folder. */
  workdir?: string;
  fileMounts: FileMount[];
  setup?: string;
  run?: string;
  /** `envs`, with values as strings (SkyPilot turns numbers and booleans into strings); null: must come from --env. */
  envs: Record<string, string | null>;
  /** `secrets` (dict form): a value given inline, or null: must come from --secret. */
  secrets: Record<string, string | null>;
}

/** Why a task YAML cannot run: invalid (SkyPilot refuses it too) or unsupported (valid, but not something tpw does). */
export interface TaskProblem {
  kind: 'invalid' | 'unsupported';
  /** Where, as a dotted path: `resources.accelerators`, `envs.1BAD`, `` (the whole file). */
  field: string;
  message: string;
}

/** The SkyPilot home folder of `workdir` on every host; setup and run start there (as `sky launch` does). */
export const REMOTE_WORKDIR = '~/sky_workdir';

/**
 * SkyPilot's top-level fields (sky.utils.schemas.get_task_schema, skypilot 0.14.1): the supported ones with
 * what they do, the others with why tpw refuses them. Anything not listed is invalid for SkyPilot too.
 */
export const TASK_FIELDS: Readonly<Record<string, { doc: string; unsupported?: string }>> = {
  name: { doc: 'Name of the task; also the VM name when `-c` is not given.' },
  resources: { doc: 'What to run on: `accelerators` (a TPU type such as tpu-v6e-8), `accelerator_args`, `use_spot`, `zone`/`region`, `labels`.' },
  num_nodes: {
    doc: 'Number of TPU slices of the accelerator type. 1: one VM, every host runs the task. N > 1: a multislice group of N slices (NAME-0 … NAME-<N-1>); every host of every slice runs the task, with ranks slice-major and the MEGASCALE_* variables set.',
  },
  workdir: { doc: 'Local folder synced to ~/sky_workdir on every host before setup and run (which start there).' },
  file_mounts: { doc: 'Remote path → local path (copied to every host) or gs:// bucket path (copied on every host with gcloud storage or gsutil).' },
  setup: { doc: 'Commands run once per VM, on every host, before run; skipped when neither they nor their inputs changed.' },
  run: { doc: 'Commands run on every host, with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_NODES and the TPU variables set.' },
  envs: { doc: 'Environment variables for setup and run; `--env K=V` overrides one, `--env K` takes it from your environment.' },
  secrets: { doc: 'Like envs, but the values are never shown, logged or recorded: only written to a 0600 file on each host. `--secret K` takes it from your environment.' },
  event_callback: { doc: '', unsupported: 'tpw runs no callback on task events.' },
  managed_secrets: { doc: '', unsupported: 'there is no managed secrets provider in tpw: list the secrets under `secrets:` and pass them with --secret.' },
  inputs: { doc: '', unsupported: 'it only serves SkyPilot\'s optimizer, which tpw does not have.' },
  outputs: { doc: '', unsupported: 'it only serves SkyPilot\'s optimizer, which tpw does not have.' },
  file_mounts_mapping: { doc: '', unsupported: 'it is internal to SkyPilot.' },
  volumes: { doc: '', unsupported: 'tpw attaches no SkyPilot volumes; attach a data disk with `tpw vm create --data-disk`.' },
  volume_mounts: { doc: '', unsupported: 'tpw attaches no SkyPilot volumes; attach a data disk with `tpw vm create --data-disk`.' },
  api_server_access: { doc: '', unsupported: 'there is no SkyPilot API server behind tpw.' },
  service: { doc: '', unsupported: 'SkyServe services are not something tpw runs.' },
  pool: { doc: '', unsupported: 'SkyPilot pools are not something tpw runs.' },
  config: { doc: '', unsupported: 'SkyPilot\'s per-task config overrides do not apply to tpw.' },
  _metadata: { doc: '' },
};

/** SkyPilot's `resources` fields (sky.utils.schemas.get_resources_schema): supported ones documented, the rest refused with why. */
export const RESOURCE_FIELDS: Readonly<Record<string, { doc: string; unsupported?: string }>> = {
  accelerators: { doc: 'The TPU: tpu-<type> as Cloud TPU names it (tpu-v6e-8, tpu-v5litepod-16, tpu-v4-8, tpu-v5p-8, tpu-tpu7x-8); one per task.' },
  accelerator_args: { doc: '`runtime_version` (the TPU VM software; default: the one recommended for the type) and `tpu_vm` (must be true).' },
  use_spot: { doc: 'A spot VM: cheaper, may be preempted.' },
  zone: { doc: 'Zone to create the VM in (e.g. us-east5-b).' },
  region: { doc: 'Region to create the VM in: its first zone the backend offers.' },
  infra: { doc: 'gcp, gcp/REGION or gcp/REGION/ZONE.' },
  cloud: { doc: 'gcp (the only cloud with TPUs tpw runs on).' },
  labels: { doc: 'Labels set on the TPU VM.' },
  disk_size: { doc: '', unsupported: 'a TPU VM\'s boot disk has a fixed size: the Cloud TPU API has no field for it (attach a data disk with `tpw vm create --data-disk`).' },
  image_id: { doc: '', unsupported: 'a TPU VM boots a TPU software version, not an image: set resources.accelerator_args.runtime_version instead.' },
  cpus: { doc: '', unsupported: 'a TPU VM\'s CPUs come with its accelerator type; there is nothing to choose.' },
  memory: { doc: '', unsupported: 'a TPU VM\'s memory comes with its accelerator type; there is nothing to choose.' },
  instance_type: { doc: '', unsupported: 'a TPU VM has no instance type: its accelerator type decides the host.' },
  ports: { doc: '', unsupported: 'tpw opens no firewall ports; use an SSH tunnel (`tpw` terminals forward ports).' },
  job_recovery: { doc: '', unsupported: 'managed-job recovery is SkyPilot\'s; tpw resumes a preempted run with `tpw resume`.' },
  autostop: { doc: '', unsupported: 'tpw does not stop VMs on its own: `tpw down NAME` when done.' },
  any_of: { doc: '', unsupported: 'tpw does not choose among several resources: name one TPU type.' },
  ordered: { doc: '', unsupported: 'tpw does not choose among several resources: name one TPU type.' },
  volumes: { doc: '', unsupported: 'tpw attaches no SkyPilot volumes; attach a data disk with `tpw vm create --data-disk`.' },
  ephemeral_storage: { doc: '', unsupported: 'it applies to Kubernetes pods, not TPU VMs.' },
  disk_tier: { doc: '', unsupported: 'a TPU VM\'s boot disk tier is fixed by Cloud TPU.' },
  network_tier: { doc: '', unsupported: 'a TPU VM\'s network tier is fixed by Cloud TPU.' },
  local_disk: { doc: '', unsupported: 'TPU VMs have no local SSD option.' },
  max_hourly_cost: { doc: '', unsupported: 'tpw does not choose resources by price: `tpw vm cost TYPE` shows it.' },
  priority: { doc: '', unsupported: 'job priorities are SkyPilot\'s scheduler\'s.' },
  priority_class: { doc: '', unsupported: 'it applies to Kubernetes pods, not TPU VMs.' },
  _no_missing_accel_warnings: { doc: '' },
  _docker_login_config: { doc: '', unsupported: 'it is internal to SkyPilot.' },
  _is_image_managed: { doc: '', unsupported: 'it is internal to SkyPilot.' },
  _requires_fuse: { doc: '', unsupported: 'it is internal to SkyPilot.' },
  _cluster_config_overrides: { doc: '', unsupported: 'it is internal to SkyPilot.' },
};

/** `resources.cloud` names SkyPilot's schema allows (case-insensitive). */
export const SKYPILOT_CLOUDS = [
  'aws', 'azure', 'gcp', 'ibm', 'lambda', 'scp', 'oci', 'kubernetes', 'runpod', 'vast', 'vsphere', 'cudo', 'fluidstack', 'paperspace',
  'primeintellect', 'do', 'nebius', 'ssh', 'slurm', 'hyperbolic', 'seeweb', 'shadeform', 'yotta', 'mithril', 'verda',
] as const;

/**
 * TPU families Cloud TPU offers TPU VMs of, as the type's prefix (v5litepod-16 → v5litepod). SkyPilot names a
 * TPU `tpu-` + the Cloud TPU type (sky/clouds/gcp.py strips `tpu-`), so TPU7x's tpu7x-8 is tpu-tpu7x-8.
 */
export const TPU_FAMILIES = ['v2', 'v3', 'v4', 'v5litepod', 'v5p', 'v6e', 'tpu7x'] as const;
