import { Document, isScalar, isSeq, stringify, visit } from 'yaml';
import { recipeArgv, runsTpuTrainer, type Recipe } from '../recipes/recipe';
import { withResume } from './preemption';
import { SECRET_NAMES } from './secrets';
import { shJoin, shQuote } from '../ssh/quote';
import { POD_PATHS, renderJobSet, type KubeObject, type Priority } from '../gke/manifest';
import { gkeTpuType, type GkeTpuType } from '../gke/tpu-types';
import { RUN_LABEL } from '../gke/workloads';

/**
 * A recipe as a GKE workload: the JobSet (xpk's, manifest.ts), the Secret with the run's secrets and the ConfigMaps
 * with the workspace, all named after the workload. Pure: `tpw run --cluster C --dry-run` prints it, the submit
 * creates it.
 *
 * Inside each pod the recipe runs as on a VM worker: from the workspace folder (or the recipe's `cd`), its exports
 * in file order, the trainer's output in the run folder (`output_dir=${oc.env:TPW_RUN_DIR}/output`, as on VMs), and
 * TPW_WORKER_INDEX = slice * pods per slice + host, from the pod's own JobSet annotations.
 */

/** The prefix of the metrics lines the trainer echoes into a pod's log (trainer/tpu_trainer/metrics.py). */
export const METRIC_LINE_PREFIX = 'tpw-metric ';

export interface GkeRunInputs {
  runId: string;
  recipe: Recipe;
  /** ConfigMap parts of the workspace archive (their count; the data is added at submit). */
  workspaceParts: number;
  tpuType: string;
  numSlices: number;
  image: string;
  namespace?: string;
  /** The JobSet's name (default `tpw-<run id>`). */
  workload?: string;
  extraOverrides?: readonly string[];
  /** HF_TOKEN, WANDB_API_KEY, XLA_IR_DEBUG, XLA_HLO_DEBUG, LIBTPU_INIT_ARGS as `tp run` proxies them. */
  passEnv?: Readonly<Record<string, string>>;
  resume?: boolean;
  priority?: Priority;
  maxRestarts?: number;
  /** gs://…: each pod copies its output and profile folders to <dir>/<workload>/{outputs,profile}/<slice>-<host> at its end. */
  artifactDir?: string;
}

export interface GkeRunPlan {
  runId: string;
  namespace: string;
  workload: string;
  tpu: GkeTpuType;
  numSlices: number;
  jobset: KubeObject;
  /** With the secret values in `stringData`: created, never printed (planYaml leaves the values out). */
  secret?: KubeObject;
  /** Names of the workspace ConfigMaps, in part order. */
  configMaps: string[];
}

/** A run id (20261122-031500-a1b2) as the default workload name. */
export function workloadNameFor(runId: string): string {
  return `tpw-${runId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`;
}

