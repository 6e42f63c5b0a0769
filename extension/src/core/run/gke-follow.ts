import type { IncomingMessage } from 'node:http';
import { describeError, isTpwError } from '../errors';
import { parseMetricsLines } from '../profiles/metrics-tail';
import type { RunListener, RunResult, WorkerResult } from './types';
import type { KubeClient } from '../gke/kube';
import type { GkePod } from '../gke/models';
import { condition, JOBSET, KUEUE_GROUP, KUEUE_VERSION, type JobSetObject, type KueueWorkloadObject, type ObjectList } from '../gke/resources';
import { METRIC_LINE_PREFIX } from './gke-plan';
import { listPods, phaseOf } from '../gke/workloads';

/**
 * A GKE workload seen as a run: every pod's log as the lines of one worker (slice s, host h is worker
 * s * perSlice + h, as on VMs), metrics echoed into the log handed to `onMetrics`, JobSet restarts and preempted
 * node pools as notices, and the JobSet's end as the run's result. The in-cluster machinery does what the SSH engine
 * does itself on VMs: fail-fast is the JobSet's failure policy, stop is deleting it.
 *
 * Logs come from the API server with timestamps; a broken stream is opened again with `sinceTime` at the last line
 * seen, and the lines of that second already shown are skipped, so nothing is lost or repeated.
 */

export interface FollowWorkloadOptions {
  namespace: string;
  jobset: string;
  slices: number;
  perSlice: number;
  container?: string;
  /** Keep following to the end (default true); false: what is there now, then `detached` while it runs. */
  follow?: boolean;
  /** Stops watching only (the workload goes on): the result has `detached: true`. */
  signal?: AbortSignal;
  /** Between looks at the JobSet and its pods (default 2 s). */
  pollMs?: number;
  /** The JobSet is at restart attempt `attempt` (> 0), seen for the first time: when it restarts while followed, or on attaching. */
  onRestart?(attempt: number): void;
}

export interface WorkloadWatch {
  result: Promise<RunResult>;
  /** Deletes the JobSet (its pods get SIGTERM, then SIGKILL after their grace period) and resolves with the result. */
  cancel(): Promise<void>;
}

interface PodStream {
  worker: number;
  pod: string;
  /** The whole second (YYYY-MM-DDTHH:MM:SS) of the last line shown, and how many lines of that second were shown. */
  second?: string;
  shownInSecond: number;
  buffered: string;
  open?: Promise<void>;
  /** The pod has ended and its log was read once more to its end after that: nothing more will come. */
  done: boolean;
}

/** `2026-01-02T03:04:05.123456789Z text` → [timestamp, text]. */
export function splitTimestamp(line: string): [string | undefined, string] {
  const sp = line.indexOf(' ');
  if (sp > 0 && /^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(line.slice(0, sp))) return [line.slice(0, sp), line.slice(sp + 1)];
  return [undefined, line];
}

