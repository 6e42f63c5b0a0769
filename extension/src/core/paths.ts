import * as path from 'node:path';
import { tpwHome } from '../../../protocol/node/emulator-endpoint';

/**
 * Where TPU Workbench keeps its local state: known_hosts, the emulator's folder. `TPW_HOME` overrides it so tests
 * and parallel emulators never share state; the emulator finds the same folder the same way (protocol/node).
 */
export { emulatorDir, tpwHome } from '../../../protocol/node/emulator-endpoint';

export function knownHostsFile(home = tpwHome()): string {
  return path.join(home, 'known_hosts');
}
