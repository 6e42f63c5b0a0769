import * as path from 'node:path';
import type { GkeRunRef } from './registry';
import { parseGsUrl, type GcsReader } from '../storage/gcs-reader';
import { isCaptureName } from '../profiles/capture-names';

/**
 * A GKE run's profile captures, which travel through Cloud Storage: the trainer writes them in the pod's run
 * folder (`/tpw/run/profile`, gone with the pod), each pod copies that folder to
 * `<artifact dir>/<workload>/profile/<slice>-<host>` at its end (gke-plan.ts), and they are listed and fetched back
 * from there, per pod (`s0w0`…), with the GKE target's own credentials.
 */

export interface GkeCapture {
  /** TPW_WORKER_INDEX of the pod: slice × pods per slice + host. */
  worker: number;
  /** The pod as the log prefixes it: `s<slice>w<host>`. */
  pod: string;
  bucket: string;
  object: string;
  /** The object's path below its pod's folder. */
  relative: string;
  bytes: number;
  updatedMs: number;
}

/** Where a run's pods put their profiles: `gs://B/D/<workload>/profile/`, as bucket and object prefix. */
export function gkeProfilePrefix(ref: Pick<GkeRunRef, 'artifactDir' | 'jobset'>): { bucket: string; prefix: string } | undefined {
  if (!ref.artifactDir) return undefined;
  const { bucket, path: dir } = parseGsUrl(ref.artifactDir);
  return { bucket, prefix: `${dir ? `${dir}/` : ''}${ref.jobset}/profile/` };
}

/** Every capture the run's pods copied to its artifact folder; none where the run has no artifact folder. */
export async function listGkeCaptures(storage: GcsReader, ref: GkeRunRef, signal?: AbortSignal): Promise<GkeCapture[]> {
  const at = gkeProfilePrefix(ref);
  if (!at) return [];
  const out: GkeCapture[] = [];
  for (const o of await storage.list(at.bucket, at.prefix, signal)) {
    const m = /^(\d+)-(\d+)\/(.+)$/.exec(o.name.slice(at.prefix.length));
    if (!m || !isCaptureName(m[3])) continue;
    const [slice, host] = [Number(m[1]), Number(m[2])];
    out.push({ worker: slice * ref.podsPerSlice + host, pod: `s${slice}w${host}`, bucket: at.bucket, object: o.name, relative: m[3], bytes: o.bytes, updatedMs: o.updatedMs });
  }
  return out;
}

/** Where a capture lands locally: `<destDir>/<pod>/<its path below the pod's folder>`, so one folder per pod. */
export function localCapturePath(destDir: string, c: GkeCapture): string {
  return path.join(destDir, c.pod, ...c.relative.split('/').filter((p) => p !== '..' && p !== '.' && p !== ''));
}

/** Fetches every capture of the run into `destDir` (one folder per pod); returns the local files. */
export async function fetchGkeCaptures(storage: GcsReader, ref: GkeRunRef, destDir: string, signal?: AbortSignal): Promise<string[]> {
  const files: string[] = [];
  for (const c of await listGkeCaptures(storage, ref, signal)) {
    const local = localCapturePath(destDir, c);
    await storage.download(c.bucket, c.object, local, signal);
    files.push(local);
  }
  return files;
}
