import { TpwError } from '../errors';
import type { GkeTpuType } from './tpu-types';

/**
 * The JobSet of a workload, as `xpk workload create` 1.16.0 renders it for the same inputs (its WORKLOAD_CREATE_YAML
 * for TPUs, without Pathways, sub- or super-slicing): one replicated job `slice-job` with a replica per slice, a pod
 * per VM of the slice, the TPU node selectors and chip limits, the Kueue queue label, xpk's failure policies and its
 * bash wrapper around the command. test/unit/gke-manifest.test.ts compares the result field by field with xpk's own
 * manifests (test/fixtures/gke/xpk/).
 *
 * What tpw adds (`TpwAdditions`), and xpk has no counterpart for: the workspace as ConfigMap parts unpacked by an
 * init container (docs/gke.md says why), secrets by reference to a Secret, the run's labels and working folder.
 */

export type Priority = 'very-low' | 'low' | 'medium' | 'high' | 'very-high';
export const PRIORITIES: readonly Priority[] = ['very-low', 'low', 'medium', 'high', 'very-high'];

/** xpk's LocalQueue (xpk/core/kueue_manager.py LOCAL_QUEUE_NAME): every xpk workload is queued there. */
export const LOCAL_QUEUE = 'multislice-queue';
export const JOBSET_API = 'jobset.x-k8s.io/v1alpha2';
/** The replicated job's name in every xpk TPU workload; pods are `<workload>-slice-job-<slice>-<host>-<hash>`. */
export const SLICE_JOB = 'slice-job';

/** The inputs `xpk workload create` takes for a TPU workload, named after its flags, with xpk's defaults. */
export interface WorkloadInputs {
  /** --workload */
  workload: string;
  /** --tpu-type */
  tpu: GkeTpuType;
  /** --num-slices */
  numSlices: number;
  /** --docker-image */
  image: string;
  /** --command: shell text, run by bash inside xpk's wrapper. */
  command: string;
  /** --env NAME=value, in order. */
  env?: ReadonlyArray<readonly [string, string]>;
  /** --priority (default medium) */
  priority?: Priority;
  /** --max-restarts (default 0) */
  maxRestarts?: number;
  /** --ttl-seconds-after-finished (default 12 h) */
  ttlSecondsAfterFinished?: number;
  /** --restart-on-exit-codes: restart the JobSet on these too (xpk always restarts on 42 and 127-255). */
  restartOnExitCodes?: readonly number[];
  /** --enable-debug-logs */
  enableDebugLogs?: boolean;
  /** --docker-name (default jax-tpu): the main container's name. */
  dockerName?: string;
  /** --termination-grace-period-seconds (default 30) */
  terminationGracePeriodSeconds?: number;
  /** --scheduler (default default-scheduler) */
  scheduler?: string;
}

/** What tpw adds to xpk's JobSet. */
export interface TpwAdditions {
  /** Secret environment variables: `valueFrom.secretKeyRef` into this Secret, one key per name. */
  secretEnv?: { secret: string; names: readonly string[] };
  /** Environment set by tpw (not user --env), after xpk's: a value, or a field of the pod (`metadata.annotations['…']`). */
  env?: ReadonlyArray<readonly [string, string | { fieldPath: string }]>;
  /** The workspace: ConfigMap names holding its gzip tarball in parts (key `part`), unpacked into `workingDir`. */
  workspace?: { parts: readonly string[] };
  /** Labels on the JobSet and its pods (the run id). */
  labels?: Readonly<Record<string, string>>;
}

/** Where tpw's volumes appear in a pod (docs/gke.md). */
export const POD_PATHS = { archive: '/tpw/archive', workspace: '/tpw/workspace', run: '/tpw/run' } as const;

/** A Kubernetes object as JSON, typed loosely: what the manifest writes and the tests read. */
export type KubeObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } } & Record<string, unknown>;

const TPU_RESOURCE = 'google.com/tpu';

