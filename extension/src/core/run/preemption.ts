import { describeError, isTpwError, TpwError } from '../errors';
import type { CreateNodeRequest, TpuApi } from '../tpu/api';
import { parseNodeName, shortName, type TpuNode } from '../tpu/models';
import type { RunResult } from './types';

/**
 * Preemption: a spot/preemptible TPU VM can be taken away mid-run. That is not the user's program failing, so
 * a run whose VM went PREEMPTED/TERMINATED ends as "preempted" and is offered "Recreate and resume".
 *
 * Two signals, because neither alone is reliable: the VM state (polled while the run is watched, and
 * re-checked for a few seconds when workers die of a signal, since the API may flip the state only after
 * the workers are gone), and the trainer's own exit code 75 (trainer/README.md: SIGTERM or torch_xla's
 * preemption notice; a checkpoint was saved; rerun with `resume=auto`).
 */

/** The trainer's "preempted" exit status (trainer/README.md, tpu_trainer/preemption.py). */
export const PREEMPTED_EXIT = 75;

/** States from which the VM can only be deleted and created again ("Recreate"). */
export function isGoneState(state: string): boolean {
  return state === 'PREEMPTED' || state === 'TERMINATED';
}

/** States in which the VM still exists but its programs were killed: "Resume" starts it again. */
export function isStoppedState(state: string): boolean {
  return state === 'STOPPED' || state === 'STOPPING';
}

/**
 * Why the run's processes cannot be running any more, judged from the VM's state, or undefined while the VM is
 * up. Stopped counts as well as preempted: either way the program was killed from outside, and the run should
 * offer Resume rather than read as the program's failure.
 */
export function vmEndedRunReason(nodeName: string, state: string): string | undefined {
  if (isGoneState(state)) return `the VM ${shortName(nodeName)} went ${state}`;
  if (isStoppedState(state)) return `the VM ${shortName(nodeName)} was stopped (${state})`;
  return undefined;
}

/** The emulator hosts its VMs' workers: when it stops, every run on it is killed with them. */
function emulatorStoppedReason(e: unknown): string | undefined {
  return isTpwError(e, 'EMULATOR_NOT_RUNNING') ? 'the local emulator stopped, and its VMs with it' : undefined;
}

/**
 * Polls the node every `intervalMs` until its state says the run cannot be running (preempted, terminated,
 * stopped, or the emulator that hosts it is down; resolves with the reason) or `signal` aborts (resolves
 * undefined). Other API errors are retried: a flaky API must not end a run.
 */
export async function watchNodeState(api: TpuApi, nodeName: string, opts: { intervalMs?: number; signal: AbortSignal; onError?: (e: unknown) => void }): Promise<string | undefined> {
  const interval = opts.intervalMs ?? 15_000;
  while (!opts.signal.aborted) {
    await sleep(interval, opts.signal);
    if (opts.signal.aborted) return undefined;
    try {
      const node = await api.getNode(parseNodeName(nodeName), opts.signal);
      const why = vmEndedRunReason(nodeName, node.state);
      if (why) return why;
    } catch (e) {
      if (opts.signal.aborted) return undefined;
      const why = emulatorStoppedReason(e) ?? (/not found/i.test(describeError(e)) ? `the VM ${shortName(nodeName)} was deleted` : undefined);
      if (why) return why;
      opts.onError?.(e);
    }
  }
  return undefined;
}

/** True if the result looks like workers being taken away (a signal, no exit code, a lost connection, or 75). */
export function looksPreempted(result: RunResult): boolean {
  return result.workers.some((w) => !w.stopped && (w.exitCode === PREEMPTED_EXIT || w.exitCode === null || w.exitCode >= 128 || w.signal !== undefined));
}

/**
 * After a run that did not succeed: was the VM preempted? Asks the API for up to `settleMs` (the state may
 * still say READY while the workers are being torn down). A trainer exit of 75 counts as preempted.
 */
export async function checkPreempted(api: TpuApi, nodeName: string, result: RunResult, settleMs = 5000): Promise<string | undefined> {
  if (result.ok || result.cancelled || !looksPreempted(result)) return undefined;
  const deadline = Date.now() + settleMs;
  for (;;) {
    try {
      const node = await api.getNode(parseNodeName(nodeName));
      const why = vmEndedRunReason(nodeName, node.state);
      if (why) return why;
    } catch (e) {
      const why = emulatorStoppedReason(e);
      if (why) return why;
      if (/not found/i.test(describeError(e))) return `the VM ${shortName(nodeName)} was deleted`;
    }
    if (Date.now() >= deadline) break;
    await sleep(500);
  }
  const w = result.workers.find((x) => x.exitCode === PREEMPTED_EXIT);
  return w ? `w${w.index} exited ${PREEMPTED_EXIT} (the trainer's preempted status)` : undefined;
}

