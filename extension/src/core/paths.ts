import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Where TPU Workbench keeps its local state: known_hosts, the emulator's state and keys.
 * `TPW_HOME` overrides it so tests and parallel emulators never share state.
 */
export function tpwHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.TPW_HOME && env.TPW_HOME.length > 0 ? path.resolve(env.TPW_HOME) : path.join(os.homedir(), '.tpw');
}

export function emulatorDir(home = tpwHome()): string {
  return path.join(home, 'emulator');
}

export function knownHostsFile(home = tpwHome()): string {
  return path.join(home, 'known_hosts');
}
