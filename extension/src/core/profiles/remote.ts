/**
 * A run's watch artifacts on its workers (`~/.tpw/runs/<id>/output/{metrics.jsonl,xla_metrics.txt}` and the
 * profile captures under the run folder), over the run's SSH connections. Small files are fetched at once;
 * captures are listed with their size and fetched on demand (they can be GBs).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bashCommand } from '../ssh/quote';
import { runDirWord } from '../ssh/run-dir';
import type { ConnectionManager } from '../ssh/connection';
import { execCollectRaw } from '../ssh/exec';
import type { WorkerTarget } from '../ssh/types';
import { ProfileFormatError } from './xplane';

export interface RemoteCapture {
  worker: number;
  /** Path on the worker. */
  remotePath: string;
  bytes: number;
}

export interface WorkerArtifacts {
  worker: number;
  /** Local folder holding this worker's fetched metrics.jsonl and xla_metrics.txt. */
  dir: string;
  captures: RemoteCapture[];
}

/** Fetches each worker's metrics files into `<destDir>/w<N>/` and lists its captures. A worker that fails is skipped. */
export async function fetchRunArtifacts(workers: readonly WorkerTarget[], conns: ConnectionManager, runId: string, destDir: string): Promise<WorkerArtifacts[]> {
  const dir = runDirWord(runId);
  const got = await Promise.all(workers.map(async (w): Promise<WorkerArtifacts | undefined> => {
    try {
      const conn = await conns.get(w);
      const local = path.join(destDir, `w${w.index}`);
      fs.mkdirSync(local, { recursive: true });
      for (const f of ['metrics.jsonl', 'xla_metrics.txt']) {
        const out = await execCollectRaw(conn, bashCommand(`cat -- ${dir}/output/${f} 2>/dev/null`));
        if (out.code === 0) fs.writeFileSync(path.join(local, f), out.stdout);
      }
      const list = await execCollectRaw(conn, bashCommand(`find ${dir} -maxdepth 7 -name '*.xplane.pb' -type f -printf '%s %p\\n' 2>/dev/null`));
      const captures = list.stdout.toString('utf8').split('\n').filter(Boolean).map((l) => {
        const sp = l.indexOf(' ');
        return { worker: w.index, bytes: Number(l.slice(0, sp)), remotePath: l.slice(sp + 1) };
      });
      return { worker: w.index, dir: local, captures };
    } catch {
      return undefined;
    }
  }));
  return got.filter((g): g is WorkerArtifacts => g !== undefined);
}

/** Copies one capture to `localFile` (bytes as written). */
export async function fetchCapture(worker: WorkerTarget, conns: ConnectionManager, remotePath: string, localFile: string): Promise<void> {
  if (/[\n'\\]/.test(remotePath)) throw new ProfileFormatError(`unexpected capture path ${JSON.stringify(remotePath)}`);
  const out = await execCollectRaw(await conns.get(worker), bashCommand(`cat -- '${remotePath}'`));
  if (out.code !== 0) throw new ProfileFormatError(`cannot read ${remotePath} on worker ${worker.index}: ${out.stderr.trim()}`);
  fs.mkdirSync(path.dirname(localFile), { recursive: true });
  fs.writeFileSync(localFile, out.stdout);
}
