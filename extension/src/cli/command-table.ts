/**
 * Every `tpw` command as data: its name, summary, usage, its own options (typed, described), the global options
 * it reads, its subcommands, and its handler. The parser refuses what a command does not declare and the help
 * is printed from here, so the two cannot drift apart.
 */
import type { CommandContext } from './context';
import { emulatorRunForeground, emulatorStart, emulatorStatusCommand, emulatorStop } from './emulator-commands';
import { flagsExplain, flagsLint } from './flags-commands';
import { gkeClusters, gkeCreateNodePool, gkeNodePools, gkeQueues, gkeUse, gkeWorkloads } from './gke-commands';
import { profileCommand } from './profile-command';
import { profileRunCommand } from './profile-run';
import { forwardCommand } from './forward-command';
import { qrDelete, qrList } from './qr-commands';
import { runCommand } from './run-command';
import { downCommand, execCommand, launchCommand } from './task-commands';
import { logsCommand, resumeCommand, runsCommand, stopCommand } from './runs-commands';
import { topCommand } from './top-command';
import { vmAddKey, vmCost, vmCreate, vmLifecycle, vmList, vmTypes, vmZones } from './vm-commands';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** May be given more than once (the value is then a list). */
  multiple?: boolean;
  /** The value's placeholder in the help (`--type TYPE`); string options only. */
  arg?: string;
  description: string;
}

export interface CommandSpec {
  name: string;
  /** One line, for the list of commands. */
  summary: string;
  /** What follows `tpw <path>` in the usage line, e.g. `NAME --type TYPE [options]`. */
  usage?: string;
  /** More help text, printed under the summary. */
  details?: readonly string[];
  options?: Readonly<Record<string, OptionSpec>>;
  /** The global options this command reads; any other is refused. */
  globals?: readonly GlobalOptionName[];
  /** What may follow a literal `--`, passed on untouched; absent: nothing may. */
  passthrough?: string;
  subcommands?: readonly CommandSpec[];
  run?: (ctx: CommandContext) => Promise<number> | number;
  /** Spawned by tpw itself: resolvable, not listed. */
  hidden?: boolean;
}

export const GLOBAL_OPTIONS = {
  project: { type: 'string', arg: 'P', description: 'Google Cloud project P (default: $TPW_PROJECT; neither: the local emulator)' },
  zone: { type: 'string', arg: 'Z', description: 'Zone (default: every zone of the backend, or $TPW_ZONES, comma-separated)' },
  emulator: { type: 'boolean', description: 'Use the local emulator even if a project is set' },
  'accept-new-host-keys': {
    type: 'boolean',
    description: 'Record the SSH host key of a worker seen for the first time (default: refuse, printing its fingerprint); a changed key is always refused',
  },
} as const satisfies Record<string, OptionSpec>;

export type GlobalOptionName = keyof typeof GLOBAL_OPTIONS;

/** Accepted by every command (and by `tpw` itself). */
export const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'Show this help' };
/** `tpw --version` only: `vm create` has a --version of its own. */
export const VERSION_OPTION: OptionSpec = { type: 'boolean', description: 'Show the version' };

const BACKEND: readonly GlobalOptionName[] = ['project', 'zone', 'emulator'];
const BACKEND_SSH: readonly GlobalOptionName[] = [...BACKEND, 'accept-new-host-keys'];
const JSON_OPTION: OptionSpec = { type: 'boolean', description: 'Print JSON instead of a table' };
const RUN_ARG = 'RUN is a run id from `tpw runs`, or a prefix that names one run.';
/** What the stop program (core/run/remote-script.ts) sends; the CLI uses its default 5 s grace period. */
const stopSignals = (whose: string): string => `SIGINT to ${whose} process group on every worker, then SIGTERM halfway through a 5 s grace period, then SIGKILL at its end`;

