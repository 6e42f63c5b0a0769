import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { TpwError } from '../errors';
import { tpwHome } from '../paths';
import { PRIORITIES } from './manifest';
import { gkeTpuType } from './tpu-types';

/**
 * `tpw gke use`: torchprime's `tp use` for a workspace — the cluster, its project and zone, the slices and TPU type a
 * run asks for, and where artifacts go — remembered per workspace folder so that `tpw run` (and "Run on TPU" in that
 * folder) goes there without flags. Kept under <TPW_HOME>/gke/use/, not in the workspace (it is synced to the pods,
 * and is the user's machine's choice, not the project's).
 */

/** torch_xla's TPU image, the one torchprime's launcher builds on (torchprime/launcher/Dockerfile). */
export const DEFAULT_IMAGE = 'us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:nightly_3.10_tpuvm_cxx11';

export const GkeUseSchema = z.object({
  /** The workspace folder it was set for (absolute). */
  workspace: z.string(),
  cluster: z.string().min(1),
  project: z.string().min(1),
  /** The cluster's location: a zone, or a region. */
  zone: z.string().min(1),
  numSlices: z.number().int().min(1),
  tpuType: z.string().min(1),
  artifactDir: z.string().optional(),
  image: z.string().min(1).default(DEFAULT_IMAGE),
  namespace: z.string().min(1).default('default'),
  priority: z.enum(PRIORITIES as unknown as [string, ...string[]]).default('medium'),
  /** Set against the local emulator (`tpw gke use --emulator`): later commands go there too. */
  emulator: z.boolean().default(false),
});
export type GkeUse = z.infer<typeof GkeUseSchema>;

function fileFor(workspace: string, home: string): string {
  const key = createHash('sha256').update(path.resolve(workspace)).digest('hex').slice(0, 16);
  return path.join(home, 'gke', 'use', `${key}.json`);
}

/** Checks what `tpw gke use` was given, in the words of the flag at fault. */
export function checkGkeUse(u: Pick<GkeUse, 'tpuType' | 'numSlices'> & Partial<GkeUse>): void {
  gkeTpuType(u.tpuType);
  if (!Number.isInteger(u.numSlices) || u.numSlices < 1) throw new TpwError('INVALID_ARGUMENT', `--num-slices must be a whole number of at least 1 (got ${u.numSlices}).`);
  if (u.artifactDir !== undefined && !/^gs:\/\/[a-z0-9][a-z0-9._-]{1,221}[a-z0-9](\/[^\s"'$`\\]*)?$/.test(u.artifactDir)) {
    throw new TpwError('INVALID_ARGUMENT', `--artifact-dir "${u.artifactDir}" must be a Cloud Storage folder (gs://BUCKET/PATH), as torchprime's \`tp use\` requires.`);
  }
}

export function saveGkeUse(u: GkeUse, home = tpwHome()): string {
  checkGkeUse(u);
  const file = fileFor(u.workspace, home);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(GkeUseSchema.parse(u), null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
  return file;
}

/** What `tpw gke use` remembered for this workspace, or undefined; a damaged file is named. */
export function loadGkeUse(workspace: string, home = tpwHome()): GkeUse | undefined {
  const file = fileFor(workspace, home);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return GkeUseSchema.parse(JSON.parse(text));
  } catch {
    throw new TpwError('INVALID_ARGUMENT', `The GKE settings ${file} (from \`tpw gke use\`) are damaged: run \`tpw gke use\` again.`);
  }
}
