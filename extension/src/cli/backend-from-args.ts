import { openBackend, type Backend } from '../core/backend';
import type { GlobalOptions } from './main';

/** The emulator unless a project is given (flag or $TPW_PROJECT) and --emulator is not. */
export function openCliBackend(g: GlobalOptions): Promise<Backend> {
  const envZones = (process.env.TPW_ZONES ?? '').split(',').map((z) => z.trim()).filter(Boolean);
  const zones = g.zone ? [g.zone] : envZones;
  return openBackend({ useEmulator: g.emulator || !g.project, project: g.project, zones: zones.length ? zones : undefined });
}
