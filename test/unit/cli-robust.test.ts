/**
 * The CLI against failures it cannot fix by retrying, as a user's shell sees it (a spawned `tpw`): a changed
 * host key ends `tpw logs --follow` with the message and a non-zero exit instead of retrying forever; a reader
 * that closes the pipe early ends `tpw` quietly.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { emulatorPodFixture, spawnTpw } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('clirobust', testAddressPrefix(37), { before, after });

test('logs --follow ends with the message when a worker host key changed (no retry loop, no listener leak)', async () => {
  const recipe = pod.writeRecipe('long.sh', `bash -c 'echo up; sleep 1000'\n`);
  const r = await pod.tpw('run', recipe, '--vm', 'pod', '--detach');
  assert.equal(r.code, 0, r.err.join('\n'));
  const runId = r.out.at(-1) ?? '';
  const knownHosts = path.join(pod.home, 'known_hosts');
  const original = fs.readFileSync(knownHosts, 'utf8');
  const lines = original.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`[${testAddressPrefix(37)}.`));
  assert.ok(at >= 0, original);
  const keyFile = path.join(pod.home, 'other-host-key');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
  const [type, blob] = fs.readFileSync(`${keyFile}.pub`, 'utf8').split(' ');
  lines[at] = `${lines[at].split(' ')[0]} ${type} ${blob}`;
  fs.writeFileSync(knownHosts, lines.join('\n'));
  try {
    // It must end by itself: the timeout only guards against a hang, however busy the machine is.
    const f = await spawnTpw(['logs', runId, '--follow'], { cwd: pod.ws, env: { TPW_HOME: pod.home }, timeoutMs: 300_000 });
    assert.notEqual(f.code, 0, f.stderr);
    assert.match(f.stderr, /has CHANGED/, f.stderr);
    assert.doesNotMatch(f.stderr, /connection lost|resuming at byte/, 'no retry: a changed host key is final');
    assert.doesNotMatch(f.stderr, /MaxListenersExceeded/, f.stderr);
    assert.doesNotMatch(f.stderr, /^\s+at /m, 'no stack trace');
  } finally {
    fs.writeFileSync(knownHosts, original);
    await pod.tpw('stop', runId);
  }
});

test('a reader that closes after one line ends tpw quietly (exit 0, no stack trace)', async () => {
  // Several runs, so `tpw runs` writes several lines.
  for (let i = 0; i < 3; i++) await pod.tpw('run', pod.writeRecipe(`q${i}.sh`, 'true\n'), '--vm', 'pod');
  for (const argv of [['runs'], ['--help']]) {
    const script = `node --require ${JSON.stringify(require.resolve('tsx/cjs'))} ${JSON.stringify(path.resolve(__dirname, '../../extension/src/cli/main.ts'))} ${argv.join(' ')} 2>"$ERR" | head -1 >/dev/null; echo "\${PIPESTATUS[0]}"`;
    const errFile = path.join(pod.home, 'pipe-stderr');
    const status = execFileSync('bash', ['-c', script], { cwd: pod.ws, env: { ...process.env, TPW_HOME: pod.home, ERR: errFile }, encoding: 'utf8' }).trim();
    const stderr = fs.readFileSync(errFile, 'utf8');
    assert.equal(status, '0', `tpw ${argv.join(' ')} exited ${status}: ${stderr}`);
    assert.doesNotMatch(stderr, /EPIPE|^\s+at /m, stderr);
  }
});

test('a bad TPW_SSH_PROXY_COMMAND is a sentence naming the variable, not a JSON parse error', async () => {
  for (const bad of ['ssh -W %h:%p bastion', '"ssh"', '[]', '[1, 2]']) {
    const r = await spawnTpw(['vm', 'list'], { cwd: pod.ws, env: { TPW_HOME: pod.home, TPW_SSH_PROXY_COMMAND: bad } });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^tpw: TPW_SSH_PROXY_COMMAND must be a JSON array of strings \(an argv, e\.g\. '\["ssh", "-W", "%h:%p", "bastion"\]'\), not /m, `${bad}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /^\s+at |Unexpected token|SyntaxError/m, r.stderr);
  }
});
