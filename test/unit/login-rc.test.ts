/**
 * The user's ~/.bashrc runs once per SSH session, not twice. sshd runs each command with the login shell,
 * which on Debian/Ubuntu sources ~/.bashrc (it sees SSH_CLIENT); our `bash -c` inside it used to source it
 * again (bash execs a lone command with SHLVL put back, so the inner shell looked top-level too). Real sshd,
 * with HOME pointed at a test folder whose .bashrc counts its runs and exports a marker.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { attachRun, startDetached } from '../../extension/src/core/run/detached';
import { bashCommand } from '../../extension/src/core/ssh/quote';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { startSshd, type SshdInstance } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-login-rc-'));
const home = path.join(tmp, 'home');
const counter = path.join(tmp, 'rc-runs');
let sshd: SshdInstance;
let conns: ConnectionManager;
let worker: WorkerTarget;

const rcRuns = (): number => (fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').split('\n').filter(Boolean).length : 0);

before(async () => {
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, '.bashrc'), `echo "$$" >> '${counter}'\nexport TPW_RC_MARK=from-bashrc\n`);
  sshd = await startSshd({ host: `${testAddressPrefix(2)}.40`, extraConfig: [`SetEnv HOME=${home}`] });
  conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'known_hosts') });
  worker = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, index: 0 };
});

after(async () => {
  conns?.dispose();
  await sshd?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('login shell rc', () => {
  it('the premise holds here: a plain nested `bash -c` sources ~/.bashrc twice', async () => {
    fs.rmSync(counter, { force: true });
    const out = await execCollect(await conns.get(worker), `bash -c 'echo "$TPW_RC_MARK"'`);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.trim(), 'from-bashrc', 'sshd did not run the test .bashrc at all: HOME was not taken from SetEnv');
    assert.equal(rcRuns(), 2, 'this bash does not source ~/.bashrc for ssh commands; the test below would prove nothing');
  });

  it('bashCommand sources it once, and what it exports still reaches the script', async () => {
    fs.rmSync(counter, { force: true });
    const out = await execCollect(await conns.get(worker), bashCommand('echo "$TPW_RC_MARK"'));
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.trim(), 'from-bashrc');
    assert.equal(rcRuns(), 1);
  });

  it('a detached run sources it once per session: start and one tail, and the program sees its exports', async () => {
    fs.rmSync(counter, { force: true });
    const runId = `rc-${process.pid}`;
    const spec = { runId, workers: [worker], argv: ['bash', '-c', 'echo "mark=$TPW_RC_MARK"'], cwd: tmp, env: {} };
    const runsRoot = path.join(tmp, 'runs');
    await startDetached(spec, conns, { runsRoot });
    assert.equal(rcRuns(), 1, 'start');
    const lines: string[] = [];
    const handle = attachRun(runId, [worker], conns, { onLine: (_w, _s, line) => lines.push(line) }, { runsRoot });
    const result = await handle.result;
    assert.equal(result.workers[0]?.exitCode, 0);
    assert.deepEqual(lines, ['mark=from-bashrc']);
    // The program's own `bash -c` is not an SSH top-level shell (stdin is /dev/null, SHLVL ≥ 2): start + tail.
    assert.equal(rcRuns(), 2);
  });
});
