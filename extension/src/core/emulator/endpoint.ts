import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { emulatorDir } from '../paths';

/**
 * The file a running emulator writes (`<TPW_HOME>/emulator/endpoint.json`, mode 0600) so that the CLI, the
 * extension and tests can find it. It is the whole contract between the emulator and its clients:
 * the REST endpoint for the `@google-cloud/tpu` client and how to reach the workers over SSH.
 */
export const EmulatorEndpointSchema = z.object({
  pid: z.number().int(),
  /** REST API at http://{host}:{restPort} */
  host: z.string(),
  restPort: z.number().int(),
  /** Every worker's SSH server listens on this port, each on its own loopback address. */
  sshPort: z.number().int(),
  /** The project and zones the emulator serves. */
  project: z.string(),
  zones: z.array(z.string()),
  /** SSH login name on the workers. */
  username: z.string(),
  /** Private key (OpenSSH format, 0600) that the workers accept. */
  clientKeyPath: z.string(),
  startedAt: z.string(),
});
export type EmulatorEndpoint = z.infer<typeof EmulatorEndpointSchema>;

export function endpointFile(dir = emulatorDir()): string {
  return path.join(dir, 'endpoint.json');
}

/** Reads the endpoint file; returns undefined if there is none or its process is gone. */
export function readEmulatorEndpoint(dir = emulatorDir()): EmulatorEndpoint | undefined {
  let raw: string;
  try {
    raw = fs.readFileSync(endpointFile(dir), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = EmulatorEndpointSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) return undefined;
  if (!isAlive(parsed.data.pid)) return undefined;
  return parsed.data;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