const VM: CommandSpec = {
  name: 'vm',
  summary: 'TPU VMs: list, create, delete, start, stop; types, zones and prices',
  subcommands: [
    { name: 'list', summary: 'List TPU VMs (every zone of the backend by default)', options: { json: JSON_OPTION }, globals: BACKEND, run: vmList },
    {
      name: 'create',
      usage: 'NAME --type TYPE [options]',
      summary: 'Create a TPU VM and wait until it is READY',
      details: [
        '--queued creates a queued resource instead (the VM is created once capacity is there; see `tpw qr list`); --dry-run prints the equivalent gcloud command and creates nothing.',
        'A quota or capacity failure names the zones that offer TYPE.',
        'Types the Cloud TPU API does not offer (TPU7x) are made on Compute Engine: one VM, or a multi-host slice (a managed instance group with a workload policy) when the topology needs several VMs (tpu7x-16: 2 VMs).',
      ],
      options: {
        type: { type: 'string', arg: 'TYPE', description: 'Accelerator type, e.g. v5litepod-16 (`tpw vm types` lists them)' },
        version: { type: 'string', arg: 'V', description: "Runtime version (default: the zone's first)" },
        zone: { type: 'string', arg: 'Z', description: 'Zone to create it in (default: the first zone of the backend)' },
        spot: { type: 'boolean', description: 'A spot VM (may be preempted)' },
        reserved: { type: 'boolean', description: 'Use reserved capacity' },
        'startup-script': { type: 'string', arg: 'FILE', description: 'Run FILE on every worker at boot' },
        label: { type: 'string', arg: 'K=V', multiple: true, description: 'A label (repeatable)' },
        'data-disk': { type: 'string', arg: 'SOURCE[,mode=read-only]', multiple: true, description: 'Attach a disk projects/P/zones/Z/disks/D (repeatable)' },
        description: { type: 'string', arg: 'D', description: 'Description of the VM' },
        queued: { type: 'boolean', description: 'Create it as a queued resource' },
        slices: { type: 'string', arg: 'N', description: 'Multislice: N slices of TYPE (NAME-0 … NAME-<N-1>), in one queued resource (Cloud TPU API) or as N labelled slices (Compute Engine); a run on NAME goes to all of them' },
        tier: { type: 'string', arg: 'spot|guaranteed', description: 'Tier of the queued resource (default: guaranteed; spot with --spot)' },
        'valid-until': { type: 'string', arg: '6h|TIME', description: 'Give up on the queued resource after a duration or at an RFC 3339 time' },
        'dry-run': { type: 'boolean', description: 'Print the gcloud command only' },
        'control-plane': { type: 'string', arg: 'tpu-api|compute', description: 'Who makes the VM (default: compute for types the Cloud TPU API does not offer, e.g. tpu7x-8; tpu-api otherwise)' },
        topology: { type: 'string', arg: 'AxBxC', description: 'Compute Engine: chip topology (default: the type\'s usual one; e.g. tpu7x-16 is 2x2x2, 2 VMs)' },
        image: { type: 'string', arg: 'IMAGE', description: 'Compute Engine: boot image (default: the TPU VM image family)' },
        'flex-start': { type: 'boolean', description: 'Compute Engine: a flex-start VM, made when capacity is there (needs --max-run-duration)' },
        'max-run-duration': { type: 'string', arg: '4h', description: 'Compute Engine flex-start: how long the VMs may run' },
        reservation: { type: 'string', arg: 'NAME', description: 'Compute Engine with --reserved: the reservation to use' },
      },
      globals: ['project', 'emulator'],
      run: vmCreate,
    },
    { name: 'delete', usage: 'NAME', summary: 'Delete a TPU VM', globals: BACKEND, run: vmLifecycle('delete') },
    { name: 'start', usage: 'NAME', summary: 'Start a stopped TPU VM and wait until it is READY', globals: BACKEND, run: vmLifecycle('start') },
    { name: 'stop', usage: 'NAME', summary: 'Stop a TPU VM', globals: BACKEND, run: vmLifecycle('stop') },
    {
      name: 'add-key',
      usage: 'NAME',
      summary: "Put TPU Workbench's ed25519 key (<TPW_HOME>/id_ed25519) into the VM's metadata ssh-keys",
      globals: BACKEND,
      run: vmAddKey,
    },
    { name: 'types', summary: 'Accelerator types and runtime versions of --zone (default: the first zone)', globals: BACKEND, run: vmTypes },
    {
      name: 'zones',
      usage: '[--type TYPE]',
      summary: 'Zones of the project (that offer TYPE)',
      options: { type: { type: 'string', arg: 'TYPE', description: 'Only the zones that offer this accelerator type' }, json: JSON_OPTION },
      globals: ['project', 'emulator'],
      run: vmZones,
    },
    {
      name: 'cost',
      usage: 'TYPE [--zone Z] [--spot | --reserved]',
      summary: 'Hourly list price (every priced region without --zone)',
      options: {
        zone: { type: 'string', arg: 'Z', description: "The price in this zone's region" },
        spot: { type: 'boolean', description: 'The spot price only' },
        reserved: { type: 'boolean', description: 'The reserved price only' },
      },
      run: vmCost,
    },
  ],
};

