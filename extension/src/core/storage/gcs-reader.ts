import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TpwError } from '../errors';

/**
 * Reading Cloud Storage over its JSON API as Google serves it (`GET /storage/v1/b/B/o?prefix=…`, a page at a time
 * through `nextPageToken`; `GET /storage/v1/b/B/o/NAME?alt=media` for the bytes), with a bearer token from the same
 * credentials the GKE target uses. What a GKE run's pods copied to its artifact folder comes back through it. The
 * endpoint is `https://storage.googleapis.com` on Google and the emulator's REST server locally.
 */

/** Where a bearer token comes from (gke/credentials.ts makes them: ADC, or the emulator's token). */
export interface TokenSource {
  /** For messages: "Application Default Credentials", "the local emulator's token". */
  readonly describe: string;
  token(): Promise<string>;
}

export const GOOGLE_STORAGE_ENDPOINT = 'https://storage.googleapis.com';

export interface GcsObject {
  name: string;
  bytes: number;
  /** Last update (ms since the epoch): with the size, what tells a rewritten object. */
  updatedMs: number;
}

export interface GsUrl {
  bucket: string;
  /** The folder inside the bucket, without leading or trailing `/` ('' for the bucket's root). */
  path: string;
}

export function parseGsUrl(url: string): GsUrl {
  const m = /^gs:\/\/([a-z0-9][a-z0-9._-]{1,221}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m) throw new TpwError('INVALID_ARGUMENT', `"${url}" is not a Cloud Storage folder (gs://BUCKET/PATH).`);
  return { bucket: m[1], path: (m[2] ?? '').replace(/^\/+|\/+$/g, '') };
}

interface ListPage {
  items?: Array<{ name: string; size?: string; updated?: string }>;
  nextPageToken?: string;
}

export class GcsReader {
  constructor(
    private readonly tokens: TokenSource,
    private readonly endpoint: string = GOOGLE_STORAGE_ENDPOINT,
    /** Objects per listing page (the API's maxResults; Google's default and cap is 1000). */
    private readonly pageSize = 1000,
  ) {}

  /** Every object of `bucket` whose name starts with `prefix`, in name order, following every page. */
  async list(bucket: string, prefix: string, signal?: AbortSignal): Promise<GcsObject[]> {
    const out: GcsObject[] = [];
    let pageToken: string | undefined;
    do {
      const q = new URLSearchParams({ prefix, maxResults: String(this.pageSize), fields: 'items(name,size,updated),nextPageToken' });
      if (pageToken) q.set('pageToken', pageToken);
      const page = (await (await this.get(bucket, `/storage/v1/b/${encodeURIComponent(bucket)}/o?${q.toString()}`, signal)).json()) as ListPage;
      for (const i of page.items ?? []) out.push({ name: i.name, bytes: Number(i.size ?? 0), updatedMs: i.updated ? Date.parse(i.updated) : 0 });
      pageToken = page.nextPageToken;
    } while (pageToken);
    return out;
  }

  /**
   * Object `name` to `localFile`, streamed to disk (a capture can be GBs), written beside it and renamed once
   * complete so that a download cut short leaves nothing behind.
   */
  async download(bucket: string, name: string, localFile: string, signal?: AbortSignal): Promise<void> {
    const res = await this.get(bucket, `/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}?alt=media`, signal);
    fs.mkdirSync(path.dirname(localFile), { recursive: true });
    const partial = `${localFile}.part`;
    try {
      await pipeline(Readable.fromWeb(res.body as never), fs.createWriteStream(partial), { signal });
    } catch (e) {
      fs.rmSync(partial, { force: true });
      if (signal?.aborted) throw new TpwError('CANCELLED', `Downloading gs://${bucket}/${name} was cancelled.`, { cause: e });
      throw new TpwError('UNAVAILABLE', `Downloading gs://${bucket}/${name} broke off: ${(e as Error).message}`, { cause: e });
    }
    fs.renameSync(partial, localFile);
  }

  /** One call; any refusal as one line naming the bucket and where the credential came from. */
  private async get(bucket: string, pathAndQuery: string, signal?: AbortSignal): Promise<Response> {
    const token = await this.tokens.token();
    let res: Response;
    try {
      res = await fetch(`${this.endpoint.replace(/\/+$/, '')}${pathAndQuery}`, { headers: { Authorization: `Bearer ${token}` }, ...(signal ? { signal } : {}) });
    } catch (e) {
      throw new TpwError(signal?.aborted ? 'CANCELLED' : 'UNAVAILABLE', `Cannot reach Cloud Storage at ${this.endpoint} for bucket "${bucket}": ${(e as Error).message}`, { cause: e });
    }
    if (res.ok) return res;
    const message = await errorMessage(res);
    if (res.status === 401) throw new TpwError('UNAUTHENTICATED', `Cloud Storage refused ${this.tokens.describe} for bucket "${bucket}" (${message}); run \`gcloud auth application-default login\`.`);
    if (res.status === 403) throw new TpwError('PERMISSION_DENIED', `Cloud Storage denies ${this.tokens.describe} access to bucket "${bucket}" (${message}).`);
    if (res.status === 404 && /bucket/i.test(message)) throw new TpwError('NOT_FOUND', `Cloud Storage bucket "${bucket}" does not exist.`);
    if (res.status === 404) throw new TpwError('NOT_FOUND', `Cloud Storage has no such object in bucket "${bucket}" (${message}).`);
    throw new TpwError('UNAVAILABLE', `Cloud Storage answered ${res.status} for bucket "${bucket}": ${message}`);
  }
}

/** Google's error body's message (one line), else the status text. */
async function errorMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const m = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
    if (m) return m.split('\n')[0];
  } catch {
    // not JSON: the text itself
  }
  return (text.split('\n')[0] || res.statusText).slice(0, 300);
}
