import { openBackend, type Backend } from '../core/backend';
import { TpwError } from '../core/errors';
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
  const raw = process.env.TPW_SSH_PROXY_COMMAND;
  if (raw) {
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      v = undefined;
    }
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string')) {
      throw new TpwError('INVALID_ARGUMENT', `TPW_SSH_PROXY_COMMAND must be a JSON array of strings (an argv, e.g. '["ssh", "-W", "%h:%p", "bastion"]'), not ${JSON.stringify(raw.slice(0, 80))}.`);
    }
    command = v as string[];
  }
  const sshProxy = { jump: process.env.TPW_SSH_PROXY_JUMP || undefined, command };
  return openBackend({ useEmulator: g.emulator || !g.project, project: g.project, zones: zones.length ? zones : undefined, sshProxy, onNotice });
}