const QR: CommandSpec = {
  name: 'qr',
  summary: 'Queued resources: list, delete',
  subcommands: [
    { name: 'list', summary: 'Queued resources and their state', options: { json: JSON_OPTION }, globals: BACKEND, run: qrList },
    {
      name: 'delete',
      usage: 'NAME [--force]',
      summary: 'Delete a queued resource',
      options: { force: { type: 'boolean', description: 'Delete its VM too' } },
      globals: BACKEND,
      run: qrDelete,
    },
  ],
};

const EMULATOR: CommandSpec = {
  name: 'emulator',
  summary: 'The local Cloud TPU emulator (REST API + SSH workers on loopback)',
  subcommands: [
    {
      name: 'start',
      usage: '[--foreground] [--restore-previous | --reset-state]',
      summary: 'Start the emulator in the background',
      details: [
        'An unreadable or inconsistent state file stops the start, naming the file: --restore-previous starts from its previous generation, --reset-state starts empty. Either keeps the refused file beside it, and no worker sandbox is deleted.',
      ],
      options: {
        foreground: { type: 'boolean', description: 'Run it in this process until Ctrl-C' },
        'restore-previous': { type: 'boolean', description: "Start from the state file's previous generation (the refused file is kept aside)" },
        'reset-state': { type: 'boolean', description: 'Start with no VMs (the refused file is kept aside; sandboxes of unknown VMs move to workers-orphaned/)' },
      },
      run: emulatorStart,
    },
    { name: 'stop', summary: 'Stop the background emulator', run: emulatorStop },
    { name: 'status', summary: 'Whether it runs, where, and how many VMs it has (exit 1: not running)', run: emulatorStatusCommand },
    { name: 'run-foreground', summary: 'The emulator process that `start` spawns', run: emulatorRunForeground, hidden: true },
  ],
};

const CLUSTER_OPTION: OptionSpec = { type: 'string', arg: 'C', description: 'The GKE cluster (default: the one `tpw gke use` remembered for this folder)' };

const GKE: CommandSpec = {
  name: 'gke',
  summary: 'GKE: remember a cluster (as `tp use`), list clusters, TPU node pools, Kueue queues and workloads',
  subcommands: [
    {
      name: 'use',
      usage: '--cluster C --project P --zone Z --tpu-type T [--num-slices N] [--artifact-dir gs://…] [--image I]',
      summary: "Remember a cluster for this folder, as torchprime's `tp use`: `tpw run` here then runs on it",
      details: [
        'The cluster must exist in P at Z and have a TPU node pool of type T. With --emulator, the local emulator\'s cluster (P is its project).',
        'Remembered under <TPW_HOME>/gke/use/ for the current folder; run it again to change it.',
      ],
      options: {
        cluster: { type: 'string', arg: 'C', description: 'The GKE cluster' },
        'tpu-type': { type: 'string', arg: 'T', description: 'TPU type of each slice, e.g. v6e-256 or v5litepod-16' },
        'num-slices': { type: 'string', arg: 'N', description: 'Slices per run (default 1)' },
        'artifact-dir': { type: 'string', arg: 'gs://…', description: 'Where each pod copies its output and profiles at its end (<dir>/<workload>/…)' },
        image: { type: 'string', arg: 'IMAGE', description: "The pods' image (default: torch_xla's TPU image, as torchprime uses)" },
        namespace: { type: 'string', arg: 'NS', description: 'Namespace of the workloads (default: default)' },
      },
      globals: ['project', 'zone', 'emulator'],
      run: gkeUse,
    },
    { name: 'clusters', summary: 'GKE clusters of the project (every location; --zone for one), * marks the remembered one', options: { json: JSON_OPTION }, globals: BACKEND, run: gkeClusters },
    {
      name: 'nodepools',
      usage: '[--cluster C]',
      summary: 'Node pools of a cluster: TPU type, topology, nodes ready, status, spot or reservation',
      options: { cluster: CLUSTER_OPTION, json: JSON_OPTION },
      globals: BACKEND,
      run: gkeNodePools,
    },
    {
      name: 'create-nodepool',
      usage: 'NAME --tpu-type T [--cluster C] [--spot | --reservation R]',
      summary: 'Create a TPU node pool of one slice of type T, on spot capacity or out of a specific reservation',
      details: ['As `gcloud container node-pools create NAME --machine-type M --tpu-topology T --num-nodes N [--spot | --reservation-affinity=specific --reservation=R]`; waits until GKE has made it.'],
      options: {
        cluster: CLUSTER_OPTION,
        'tpu-type': { type: 'string', arg: 'T', description: 'TPU type of the slice, e.g. v5litepod-16 (default: the remembered one)' },
        spot: { type: 'boolean', description: 'Spot capacity (can be preempted)' },
        reservation: { type: 'string', arg: 'R', description: 'Consume the specific Compute Engine reservation R' },
      },
      globals: BACKEND,
      run: gkeCreateNodePool,
    },
    {
      name: 'queues',
      usage: '[--cluster C]',
      summary: 'Kueue ClusterQueues (quota used/nominal, admitted, pending) and LocalQueues of a cluster',
      options: { cluster: CLUSTER_OPTION, json: JSON_OPTION },
      globals: BACKEND,
      run: gkeQueues,
    },
    {
      name: 'workloads',
      usage: '[--cluster C] [--limit N] [--all]',
      summary: 'JobSet workloads of a cluster: queued (and why), admitted, running, finished',
      details: ['A page of --limit (default 100) at a time, as the API server pages them; --all reads every page.'],
      options: {
        cluster: CLUSTER_OPTION,
        namespace: { type: 'string', arg: 'NS', description: 'Namespace (default: the remembered one, else default)' },
        limit: { type: 'string', arg: 'N', description: 'Workloads per page (default 100)' },
        all: { type: 'boolean', description: 'Every page' },
        json: JSON_OPTION,
      },
      globals: BACKEND,
      run: gkeWorkloads,
    },
  ],
};

