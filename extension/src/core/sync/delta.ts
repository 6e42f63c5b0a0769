import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TpwError } from '../errors';
import { tpwHome } from '../paths';
import { channelEnd, targetLabel, type ConnectionManager, type SshConnection } from '../ssh/connection';
import { bashCommand, shPath } from '../ssh/quote';
import type { WorkerTarget } from '../ssh/types';
import { tarStream } from './tar';
import type { WorkspaceFile } from './workspace-files';

/**
 * Delta sync of a workspace to many workers. Each worker keeps, next to its copy (`<dest>.manifest`), the
 * manifest of what we last wrote there: first line its digest, then JSON {rel: [size, mtimeMs, mode, sha256]}.
 *
 *   one exec per worker, in parallel: "is your digest D?" — yes: done (a no-change sync is one round trip);
 *   no: the worker prints its manifest and waits on stdin, where we send one tar stream with the changed files
 *   plus `.tpw-sync/deleted` (NUL-separated) and the new manifest; the worker extracts in place, deletes, and
 *   records the manifest last, so an interrupted sync is simply redone next time.
 *
 * Workers with the same difference share one archive (on a pod they usually all match). Content hashes are
 * cached locally by (path, size, mtime), so a 200 MB workspace is hashed once, not on every run.
 */

export type Manifest = Record<string, [size: number, mtimeMs: number, mode: number, sha256: string]>;

export interface SyncProgress {
  worker: number;
  phase: 'checking' | 'sending' | 'done';
  files: number;
  bytes: number;
  /** Bytes of the archive sent so far (phase "sending"). */
  sentBytes?: number;
}

export interface SyncResult {
  worker: number;
  upToDate: boolean;
  sentFiles: number;
  deletedFiles: number;
  bytes: number;
}

/** What the worker prints: its copy is current; or, after its manifest, the marker (JSON has no raw newline). */
const UP_TO_DATE = 'TPW-UP-TO-DATE';
const MANIFEST_END = 'TPW-MANIFEST-END';

function hashCachePath(root: string, home = tpwHome()): string {
  return path.join(home, 'sync-cache', `${createHash('sha256').update(path.resolve(root)).digest('hex').slice(0, 16)}.json`);
}

/** The manifest of local files, hashing only what changed since the last call (cache under TPW_HOME). */
export async function buildManifest(root: string, files: readonly WorkspaceFile[], home?: string): Promise<Manifest> {
  const cacheFile = hashCachePath(root, home);
  let cache: Manifest = {};
  try {
    cache = JSON.parse(fs.readFileSync(cacheFile, 'utf8')) as Manifest;
  } catch {
    // first sync of this workspace
  }
  const out: Manifest = {};
  for (const f of files) {
    const c = cache[f.rel];
    const mode = f.mode & 0o111 ? 0o755 : 0o644;
    if (c && c[0] === f.size && c[1] === f.mtimeMs) {
      out[f.rel] = [f.size, f.mtimeMs, mode, c[3]];
      continue;
    }
    const hash = createHash('sha256');
    for await (const chunk of fs.createReadStream(f.abs)) hash.update(chunk as Buffer);
    out[f.rel] = [f.size, f.mtimeMs, mode, hash.digest('hex')];
  }
  fs.mkdirSync(path.dirname(cacheFile), { recursive: true });
  fs.writeFileSync(`${cacheFile}.tmp`, JSON.stringify(out));
  fs.renameSync(`${cacheFile}.tmp`, cacheFile);
  return out;
}

export function manifestText(m: Manifest): string {
  const sorted: Manifest = {};
  for (const k of Object.keys(m).sort()) sorted[k] = m[k];
  return JSON.stringify(sorted);
}

export function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What to send to a worker whose manifest is `remote`: changed or new files (by content and mode), and deletions. */
export function diffManifests(local: Manifest, remote: Manifest): { changed: string[]; deleted: string[] } {
  const changed = Object.keys(local).filter((k) => {
    const r = remote[k];
    return !r || r[0] !== local[k][0] || r[2] !== local[k][2] || r[3] !== local[k][3];
  });
  // Paths from the worker's file are only ever deleted *there*; still, nothing that could leave the copy.
  const deleted = Object.keys(remote).filter((k) => !(k in local) && !k.split('/').includes('..') && !k.startsWith('/'));
  return { changed: changed.sort(), deleted: deleted.sort() };
}

export interface DeltaSyncOptions {
  root: string;
  files: readonly WorkspaceFile[];
  /** The copy on each worker, relative to the login's home unless absolute (`~/` allowed); a function gives each worker its own (benchmarks: many "hosts" on one disk). */
  dest: string | ((w: WorkerTarget) => string);
  workers: readonly WorkerTarget[];
  conns: ConnectionManager;
  signal?: AbortSignal;
  onProgress?: (p: SyncProgress) => void;
  home?: string;
}

