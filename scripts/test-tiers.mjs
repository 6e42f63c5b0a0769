// Prints the unit test files of the fast tier (`npm run test:fast`), one per line: those that start nothing — no
// emulator, sshd, child process, worker thread, browser or bundle build — which is what keeps the tier under three
// minutes. A file is slow when its source names any of those; CONTRIBUTING.md says so, so a new test lands in the
// right tier by what it does, with no list to keep.
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const SLOW = /\b(Emulator|startSshd|emulatorPodFixture|startEmulatorApi|startGkeEmulator|SshWorkerPool|ensureFreshBundle|child_process|worker_threads|runTpw|tpwInProcess|spawnTpw|chromium|playwright)\b|emulator\/src\/(emulator|daemon|ssh-workers|vm-services)|helpers\/(cli|sshd|emulator-api|profiles)/;
const dir = 'test/unit';
const fast = readdirSync(dir)
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => path.join(dir, f))
  .filter((f) => !SLOW.test(readFileSync(f, 'utf8')));
process.stdout.write(fast.join('\n') + '\n');