/** Exit codes on which xpk restarts the JobSet rather than failing it (xpk get_restart_exit_codes): 42 and signals. */
export function restartExitCodes(extra: readonly number[] = []): number[] {
  const codes = new Set<number>([42]);
  for (let c = 127; c < 256; c++) codes.add(c);
  for (const c of extra) codes.add(c);
  // xpk builds a Python set of small ints, which iterates in ascending order.
  return [...codes].sort((a, b) => a - b);
}

/** What xpk's --enable-debug-logs puts in front of the command. */
const DEBUG_LOG_EXPORTS = 'export TPU_STDERR_LOG_LEVEL=0 && export TPU_MIN_LOG_LEVEL=0 && export TF_CPP_MIN_LOG_LEVEL=0 && export TPU_VMODULE=real_program_continuator=1 && ';

/**
 * xpk's wrapper around the command (xpk/core/docker_container.py get_main_container): it forwards SIGTERM to the
 * command, waits for it, and prints `EXIT_CODE=` before exiting with the command's status. The blank lines are
 * its empty placeholders (gcloud check, debug dump upload, stack-trace and GPU signals), kept so the text matches.
 */
export function xpkWrappedCommand(command: string): string {
  return [
    'echo XPK Start: $(date);',
    '_sigterm() (kill -SIGTERM $! 2>/dev/null;);',
    'trap _sigterm SIGTERM;',
    '',
    `(${command}) & PID=$!;`,
    'while kill -0 $PID 2>/dev/null;',
    '    do sleep 5;',
    'done;',
    'wait $PID;',
    'EXIT_CODE=$?;',
    '',
    'echo XPK End: $(date);',
    'echo EXIT_CODE=$EXIT_CODE;',
    '',
    '',
    'exit $EXIT_CODE',
    '',
  ].join('\n');
}

/** A JobSet (and pod) name: a DNS-1035 label short enough for the pod names JobSet makes from it. */
export function checkWorkloadName(name: string): void {
  // Pods are <name>-slice-job-<j>-<i>-<5 chars>; a pod's hostname must stay within 63 characters.
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 40) {
    throw new TpwError('INVALID_ARGUMENT', `Workload name "${name}" is not valid: use lowercase letters, digits and '-', starting with a letter, at most 40 characters.`);
  }
}

