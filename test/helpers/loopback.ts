import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Loopback addresses for a test file's emulated workers that no other test file running at the same time uses.
 * Test files run concurrently (scripts/test-suite.sh), each emulator puts its workers on `<prefix>.1 … .254`, and
 * two emulators on one prefix would share worker addresses (and any fixed port on them). So each test process
 * claims a second octet of its own (127.X.*.*; Linux routes all of 127/8 to lo) with an exclusive lock file that
 * names its pid: a claim whose process is gone is taken over; the claim is released when the process exits.
 * 127.0.*.* is left to emulators outside the tests (the demo's, a user's).
 */

const SLOTS = path.join(os.tmpdir(), `tpw-test-loopback-${process.getuid?.() ?? 'u'}`);
const FIRST = 20;
const LAST = 250;
let claimed: number | undefined;

/** `127.<this process's octet>.<n>`: a worker address prefix unique to this file (n: 1–254, the file's own number). */
export function testAddressPrefix(n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > 254) throw new Error(`testAddressPrefix: ${n} is not 1–254`);
  return `127.${octet()}.${n}`;
}

/** `text` as a literal in a RegExp (for addresses in expected output). */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function octet(): number {
  if (claimed !== undefined) return claimed;
  fs.mkdirSync(SLOTS, { recursive: true, mode: 0o700 });
  // Start at a pid-derived place so concurrent processes rarely contend for the same file.
  const span = LAST - FIRST + 1;
  for (let i = 0; i < span; i++) {
    const candidate = FIRST + ((process.pid + i) % span);
    if (claim(path.join(SLOTS, String(candidate)))) {
      claimed = candidate;
      process.once('exit', () => fs.rmSync(path.join(SLOTS, String(candidate)), { force: true }));
      return candidate;
    }
  }
  throw new Error(`no free loopback octet in ${SLOTS}: ${span} test processes hold one`);
}

function claim(file: string): boolean {
  if (create(file)) return true;
  const owner = readPid(file);
  if (owner === undefined || alive(owner)) return false;
  // The owner is gone. Move its claim aside (only one process can move a given file), check it was the dead one's
  // and not a claim made since, then claim it as anyone would: the exclusive create decides who gets it.
  const aside = `${file}.stale.${process.pid}`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return false;
  }
  if (readPid(aside) !== owner) {
    fs.renameSync(aside, file);
    return false;
  }
  fs.rmSync(aside, { force: true });
  return create(file);
}

function create(file: string): boolean {
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
