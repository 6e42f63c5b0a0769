import { openBackend, type Backend } from '../core/backend';
import type { GlobalOptions } from './context';

/**
 * The emulator unless a project is given (flag or $TPW_PROJECT) and --emulator is not. Notices (OS Login took the
 * key) go to stderr, where the CLI says what it is doing, so stdout stays the command's answer.
 */
export function openCliBackend(g: GlobalOptions, onNotice: (m: string) => void = (m) => process.stderr.write(`${m}\n`)): Promise<Backend> {
  const envZones = (process.env.TPW_ZONES ?? '').split(',').map((z) => z.trim()).filter(Boolean);
  const zones = g.zone ? [g.zone] : envZones;
  // Bastion / IAP for real VMs: TPW_SSH_PROXY_JUMP=user@host[:port], TPW_SSH_PROXY_COMMAND='["prog","arg",...]'.
  let command: string[] | undefined;
  if (process.env.TPW_SSH_PROXY_COMMAND) {
    const v: unknown = JSON.parse(process.env.TPW_SSH_PROXY_COMMAND);
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error('TPW_SSH_PROXY_COMMAND must be a JSON array of strings (an argv).');
    command = v as string[];
  }
  const sshProxy = { jump: process.env.TPW_SSH_PROXY_JUMP || undefined, command };
  return openBackend({ useEmulator: g.emulator || !g.project, project: g.project, zones: zones.length ? zones : undefined, sshProxy, onNotice });
}
