import { gzipSync } from 'node:zlib';
import { TpwError } from '../errors';
import { tarStream } from '../sync/tar';
import { listWorkspaceFiles, type WorkspaceListing } from '../sync/workspace-files';

/**
 * The workspace as it reaches a GKE workload's pods without an image build (docs/gke.md): the same files a VM sync
 * sends (`git ls-files`, .gitignore, .tpuignore), as one gzip tarball cut into parts small enough for a ConfigMap
 * each (etcd keeps an object under 1.5 MiB); an init container in every pod concatenates and unpacks them.
 */

/** Bytes per ConfigMap part: well under etcd's 1.5 MiB request limit, with room for the object around it. */
export const PART_BYTES = 768 * 1024;
/** The most a workspace may weigh compressed (about 85 ConfigMaps). */
export const MAX_ARCHIVE_BYTES = 64 * 1024 * 1024;

export interface WorkspaceArchive {
  listing: WorkspaceListing;
  /** Uncompressed bytes of the files. */
  bytes: number;
  /** The gzip tarball, cut into parts of at most PART_BYTES. */
  parts: Buffer[];
}

export async function archiveWorkspace(root: string): Promise<WorkspaceArchive> {
  const listing = listWorkspaceFiles(root);
  const chunks: Buffer[] = [];
  for await (const c of tarStream(listing.files)) chunks.push(c as Buffer);
  const gz = gzipSync(Buffer.concat(chunks), { level: 6 });
  if (gz.length > MAX_ARCHIVE_BYTES) {
    throw new TpwError(
      'FAILED_PRECONDITION',
      `The workspace ${root} is ${(gz.length / 1024 / 1024).toFixed(1)} MiB compressed, over the ${MAX_ARCHIVE_BYTES / 1024 / 1024} MiB a GKE run carries in ConfigMaps: leave data and checkpoints out with a .tpuignore.`,
    );
  }
  const parts: Buffer[] = [];
  for (let i = 0; i < gz.length; i += PART_BYTES) parts.push(gz.subarray(i, i + PART_BYTES));
  if (parts.length === 0) parts.push(gz);
  return { listing, bytes: listing.files.reduce((n, f) => n + f.size, 0), parts };
}
