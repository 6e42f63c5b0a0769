/**
 * What a run folder on this machine holds for the run view: the trainer's metrics.jsonl, the torch_xla
 * metrics report, and profile captures (TensorBoard layout). Used for finished runs and for
 * "Open profile file…"; plain fs, no vscode, so tests can use it.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { captureHost, isCaptureName } from '../../core/profiles/capture-names';
import { parseMetricsLines } from '../../core/profiles/metrics-tail';
import type { MetricRecord } from '../../../../protocol/metrics-record';

export interface LocalCapture {
  file: string;
  run: string;
  host: string;
  bytes: number;
}

/** Every capture under `dir` (at most 6 levels down: <profile_dir>/plugins/profile/<run>/<host>.xplane.pb or .pt.trace.json). */
export function findCaptures(dir: string, depth = 6): LocalCapture[] {
  const out: LocalCapture[] = [];
  if (depth < 0 || !existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== 'checkpoints') out.push(...findCaptures(p, depth - 1));
    else if (e.isFile() && isCaptureName(e.name)) out.push({ file: p, run: path.basename(dir), host: captureHost(e.name), bytes: statSync(p).size });
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

/** metrics.jsonl → records; a torn last line (the trainer is still writing) is skipped. */
export function readMetricsJsonl(file: string): MetricRecord[] {
  return existsSync(file) ? parseMetricsLines(readFileSync(file, 'utf8')) : [];
}

/** The output folder of a run folder (`<run>/output`) or the folder itself when it holds the files. */
export function outputDir(dir: string): string {
  const nested = path.join(dir, 'output');
  return existsSync(path.join(nested, 'metrics.jsonl')) || existsSync(path.join(nested, 'xla_metrics.txt')) ? nested : dir;
}