export function followWorkload(kube: KubeClient, listener: RunListener, opts: FollowWorkloadOptions): WorkloadWatch {
  const container = opts.container ?? 'jax-tpu';
  const follow = opts.follow ?? true;
  const pollMs = opts.pollMs ?? 2000;
  const t0 = Date.now();
  const stop = new AbortController();
  const onDetach = () => stop.abort();
  if (opts.signal?.aborted) stop.abort();
  else opts.signal?.addEventListener('abort', onDetach, { once: true });
  const streams = new Map<string, PodStream>();
  const told = new Set<string>();
  let attempt = -1;
  let cancelled = false;
  let preemptedReason: string | undefined;
  const notice = (key: string, msg: string) => {
    if (told.has(key)) return;
    told.add(key);
    listener.onNotice?.(msg);
  };
  const workerOf = (p: GkePod) => p.slice * opts.perSlice + p.host;

  const emit = (s: PodStream, text: string) => {
    if (text.startsWith(METRIC_LINE_PREFIX)) {
      const records = parseMetricsLines(text.slice(METRIC_LINE_PREFIX.length), s.worker);
      if (records.length) listener.onMetrics?.(s.worker, records);
      return;
    }
    listener.onLine?.(s.worker, 'stdout', text);
  };

  /** One connection to the pod's log; resolves when it ends, for whatever reason. */
  const readOnce = async (s: PodStream, followIt: boolean): Promise<boolean> => {
    const query: Record<string, string> = { container, timestamps: 'true', follow: String(followIt) };
    // sinceTime has whole seconds: the lines of that second already shown come again and are skipped.
    const replaySecond = s.second;
    let skip = replaySecond ? s.shownInSecond : 0;
    if (replaySecond) query.sinceTime = `${replaySecond}Z`;
    let res: IncomingMessage;
    try {
      res = await kube.openLog(opts.namespace, s.pod, query, stop.signal);
    } catch (e) {
      // 400: the container is not running yet (or any more, with nothing logged); the next look tries again.
      if (!stop.signal.aborted && !isTpwError(e, 'INVALID_ARGUMENT')) notice(`log-err:${s.pod}:${describeError(e)}`, describeError(e));
      return false;
    }
    const take = (line: string) => {
      const [ts, text] = splitTimestamp(line);
      const second = ts?.slice(0, 19);
      if (second !== undefined && second === replaySecond && skip > 0) {
        skip--;
        return;
      }
      if (second !== undefined) {
        if (second === s.second) s.shownInSecond++;
        else {
          s.second = second;
          s.shownInSecond = 1;
        }
      }
      emit(s, text);
    };
    return new Promise<boolean>((resolve) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const lines = (s.buffered + chunk).split('\n');
        s.buffered = lines.pop() ?? '';
        for (const l of lines) take(l);
      });
      res.on('end', () => {
        if (s.buffered) take(s.buffered);
        s.buffered = '';
        resolve(true);
      });
      res.on('error', () => resolve(false));
      res.on('close', () => resolve(false));
    });
  };

  /**
   * A following stream while the pod runs, opened again whenever it ended (a broken connection looks the same as
   * the container's end); once the pod has ended, one last read to the end of its log, and then no more.
   */
  const ensureStream = (p: GkePod, key: string) => {
    let s = streams.get(key);
    if (!s) {
      s = { worker: workerOf(p), pod: p.name, shownInSecond: 0, buffered: '', done: false };
      streams.set(key, s);
    }
    const st = s;
    if (st.open || st.done) return;
    const ended = p.phase === 'Succeeded' || p.phase === 'Failed';
    const read = ended || !follow ? readOnce(st, false).then((whole) => void (st.done = whole || !follow)) : readOnce(st, true).then(() => undefined);
    st.open = read.finally(() => (st.open = undefined));
  };

  /** Kueue's word on a suspended JobSet (admitted, or why it waits), once per change. */
  const tellWhyQueued = async (js: JobSetObject) => {
    let kw: KueueWorkloadObject | undefined;
    try {
      const list = (await kube.call('list the Kueue Workloads', () =>
        kube.custom.listNamespacedCustomObject({ group: KUEUE_GROUP, version: KUEUE_VERSION, namespace: opts.namespace, plural: 'workloads', labelSelector: `kueue.x-k8s.io/job-uid=${js.metadata?.uid ?? ''}` }),
      )) as ObjectList<KueueWorkloadObject>;
      kw = list.items?.[0];
    } catch {
      // no Kueue, or not allowed to read it: the JobSet alone says "suspended"
    }
    const { phase, message } = phaseOf(js, kw);
    notice(`queue:${phase}:${message ?? ''}`, phase === 'queued' ? `Queued: ${message ?? 'waiting for Kueue'}` : `Workload ${opts.jobset}: ${phase}${message ? ` (${message})` : ''}`);
  };

  const done = (async (): Promise<RunResult> => {
    let finalPods: GkePod[] = [];
    let terminal: 'Completed' | 'Failed' | 'Gone' | undefined;
    let failedMessage: string | undefined;
    for (;;) {
      let js: JobSetObject | undefined;
      try {
        js = (await kube.call(`get workload ${opts.jobset}`, () => kube.custom.getNamespacedCustomObject({ ...JOBSET, namespace: opts.namespace, name: opts.jobset }))) as JobSetObject;
      } catch (e) {
        if (isTpwError(e, 'NOT_FOUND')) terminal = 'Gone';
        else if (!stop.signal.aborted) notice(`js-err:${describeError(e)}`, describeError(e));
      }
      let pods: GkePod[] = [];
      try {
        pods = await listPods(kube, opts.namespace, opts.jobset);
      } catch (e) {
        if (!stop.signal.aborted) notice(`pods-err:${describeError(e)}`, describeError(e));
      }
      if (js?.spec?.suspend) await tellWhyQueued(js);
      const restarts = js?.status?.restarts ?? 0;
      const newest = Math.max(restarts, ...pods.map((p) => p.restartAttempt));
      if (newest > attempt) {
        if (attempt >= 0) notice(`restart:${newest}`, `Workload ${opts.jobset} restarted (attempt ${newest})${preemptedReason ? ` after ${preemptedReason}` : ''}.`);
        if (newest > 0) opts.onRestart?.(newest);
        attempt = newest;
      }
      const current = pods.filter((p) => p.restartAttempt === attempt);
      for (const p of pods) {
        if (p.disrupted) {
          preemptedReason ??= `node ${p.node ?? '?'} was taken away (pod ${p.name}: ${p.reason ?? 'disrupted'})`;
          notice(`disrupted:${p.name}`, `Preempted: pod ${p.name} on node ${p.node ?? '?'}: ${p.reason ?? 'disrupted'}.`);
        } else if (p.reason && p.phase !== 'Succeeded' && !/^(Error|Completed)/.test(p.reason)) {
          notice(`reason:${p.name}:${p.reason}`, `Pod ${p.name}: ${p.reason}`);
        }
      }
      for (const p of current) {
        const started = p.phase === 'Running' || p.phase === 'Succeeded' || (p.phase === 'Failed' && p.exitCode !== undefined);
        if (started) ensureStream(p, `${attempt}/${p.slice}/${p.host}`);
      }
      if (js && !terminal) {
        const completed = condition(js.status?.conditions, 'Completed');
        const failed = condition(js.status?.conditions, 'Failed');
        if (js.status?.terminalState === 'Completed' || completed?.status === 'True') terminal = 'Completed';
        else if (js.status?.terminalState === 'Failed' || failed?.status === 'True') {
          terminal = 'Failed';
          failedMessage = failed?.message ?? failed?.reason;
        }
      }
      finalPods = current;
      if (terminal || stop.signal.aborted) break;
      if (!follow) {
        // One look: read what the started pods have logged so far, then report the run as still going.
        await Promise.all([...streams.values()].map((s) => s.open));
        break;
      }
      await sleep(pollMs, stop.signal);
      if (stop.signal.aborted) break;
    }
    // What the pods wrote up to their end (a terminal JobSet may be seen before the last lines are read): every
    // stream of the last attempt read once more to the end of its log, within a bound.
    if (terminal && follow && !stop.signal.aborted) {
      const last = [...streams.entries()].filter(([k]) => k.startsWith(`${attempt}/`)).map(([, st]) => st);
      const finish = Promise.all(
        last.map(async (st) => {
          await st.open;
          if (!st.done) st.done = await readOnce(st, false);
        }),
      );
      await Promise.race([finish, sleep(15_000, stop.signal)]);
    } else {
      await Promise.all([...streams.values()].map((st) => st.open));
    }
    stop.abort();
    opts.signal?.removeEventListener('abort', onDetach);
    const detached = !terminal && !cancelled;
    const workers: WorkerResult[] = Array.from({ length: opts.slices * opts.perSlice }, (_, index) => {
      const p = finalPods.find((x) => workerOf(x) === index);
      const host = p?.name ?? `${opts.jobset}-slice-job-${Math.floor(index / opts.perSlice)}-${index % opts.perSlice}`;
      const why = p?.reason ?? failedMessage ?? `pod ${host} did not run to its end`;
      return {
        index,
        host,
        exitCode: p?.exitCode ?? null,
        stopped: cancelled || terminal === 'Gone',
        ...(p?.exitCode === undefined && terminal === 'Failed' ? { error: why } : {}),
      };
    });
    if (!detached) for (const w of workers) listener.onWorkerExit?.(w);
    const preempted = terminal === 'Failed' && preemptedReason !== undefined;
    const firstFailed = workers.find((w) => w.exitCode !== null && w.exitCode !== 0 && !finalPods.find((p) => p.name === w.host)?.disrupted)?.index;
    return {
      runId: '',
      workers,
      durationMs: Date.now() - t0,
      cancelled: cancelled || (terminal === 'Gone' && !detached),
      ok: terminal === 'Completed',
      ...(detached ? { detached: true } : {}),
      ...(preempted ? { preempted: true, preemptedReason: `the node pool was preempted: ${preemptedReason}` } : {}),
      ...(firstFailed !== undefined ? { firstFailed } : {}),
    };
  })();

  return {
    result: done,
    cancel: async () => {
      cancelled = true;
      await deleteWorkload(kube, opts.namespace, opts.jobset);
      await done;
    },
  };
}

/** Deletes the JobSet and what it owns (its Jobs and pods, the workspace ConfigMaps and the Secret). */
export async function deleteWorkload(kube: KubeClient, namespace: string, jobset: string): Promise<void> {
  try {
    await kube.call(`delete workload ${jobset}`, () =>
      kube.custom.deleteNamespacedCustomObject({ ...JOBSET, namespace, name: jobset, propagationPolicy: 'Foreground' }),
    );
  } catch (e) {
    if (!isTpwError(e, 'NOT_FOUND')) throw e;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
