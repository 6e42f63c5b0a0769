/**
 * A run's watch artifacts on its workers (`~/.tpw/runs/<id>/output/{metrics.jsonl,xla_metrics.txt}` and the
 * profile captures under the run folder), over the run's SSH connections. Small files are fetched at once;
 * captures are listed with their size and fetched on demand (they can be GBs).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bashCommand } from '../ssh/quote';
import { runDirWord } from '../ssh/run-dir';
import { channelEnd, type ConnectionManager } from '../ssh/connection';
import { execCollectRaw, type ExecExit } from '../ssh/exec';
import type { WorkerTarget } from '../ssh/types';
import { FIND_CAPTURES } from './capture-names';
import { ProfileFormatError } from './wasm-host';

export interface RemoteCapture {
  worker: number;
  /** Path on the worker. */
  remotePath: string;
  bytes: number;
  /** Last modification on the worker (ms since the epoch): with the size, what tells a rewritten capture. */
  mtimeMs: number;
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
      const list = await execCollectRaw(conn, bashCommand(`find ${dir} -maxdepth 7 ${FIND_CAPTURES} -type f -printf '%s %T@ %p\\n' 2>/dev/null`));
      const captures = list.stdout.toString('utf8').split('\n').filter(Boolean).map((l) => {
        const [, bytes, mtime, remotePath] = /^(\d+) ([\d.]+) (.*)$/.exec(l) ?? [];
        return { worker: w.index, bytes: Number(bytes), mtimeMs: Math.round(Number(mtime) * 1000), remotePath };
      }).filter((c): c is RemoteCapture => c.remotePath !== undefined);
      return { worker: w.index, dir: local, captures };
    } catch {
      return undefined;
    }
  }));
  return got.filter((g): g is WorkerArtifacts => g !== undefined);
}

/**
 * Copies one capture to `localFile` (bytes as written), streamed to disk: a capture of GBs is never held in
 * memory. It is written beside the target and renamed once complete, so a fetch cut short leaves no capture.
 */
export async function fetchCapture(worker: WorkerTarget, conns: ConnectionManager, remotePath: string, localFile: string, signal?: AbortSignal): Promise<void> {
  if (/[\n'\\]/.test(remotePath)) throw new ProfileFormatError(`unexpected capture path ${JSON.stringify(remotePath)}`);
  fs.mkdirSync(path.dirname(localFile), { recursive: true });
  const partial = `${localFile}.part`;
  const out = fs.createWriteStream(partial);
  const written = new Promise<void>((resolve, reject) => { out.on('finish', resolve); out.on('error', reject); });
  const err: Buffer[] = [];
  let end: ExecExit;
  try {
    const channel = await (await conns.get(worker)).exec(bashCommand(`cat -- '${remotePath}'`));
    channel.stderr.on('data', (b: Buffer) => err.push(b));
    channel.pipe(out);
    const onAbort = (): void => { channel.close(); };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    channel.end();
    [end] = await Promise.all([channelEnd(channel), written]);
    signal?.removeEventListener('abort', onAbort);
  } catch (e) {
    out.destroy();
    fs.rmSync(partial, { force: true });
    throw e;
  }
  if (end.code !== 0 || signal?.aborted) {
    fs.rmSync(partial, { force: true });
    throw new ProfileFormatError(signal?.aborted ? `fetching ${remotePath} from worker ${worker.index} was cancelled` : `cannot read ${remotePath} on worker ${worker.index}: ${Buffer.concat(err).toString('utf8').trim()}`);
  }
  fs.renameSync(partial, localFile);
}

/**
 * Every capture of a run's workers copied to `<destDir>/w<N>/<its capture folder>/<file>` (`tpw profile --run`):
 * listed as the run view lists them, fetched one after another. Returns the local files.
 */
export async function fetchRunCaptures(workers: readonly WorkerTarget[], conns: ConnectionManager, runId: string, destDir: string): Promise<string[]> {
  const scratch = fs.mkdtempSync(path.join(path.dirname(destDir), `.${path.basename(destDir)}-`));
  try {
    const files: string[] = [];
    for (const a of await fetchRunArtifacts(workers, conns, runId, scratch)) {
      for (const c of a.captures) {
        const local = path.join(destDir, `w${a.worker}`, ...c.remotePath.split('/').slice(-2));
        await fetchCapture(workers.find((w) => w.index === a.worker)!, conns, c.remotePath, local);
        files.push(local);
      }
    }
    return files;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