/** Syncs to every worker in parallel; rejects with a TpwError naming the first worker that failed. */
export async function deltaSync(o: DeltaSyncOptions): Promise<SyncResult[]> {
  const local = await buildManifest(o.root, o.files, o.home);
  const text = manifestText(local);
  const digest = digestOf(text);
  const destOf = (w: WorkerTarget) => shPath((typeof o.dest === 'function' ? o.dest(w) : o.dest).replace(/\/+$/, ''));
  const byRel = new Map(o.files.map((f) => [f.rel, f]));
  // One archive per distinct difference, shared by every worker that needs it.
  const archives = new Map<string, Promise<Buffer>>();
  const progress = o.onProgress ?? (() => undefined);

  const one = async (w: WorkerTarget): Promise<SyncResult> => {
    const dest = destOf(w);
    const conn = await o.conns.get(w);
    progress({ worker: w.index, phase: 'checking', files: 0, bytes: 0 });
    // One exec does both halves: the worker answers with its manifest (or "up to date") on stdout, then
    // reads the archive we send on stdin — a changed sync costs one session setup, like a no-change one.
    const script = [
      `dest=${dest}`,
      `if [ -d "$dest" ] && [ "$(head -n 1 -- "$dest.manifest" 2>/dev/null)" = ${digest} ]; then echo ${UP_TO_DATE}; exit 0; fi`,
      'tail -n +2 -- "$dest.manifest" 2>/dev/null',
      `printf '\\n${MANIFEST_END}\\n'`,
      'set -eu',
      'mkdir -p -- "$dest"',
      'rm -rf -- "$dest/.tpw-sync"',
      'tar -xf - -C "$dest" --no-same-owner',
      // Deletions: NUL-separated, so any file name survives; `--` and the "$dest/" prefix keep them inside.
      'if [ -s "$dest/.tpw-sync/deleted" ]; then while IFS= read -r -d "" f; do rm -f -- "$dest/$f"; done < "$dest/.tpw-sync/deleted"; fi',
      'mv -f -- "$dest/.tpw-sync/manifest" "$dest.manifest"',
      'rm -rf -- "$dest/.tpw-sync"',
    ].join('\n');
    let sent: { files: number; deleted: number; bytes: number } | undefined;
    await twoPhaseExec(conn, w, script, o.signal, async (answer) => {
      if (answer === undefined) return undefined; // up to date
      let remote: Manifest = {};
      try {
        remote = answer.trim() ? (JSON.parse(answer) as Manifest) : {};
      } catch {
        remote = {}; // a damaged record: send everything
      }
      const { changed, deleted } = diffManifests(local, remote);
      const key = digestOf(`${changed.join('\0')}\u0001${deleted.join('\0')}`);
      let archive = archives.get(key);
      if (!archive) {
        archive = buildArchive(changed.map((r) => byRel.get(r)).filter((f): f is WorkspaceFile => f !== undefined), deleted, `${digest}\n${text}\n`);
        archives.set(key, archive);
      }
      const data = await archive;
      const bytes = changed.reduce((n, r) => n + (local[r]?.[0] ?? 0), 0);
      sent = { files: changed.length, deleted: deleted.length, bytes: data.length };
      progress({ worker: w.index, phase: 'sending', files: changed.length, bytes, sentBytes: 0 });
      return data;
    });
    progress({ worker: w.index, phase: 'done', files: sent?.files ?? 0, bytes: sent?.bytes ?? 0, sentBytes: sent?.bytes ?? 0 });
    if (!sent) return { worker: w.index, upToDate: true, sentFiles: 0, deletedFiles: 0, bytes: 0 };
    return { worker: w.index, upToDate: false, sentFiles: sent.files, deletedFiles: sent.deleted, bytes: sent.bytes };
  };
  return Promise.all(o.workers.map(one));
}

async function buildArchive(files: WorkspaceFile[], deleted: string[], manifest: string): Promise<Buffer> {
  // The two control files travel inside the same stream, written to a private temp folder first.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-sync-'));
  try {
    const meta: WorkspaceFile[] = [];
    for (const [name, body] of [
      ['deleted', deleted.length ? deleted.join('\0') + '\0' : ''],
      ['manifest', manifest],
    ] as const) {
      const abs = path.join(dir, name);
      fs.writeFileSync(abs, body);
      meta.push({ rel: `.tpw-sync/${name}`, abs, size: Buffer.byteLength(body), mtimeMs: Date.now(), mode: 0o600 });
    }
    const chunks: Buffer[] = [];
    for await (const c of tarStream([...files, ...meta])) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `script`, reads its stdout up to the up-to-date line or the manifest-end marker, asks `respond` what to
 * send on stdin (undefined: nothing), sends it with EOF, and waits for exit 0.
 */
async function twoPhaseExec(conn: SshConnection, w: WorkerTarget, script: string, signal: AbortSignal | undefined, respond: (manifest: string | undefined) => Promise<Buffer | undefined>): Promise<void> {
  const channel = await conn.exec(bashCommand(script));
  const end = channelEnd(channel);
  const onAbort = () => channel.close();
  signal?.addEventListener('abort', onAbort, { once: true });
  let out = Buffer.alloc(0);
  let err = '';
  let answered = false;
  let failure: unknown;
  channel.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
  channel.on('data', (b: Buffer) => {
    if (answered) return;
    out = Buffer.concat([out, b]);
    const text = out.toString('utf8');
    let manifest: string | undefined;
    if (text.startsWith(`${UP_TO_DATE}\n`)) manifest = undefined;
    else {
      const at = text.indexOf(`\n${MANIFEST_END}\n`);
      if (at < 0) return;
      manifest = text.slice(0, at);
    }
    answered = true;
    respond(manifest).then(
      (data) => (data ? channel.end(data) : channel.end()),
      (e: unknown) => {
        failure = e;
        channel.close();
      },
    );
  });
  try {
    const exit = await end;
    if (signal?.aborted) throw new TpwError('CANCELLED', 'The sync was cancelled.');
    if (failure) throw failure;
    if (exit.code !== 0 || !answered) {
      const why = err.trim().split('\n').pop() || (exit.lost ? 'the connection dropped' : `exit ${exit.code ?? exit.signal}`);
      throw new TpwError('UNAVAILABLE', `Sync to ${targetLabel(w)} failed: ${why}`);
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