export function planGkeRun(inp: GkeRunInputs): GkeRunPlan {
  const tpu = gkeTpuType(inp.tpuType);
  const namespace = inp.namespace ?? 'default';
  const workload = inp.workload ?? workloadNameFor(inp.runId);
  const { recipe } = inp;
  const extra = [...(inp.extraOverrides ?? [])];
  const trainer = runsTpuTrainer(recipe);
  // torchprime's `tp run` adds both to every command (its launcher thunk); tpw to its trainer and to `…train.py` scripts.
  const hydraTrain = trainer || recipe.program.some((a) => a.endsWith('train.py'));
  if (inp.resume && trainer) extra.splice(0, extra.length, ...withResume(extra));
  if (hydraTrain) extra.push('output_dir=${oc.env:TPW_RUN_DIR}/output', 'profile_dir=${oc.env:TPW_RUN_DIR}/profile');
  const pass = inp.passEnv ?? {};
  const secretNames = SECRET_NAMES.filter((k) => pass[k] !== undefined);
  const plainPass = Object.entries(pass).filter(([k]) => !(SECRET_NAMES as readonly string[]).includes(k));
  const perSlice = tpu.vmsPerSlice;
  // The recipe's exports win over the proxied variables (as on VMs): they are set after them, in the command.
  const exports = recipe.env.map((e) => `export ${e.name}=${e.expands ? e.raw : shQuote(e.value)}`);
  const cwd = recipe.cwd === '.' ? [] : [`cd ${shQuote(recipe.cwd)}`];
  const run = [
    `export TPW_WORKER_INDEX=$((TPW_SLICE_INDEX * ${perSlice} + TPW_HOST_INDEX))`,
    ...cwd,
    ...exports,
    `mkdir -p "$TPW_RUN_DIR"`,
    shJoin(recipeArgv(recipe, extra)),
  ].join(' && ');
  const command = inp.artifactDir ? `${run}; rc=$?; ${uploadArtifacts(inp.artifactDir.replace(/\/+$/, ''), workload)}; exit $rc` : run;
  const secret = secretNames.length > 0 ? `${workload}-secrets` : undefined;
  const configMaps = Array.from({ length: inp.workspaceParts }, (_, i) => `${workload}-ws-${i}`);
  const labels = { [RUN_LABEL]: inp.runId };
  const jobset = renderJobSet(
    {
      workload,
      tpu,
      numSlices: inp.numSlices,
      image: inp.image,
      command,
      env: plainPass,
      ...(inp.priority ? { priority: inp.priority } : {}),
      ...(inp.maxRestarts !== undefined ? { maxRestarts: inp.maxRestarts } : {}),
      // The trainer's "preempted" status restarts the JobSet (when restarts are allowed) instead of failing it.
      ...(trainer ? { restartOnExitCodes: [75] } : {}),
    },
    {
      ...(secret ? { secretEnv: { secret, names: secretNames } } : {}),
      env: [
        ['TPW_RUN_ID', inp.runId],
        ...(inp.artifactDir ? ([['TPW_ARTIFACT_DIR', inp.artifactDir]] as const) : []),
        ['TPW_RUN_DIR', POD_PATHS.run],
        ['TPW_METRICS_ECHO', METRIC_LINE_PREFIX],
        ['TPW_SLICE_INDEX', { fieldPath: "metadata.annotations['jobset.sigs.k8s.io/job-index']" }],
        ['TPW_HOST_INDEX', { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" }],
      ],
      ...(configMaps.length > 0 ? { workspace: { parts: configMaps } } : {}),
      labels,
    },
  );
  jobset.metadata.namespace = namespace;
  return {
    runId: inp.runId,
    namespace,
    workload,
    tpu,
    numSlices: inp.numSlices,
    jobset,
    ...(secret
      ? {
          secret: {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: secret, namespace, labels },
            type: 'Opaque',
            stringData: Object.fromEntries(secretNames.map((k) => [k, pass[k]])),
          },
        }
      : {}),
    configMaps,
  };
}

/**
 * The pod's last step when an artifact folder is set: its run folder's output and profiles to Cloud Storage, at
 * torchprime's paths (<dir>/<workload>/outputs/<slice>-<host>), with the image's gcloud; said in the log either way.
 */
function uploadArtifacts(dir: string, workload: string): string {
  const copy = (folder: string, kind: string) => {
    const dest = `${shQuote(`${dir}/${workload}/${kind}/`)}"$TPW_SLICE_INDEX-$TPW_HOST_INDEX"`;
    return `if [ -d "$TPW_RUN_DIR/${folder}" ]; then gcloud storage cp -r "$TPW_RUN_DIR/${folder}" ${dest} >/dev/null 2>&1 || echo "tpw: could not copy $TPW_RUN_DIR/${folder} to ${dir}"; fi`;
  };
  return `if command -v gcloud >/dev/null 2>&1; then ${copy('output', 'outputs')}; ${copy('profile', 'profile')}; else echo "tpw: no gcloud in the image: the run folder stays in the pod"; fi`;
}

/**
 * The plan as YAML for `--dry-run`: the JobSet whole; the Secret with its keys and no values; each workspace
 * ConfigMap with its size only (the tarball is binary).
 */
export function planYaml(plan: GkeRunPlan, partSizes: readonly number[] = []): string {
  const docs: string[] = [];
  if (plan.secret) {
    const keys = Object.keys((plan.secret.stringData as Record<string, string>) ?? {});
    const shown = { ...plan.secret, stringData: Object.fromEntries(keys.map((k) => [k, '<from your environment; never printed>'])) };
    docs.push(stringify(shown));
  }
  plan.configMaps.forEach((name, i) => {
    const size = partSizes[i] !== undefined ? `${partSizes[i]} bytes of the workspace's gzip tarball` : "part of the workspace's gzip tarball";
    docs.push(stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: plan.namespace, labels: { [RUN_LABEL]: plan.runId } }, binaryData: { part: `<${size}>` } }));
  });
  // Long lists of numbers (the restart exit codes) on one line, as xpk writes them.
  const jobset = new Document(plan.jobset);
  visit(jobset, {
    Seq: (_key, node) => {
      if (isSeq(node) && node.items.length > 8 && node.items.every((i) => isScalar(i) && typeof i.value === 'number')) node.flow = true;
    },
  });
  docs.push(jobset.toString({ lineWidth: 0 }));
  return docs.join('---\n');
}