const FLAGS: CommandSpec = {
  name: 'flags',
  summary: 'LIBTPU_INIT_ARGS / XLA_FLAGS: lint files, explain flags',
  subcommands: [
    {
      name: 'lint',
      usage: 'FILE... [--json]',
      summary: 'Check LIBTPU_INIT_ARGS / XLA_FLAGS strings in files',
      details: ['Exit 1 on errors; unknown flags (perhaps private libtpu flags) are warnings.'],
      options: { json: JSON_OPTION },
      passthrough: 'more FILEs (names that start with -)',
      run: flagsLint,
    },
    {
      name: 'explain',
      usage: 'NAME... [--json]',
      summary: 'What a flag does: type, values, default, source',
      details: ['Write -- before a name given with its dashes: tpw flags explain -- --xla_tpu_scoped_vmem_limit_kib'],
      options: { json: { type: 'boolean', description: 'Print the catalog entries as JSON' } },
      passthrough: 'flag NAMEs written with their dashes',
      run: flagsExplain,
    },
  ],
};

export const COMMANDS: readonly CommandSpec[] = [
  VM,
  QR,
  GKE,
  {
    name: 'run',
    usage: 'RECIPE --vm NAME [options] [-- OVERRIDE...] | RECIPE|SCRIPT.py [--cluster C] [options] [-- OVERRIDE...]',
    summary: 'Sync the current folder to every worker and run the recipe on all of them (TPU VMs, or a JobSet on GKE)',
    details: [
      `Ctrl-C stops the run on every worker (${stopSignals('its')}); a second Ctrl-C exits at once.`,
      'Hydra overrides go after --, and reach the recipe\'s command literally (even ones that start with -).',
      'GKE: with --cluster, or in a folder `tpw gke use` set up, the recipe (or a Python script, run as `tp run` runs it) goes to the cluster as a JobSet the way xpk makes one: a pod per TPU VM of each slice, queued by Kueue; the folder reaches the pods in ConfigMaps, HF_TOKEN and WANDB_API_KEY in a Secret. Ctrl-C deletes the workload. --dry-run prints the manifests.',
    ],
    options: {
      vm: { type: 'string', arg: 'NAME', description: 'The TPU VM to run on (`tpw vm list`)' },
      'no-fail-fast': { type: 'boolean', description: 'Let the other workers go on when one fails (default: stop them all; VMs only)' },
      detach: { type: 'boolean', description: 'Return once the run started on every worker (GKE: once submitted), printing its id' },
      cluster: { type: 'string', arg: 'C', description: 'GKE: the cluster to run on (default: the one `tpw gke use` remembered)' },
      'tpu-type': { type: 'string', arg: 'T', description: 'GKE: TPU type of each slice (default: remembered)' },
      'num-slices': { type: 'string', arg: 'N', description: 'GKE: slices (default: remembered, else 1)' },
      image: { type: 'string', arg: 'IMAGE', description: "GKE: the pods' image (default: remembered, else torch_xla's TPU image)" },
      name: { type: 'string', arg: 'W', description: 'GKE: the workload (JobSet) name (default: tpw-<run id>)' },
      priority: { type: 'string', arg: 'P', description: 'GKE: very-low, low, medium (default), high, very-high' },
      'max-restarts': { type: 'string', arg: 'N', description: 'GKE: JobSet restarts allowed (default 0, as xpk)' },
      'artifact-dir': { type: 'string', arg: 'gs://…', description: 'GKE: where pods copy output and profiles (default: remembered)' },
      namespace: { type: 'string', arg: 'NS', description: 'GKE: namespace (default: remembered, else default)' },
      'dry-run': { type: 'boolean', description: 'GKE: print the manifests (JobSet, Secret keys, ConfigMap sizes) and submit nothing' },
    },
    globals: BACKEND_SSH,
    passthrough: "hydra OVERRIDEs, appended to the recipe's command",
    run: runCommand,
  },
  { name: 'runs', summary: 'Runs started from this machine, newest first', options: { json: JSON_OPTION }, run: runsCommand },
  {
    name: 'logs',
    usage: 'RUN [--follow]',
    summary: "Every worker's log, each line prefixed [wN]",
    details: [RUN_ARG],
    options: { follow: { type: 'boolean', short: 'f', description: 'Follow until the run ends (Ctrl-C stops following, not the run)' } },
    globals: BACKEND_SSH,
    run: logsCommand,
  },
  {
    name: 'top',
    usage: 'RUN [--once | --json] [--interval SECONDS]',
    summary: "Every worker's TPU chips (duty cycle, HBM, queue) from libtpu, refreshed",
    details: [
      "Reads libtpu's runtime metrics service (localhost:8431 on each worker, as tpu-info does) through the run's SSH connections, with tpu-info's metric names and units.",
      'A worker that cannot be read is named with why (not answering over SSH, no program with libtpu loaded, a timeout, a bad reply). Exit 1 with --once when no worker could be read.',
      RUN_ARG,
    ],
    options: {
      once: { type: 'boolean', description: 'Print one table and exit' },
      json: { type: 'boolean', description: 'Print one reading of every worker as JSON and exit' },
      interval: { type: 'string', arg: 'SECONDS', description: 'Time between refreshes (default 2)' },
    },
    globals: BACKEND_SSH,
    run: topCommand,
  },
  { name: 'stop', usage: 'RUN', summary: 'Stop a run on every worker', details: [`Sends ${stopSignals("the run's")}.`, RUN_ARG], globals: BACKEND_SSH, run: stopCommand },
  {
    name: 'resume',
    usage: 'RUN',
    summary: 'Recreate a preempted VM and rerun the recipe with resume=auto',
    details: ['The VM is recreated with the same spec; the recipe runs again with the same overrides, from the same folder.', RUN_ARG],
    globals: BACKEND_SSH,
    run: resumeCommand,
  },
  {
    name: 'forward',
    usage: 'VM[:WORKER] REMOTE[:LOCAL]...',
    summary: "Forward ports of a worker (default worker 0) to this machine's loopback until Ctrl-C",
    details: [
      'Over the SSH connection to the worker: nothing is opened on the VM. E.g. `tpw forward my-vm 6006` for TensorBoard.',
      'Without LOCAL, the same port number if free (any free port on the emulator, whose workers share this machine\'s loopback); the local address is printed.',
      'A dropped connection is made again on the next local connection.',
    ],
    globals: BACKEND_SSH,
    run: forwardCommand,
  },
  EMULATOR,
  FLAGS,
  {
    name: 'profile',
    usage: 'FILE|DIR|--run RUN [--json] [--top N]',
    summary: "A capture's devices, steps and op table (on TPU and GPU as xprof's hlo_stats counts them)",
    details: [
      'FILE: an XSpace (*.xplane.pb: XLA, TorchTPU) or torch.profiler\'s Chrome trace (*.pt.trace.json: the trainer on CPU and CUDA).',
      'DIR: every capture under it, one per host of a run: hosts side by side, the slowest named, ops combined.',
      "--run RUN: the run's captures, fetched into <TPW_HOME>/profiles/RUN/ first (a VM run's from its workers over SSH, a GKE run's from its artifact dir in Cloud Storage, per pod), then analyzed as a DIR.",
      "A capture with no TPU or GPU (XLA on CPU) gets a table of the host's XLA ops, which is ours: xprof's hlo_stats is empty there.",
    ],
    options: {
      json: { type: 'boolean', description: 'Print {"device", "steps", "ops"} as JSON' },
      top: { type: 'string', arg: 'N', description: 'Show the N ops with the most self time (default 20; 0: all)' },
      run: { type: 'string', arg: 'RUN', description: "The run's captures, fetched first (see `tpw runs`)" },
    },
    globals: BACKEND_SSH,
    run: (ctx) => (ctx.values.run !== undefined ? profileRunCommand(ctx) : profileCommand(ctx)),
  },
  // SkyPilot task YAMLs (core/task-yaml/).
  {
    name: 'launch',
    usage: 'TASK.yaml [-c NAME] [--env K[=V]]... [--secret K[=V]]... [--dry-run]',
    summary: 'Run a SkyPilot task YAML: create the TPU VM if missing, sync workdir and file_mounts, setup once, run on every host',
    details: [
      'The VM is NAME (default: the task\'s name if a TPU VM can have it, else sky-XXXX-USER as `sky launch` names a cluster); an existing one is reused. A relative workdir or file_mounts path starts from the current directory, as in SkyPilot. setup runs on every host, and is skipped when neither it nor its inputs (envs, secrets, workdir, file_mounts) changed since it last ran there. --dry-run also warns about what a TPU VM will not have (conda, SkyPilot\'s /home/gcpuser).',
      'Every host gets SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_NODES, SKYPILOT_TASK_ID, SKYPILOT_CLUSTER_INFO and the TPU_* variables; its lines are prefixed (head, rank=0), (worker1, rank=1), ...',
      '--env K and --secret K without a value take it from your environment; secret values go only into a 0600 file on each host. Prefer `export HF_TOKEN=…; tpw launch … --secret HF_TOKEN`: a value written as --secret K=V is in tpw\'s command line, which other users of this machine can read. Fields tpw does not support are refused, by name, with why.',
      'num_nodes: N (N > 1) runs on a multislice group of N slices of the type (NAME-0 ... NAME-<N-1>, as `tpw vm create NAME --slices N` makes it): every host of every slice runs setup and run, ranked slice-major (rank = slice * hosts per slice + host), with the MEGASCALE_* variables.',
    ],
    options: {
      cluster: { type: 'string', short: 'c', arg: 'NAME', description: 'The TPU VM to create or reuse (default: the task\'s name, else sky-XXXX-USER)' },
      env: { type: 'string', arg: 'K[=V]', multiple: true, description: 'Set or override an env of the task (repeatable)' },
      secret: { type: 'string', arg: 'K[=V]', multiple: true, description: 'Set a secret of the task from your environment (K alone: the safe form); K=V works but other local users can read V in `ps` (repeatable)' },
      'dry-run': { type: 'boolean', description: 'Print the plan (VM, hosts, what runs where, variable and secret names) and change nothing' },
    },
    globals: BACKEND_SSH,
    run: launchCommand,
  },
  {
    name: 'exec',
    usage: 'NAME TASK.yaml [--env K[=V]]... [--secret K[=V]]... [--dry-run]',
    summary: "Run a task YAML's run on every host of an existing VM or multislice group (syncs workdir; no setup, no file_mounts, no provisioning)",
    options: {
      env: { type: 'string', arg: 'K[=V]', multiple: true, description: 'Set or override an env of the task (repeatable)' },
      secret: { type: 'string', arg: 'K[=V]', multiple: true, description: 'Set a secret of the task from your environment (K alone: the safe form); K=V works but other local users can read V in `ps` (repeatable)' },
      'dry-run': { type: 'boolean', description: 'Print the plan and change nothing' },
    },
    globals: BACKEND_SSH,
    run: execCommand,
  },
  { name: 'down', usage: 'NAME', summary: 'Delete the TPU VM a task was launched on (or every slice of its multislice group)', globals: BACKEND, run: downCommand },
];