/** The JobSet for `inputs`, with tpw's additions. */
export function renderJobSet(inputs: WorkloadInputs, add: TpwAdditions = {}): KubeObject {
  checkWorkloadName(inputs.workload);
  if (!Number.isInteger(inputs.numSlices) || inputs.numSlices < 1) throw new TpwError('INVALID_ARGUMENT', `The number of slices must be a whole number of at least 1 (got ${inputs.numSlices}).`);
  const { tpu, workload } = inputs;
  const name = inputs.dockerName ?? 'jax-tpu';
  const labels = { 'kueue.x-k8s.io/queue-name': LOCAL_QUEUE, 'xpk.google.com/workload': workload, ...add.labels };
  const nodeSelector: Record<string, string> = {
    'cloud.google.com/gke-tpu-accelerator': tpu.accelerator,
    'cloud.google.com/gke-tpu-topology': tpu.topology,
  };
  // xpk's placement policy (a Compute Engine workload policy) for the TPU types that need one.
  if (tpu.workloadPolicy) nodeSelector['cloud.google.com/placement-policy-name'] = `${tpu.name}-${tpu.topology}-placement-policy`;
  const command = `${inputs.enableDebugLogs ? DEBUG_LOG_EXPORTS : ''}${inputs.command}`;
  const env = [
    ...(inputs.env ?? []).map(([k, value]) => ({ name: k, value })),
    ...(add.env ?? []).map(([k, v]) => (typeof v === 'string' ? { name: k, value: v } : { name: k, valueFrom: { fieldRef: { fieldPath: v.fieldPath } } })),
    ...(add.secretEnv?.names ?? []).map((k) => ({ name: k, valueFrom: { secretKeyRef: { name: add.secretEnv!.secret, key: k } } })),
  ];
  const volumeMounts: Array<Record<string, unknown>> = [{ mountPath: '/dev/shm', name: 'dshm-2' }];
  const volumes: Array<Record<string, unknown>> = [{ emptyDir: { medium: 'Memory' }, name: 'dshm-2' }];
  const container: Record<string, unknown> = {
    name,
    image: inputs.image,
    // xpk writes `env:` with nothing after it (null) when there is none: the API server then stores no env at all.
    ...(env.length > 0 ? { env } : {}),
    securityContext: { privileged: true },
    command: ['bash', '-c', xpkWrappedCommand(command)],
    resources: { limits: { [TPU_RESOURCE]: tpu.chipsPerVm } },
    volumeMounts,
  };
  const podSpec: Record<string, unknown> = {
    schedulerName: inputs.scheduler ?? 'default-scheduler',
    restartPolicy: 'Never',
    nodeSelector,
    priorityClassName: inputs.priority ?? 'medium',
    hostNetwork: true,
    dnsPolicy: 'ClusterFirstWithHostNet',
    terminationGracePeriodSeconds: inputs.terminationGracePeriodSeconds ?? 30,
    containers: [container],
    tolerations: [{ operator: 'Exists', key: TPU_RESOURCE }],
    volumes,
  };
  if (add.workspace) {
    const { parts } = add.workspace;
    const mounts = [
      { name: 'tpw-archive', mountPath: POD_PATHS.archive, readOnly: true },
      { name: 'tpw-workspace', mountPath: POD_PATHS.workspace },
    ];
    volumes.push(
      {
        name: 'tpw-archive',
        projected: { sources: parts.map((cm, i) => ({ configMap: { name: cm, items: [{ key: 'part', path: String(i).padStart(3, '0') }] } })) },
      },
      { name: 'tpw-workspace', emptyDir: {} },
      { name: 'tpw-run', emptyDir: {} },
    );
    volumeMounts.push({ name: 'tpw-workspace', mountPath: POD_PATHS.workspace }, { name: 'tpw-run', mountPath: POD_PATHS.run });
    container.workingDir = POD_PATHS.workspace;
    podSpec.initContainers = [
      {
        name: 'tpw-workspace',
        image: inputs.image,
        // The parts' file names sort in order; the shell's glob keeps that order.
        command: ['bash', '-c', `set -e; cat ${POD_PATHS.archive}/* | tar -xzf - -C ${POD_PATHS.workspace}`],
        volumeMounts: mounts,
      },
    ];
  }
  return {
    apiVersion: JOBSET_API,
    kind: 'JobSet',
    metadata: {
      name: workload,
      labels,
      annotations: { 'alpha.jobset.sigs.k8s.io/exclusive-topology': 'cloud.google.com/gke-nodepool' },
    },
    spec: {
      ttlSecondsAfterFinished: inputs.ttlSecondsAfterFinished ?? 12 * 60 * 60,
      failurePolicy: {
        rules: [{ action: 'FailJobSet', onJobFailureReasons: ['PodFailurePolicy'] }],
        maxRestarts: inputs.maxRestarts ?? 0,
      },
      replicatedJobs: [
        {
          name: SLICE_JOB,
          replicas: inputs.numSlices,
          template: {
            spec: {
              parallelism: tpu.vmsPerSlice,
              completions: tpu.vmsPerSlice,
              backoffLimit: 0,
              podFailurePolicy: {
                rules: [
                  {
                    action: 'FailJob',
                    onPodConditions: [],
                    onExitCodes: { containerName: name, operator: 'NotIn', values: restartExitCodes(inputs.restartOnExitCodes) },
                  },
                ],
              },
              template: {
                metadata: { labels: { 'xpk.google.com/workload': workload, ...add.labels } },
                spec: podSpec,
              },
            },
          },
        },
      ],
    },
  };
}
