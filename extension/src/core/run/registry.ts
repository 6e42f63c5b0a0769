import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunStatus } from '../../../../protocol/run-status';
import { TpwError } from '../errors';
import { tpwHome } from '../paths';
import type { CreateNodeRequest } from '../tpu/api';
import { validateRunId } from '../ssh/run-dir';

/**
 * The local run history: one JSON file per run under `<TPW_HOME>/runs/<id>.json`, so `tpw runs`, `tpw logs`,
 * `tpw stop` and a restarted VS Code all see the same runs. It holds what is needed to find the run again
 * (VM, worker addresses, remote runs folder) and what to show (recipe, start, status, exit codes) — never the
 * environment, keys or secrets: those stay in memory and in the 0600 env file on the workers.
 */

export type { RunStatus };

/** Where a run on GKE lives: the JobSet tpw submitted, and what it asked for. */
export interface GkeRunRef {
  /** projects/P/locations/L/clusters/C */
  cluster: string;
  namespace: string;
  jobset: string;
  tpuType: string;
  slices: number;
  podsPerSlice: number;
  image: string;
  /** Submitted to the local emulator's cluster (so `tpw logs` finds it without flags). */
  emulator?: boolean;
  /** How often the JobSet has restarted so far (its newest restart attempt), as a follower last saw it. */
  restarts?: number;
  /** gs://…: where the pods copy their output and profiles (run/gke-captures.ts reads them back). */
  artifactDir?: string;
}

export interface RunRecord {
  runId: string;
  /** Full node name (projects/p/locations/z/nodes/n). */
  node: string;
  vm: string;
  recipe: string;
  /** Local folder that was synced (for "Run again"). */
  workspaceRoot: string;
  extraOverrides: string[];
  workers: Array<{ index: number; host: string; port: number }>;
  /** Multislice: every slice's full node name, in slice order (`node` is slice 0); absent for one VM. */
  slices?: string[];
  /** Multislice: workers per slice (worker i is s⌊i/n⌋w(i mod n)). */
  workersPerSlice?: number;
  /**
   * How to create each slice again (recreateRequest, in slice order), for a VM that Compute Engine deletes at the
   * end of its run (flex-start): "Resume" makes it again as it was.
   */
  recreate?: CreateNodeRequest[];
  /** A run on GKE: its JobSet (then `node` is the cluster's full name and `workers` the pods' slots). */
  gke?: GkeRunRef;
  startedAt: string;
  endedAt?: string;
  status: RunStatus;
  /** By worker index; null = no exit code (killed, never started, unknown). */
  exitCodes?: Array<number | null>;
  /** One line: which worker failed first and why. */
  reason?: string;
  /** The index of that worker (a later reattach cannot tell who failed first from who was stopped). */
  failedWorker?: number;
}

export function runsDir(home = tpwHome()): string {
  return path.join(home, 'runs');
}

function fileOf(runId: string, home?: string): string {
  validateRunId(runId);
  return path.join(runsDir(home), `${runId}.json`);
}

/** Writes atomically (temp file + rename), so a concurrent reader never sees half a record. */
export function saveRun(rec: RunRecord, home?: string): void {
  const file = fileOf(rec.runId, home);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(rec, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export function updateRun(runId: string, patch: Partial<RunRecord>, home?: string): RunRecord {
  const rec = { ...loadRun(runId, home), ...patch };
  saveRun(rec, home);
  return rec;
}

export function loadRun(runId: string, home?: string): RunRecord {
  const file = fileOf(runId, home);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new TpwError('NOT_FOUND', `Run ${runId} not found in ${runsDir(home)} (see \`tpw runs\`).`);
  }
  return parseRecord(text, file);
}

function parseRecord(text: string, file: string): RunRecord {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new TpwError('INTERNAL', `The run record ${file} is not valid JSON.`);
  }
  const r = v as Partial<RunRecord>;
  if (typeof r.runId !== 'string' || typeof r.node !== 'string' || !Array.isArray(r.workers) || typeof r.startedAt !== 'string') {
    throw new TpwError('INTERNAL', `The run record ${file} is missing fields.`);
  }
  return r as RunRecord;
}

/** Newest first. Unreadable records are skipped (a run being written by another process, or a stray file). */
export function listRuns(home?: string): RunRecord[] {
  const dir = runsDir(home);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const out: RunRecord[] = [];
  for (const n of names) {
    try {
      out.push(parseRecord(fs.readFileSync(path.join(dir, n), 'utf8'), n));
    } catch {
      // skip
    }
  }
  return out.sort((a, b) => b.startedAt.localeCompare(a.startedAt) || b.runId.localeCompare(a.runId));
}

/** A run id, or a unique prefix of one (ids are long; people type the start). */
export function resolveRunId(prefix: string, home?: string): string {
  const all = listRuns(home).map((r) => r.runId);
  if (all.includes(prefix)) return prefix;
  const hits = all.filter((id) => id.startsWith(prefix));
  if (hits.length === 1) return hits[0];
  if (hits.length === 0) throw new TpwError('NOT_FOUND', `No run matches "${prefix}" (see \`tpw runs\`).`);
  throw new TpwError('INVALID_ARGUMENT', `"${prefix}" matches ${hits.length} runs: ${hits.slice(0, 5).join(', ')}…`);
}

export function isActive(s: RunStatus): boolean {
  return s === 'starting' || s === 'running' || s === 'stopping';
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A run's status as the Runs view and `tpw runs` show it: a GKE run that restarted says how often. */
export function runStatusText(rec: Pick<RunRecord, 'status' | 'gke'>): string {
  const n = rec.gke?.restarts ?? 0;
  return n > 0 ? `${rec.status}, restarted ${n} time${n === 1 ? '' : 's'}` : rec.status;
}