/** Metadata Compute Engine sets on each VM of a slice itself; a new VM gets its own. */
const PER_VM_METADATA = ['agent-worker-number', 'created-by', 'instance-template'];

/**
 * What creating `node` again takes: type, runtime, spot, labels; on Compute Engine also its provisioning as it was
 * (flex-start with its max run duration, the reservation and its affinity, spot), its topology and its metadata
 * (e.g. enable-oslogin), less what Compute Engine sets per VM.
 */
export function recreateRequest(node: TpuNode): CreateNodeRequest {
  const id = parseNodeName(node.name);
  const c = node.controlPlane === 'compute' ? node.compute : undefined;
  return {
    project: id.project,
    zone: id.zone,
    nodeId: id.node,
    acceleratorType: node.acceleratorType,
    runtimeVersion: node.runtimeVersion,
    spot: node.schedulingConfig?.spot === true || node.schedulingConfig?.preemptible === true,
    labels: node.labels,
    description: node.description,
    ...(node.controlPlane === 'compute' ? { controlPlane: 'compute' as const } : {}),
    ...(c
      ? {
          compute: {
            provisioning: c.provisioning,
            ...(c.reservation ? { reservation: c.reservation } : {}),
            ...(c.maxRunDurationSeconds !== undefined ? { maxRunDurationSeconds: c.maxRunDurationSeconds } : {}),
            ...(c.topology ? { topology: c.topology } : {}),
          },
          metadata: Object.fromEntries(Object.entries(node.metadata ?? {}).filter(([k]) => !PER_VM_METADATA.includes(k))),
        }
      : {}),
  };
}

/**
 * "Recreate": a preempted TPU VM cannot be restarted, only deleted and created again with the same spec
 * (recreateRequest). Returns the new READY node.
 */
export async function recreateNode(api: TpuApi, node: TpuNode, onProgress?: (msg: string) => void): Promise<TpuNode> {
  const id = parseNodeName(node.name);
  onProgress?.(`Deleting ${id.node} (${node.state})…`);
  try {
    await api.deleteNode(id);
  } catch (e) {
    if (!/not found/i.test(describeError(e))) throw e;
  }
  return createAgain(api, recreateRequest(node), onProgress);
}

function createAgain(api: TpuApi, req: CreateNodeRequest, onProgress?: (msg: string) => void): Promise<TpuNode> {
  const how = req.compute ? req.compute.provisioning : req.runtimeVersion;
  onProgress?.(`Creating ${req.nodeId} (${req.acceleratorType}, ${how})…`);
  return api.createNode(req);
}

/**
 * Brings a run's VM back for "Resume": a preempted one is recreated, a stopped one started again (after it
 * has finished stopping), a READY one used as it is. A deleted VM cannot be brought back from the run alone.
 */
export async function vmForResume(api: TpuApi, nodeName: string, runId: string, onProgress?: (msg: string) => void, recorded?: CreateNodeRequest): Promise<TpuNode> {
  const id = parseNodeName(nodeName);
  let node: TpuNode;
  try {
    node = await api.getNode(id);
  } catch (e) {
    if (/not found/i.test(describeError(e))) {
      // A flex-start VM is deleted by Compute Engine when its run ends (termination action DELETE): its spec,
      // recorded when the run started, makes it again as it was.
      if (recorded?.compute?.provisioning === 'flex-start') return createAgain(api, recorded, onProgress);
      throw new TpwError('NOT_FOUND', `The VM ${id.node} of run ${runId} was deleted: create it again (\`tpw vm create ${id.node} …\`), then \`tpw resume ${runId}\`.`, { cause: e });
    }
    throw e;
  }
  if (isGoneState(node.state)) return recreateNode(api, node, onProgress);
  for (let i = 0; node.state === 'STOPPING' && i < 120; i++) {
    await sleep(500);
    node = await api.getNode(id);
  }
  if (node.state === 'STOPPED') {
    onProgress?.(`Starting ${id.node} (STOPPED)…`);
    return api.startNode(id);
  }
  if (node.state !== 'READY') throw new TpwError('FAILED_PRECONDITION', `TPU VM ${id.node} is ${node.state}; it must be READY, STOPPED or PREEMPTED to resume run ${runId}.`);
  return node;
}

/** Hydra override that makes the trainer continue from its newest checkpoint; replaces any earlier resume=. */
export function withResume(overrides: readonly string[]): string[] {
  return [...overrides.filter((o) => !/^\+{0,2}resume=/.test(o)), 'resume=auto'];
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}
