import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { isEnvName, shJoin, shPath, shQuote } from '../../extension/src/core/ssh/quote';
import { envFileContent } from '../../extension/src/core/run/remote-script';
import { startSshd, sshdAvailable, type SshdInstance } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-quote-'));
const marker = path.join(tmp, 'pwned');

/** Strings that break naive quoting; any of them reaching a shell unquoted would run `touch <marker>`. */
const HOSTILE: string[] = [
  '',
  "it's",
  "'",
  "'''",
  '"double" quotes',
  `$(touch ${marker})`,
  `\`touch ${marker}\``,
  `; touch ${marker}`,
  `&& touch ${marker} ||`,
  `| touch ${marker}`,
  `> ${marker}`,
  'line1\nline2',
  'trailing newline\n',
  'crlf\r\n',
  'tab\there',
  '*',
  '?',
  '[a-z]*',
  '~',
  '~root',
  '{a,b}',
  '$HOME',
  '${PATH}',
  '$\'\\x41\'',
  '!!',
  'back\\slash\\',
  'héllo wörld 日本語 🚀',
  '-n',
  '--help',
  '-e \\n',
  'A=b',
  '#not a comment',
  ' leading and trailing spaces ',
  'x'.repeat(10_000),
];

/** printf '%s\0' prints every argument as received, NUL-terminated: a lossless round trip. */
function roundTripCommand(args: string[]): string {
  return shJoin(['printf', '%s\\0', ...args]);
}

function parseNulList(out: string): string[] {
  const parts = out.split('\0');
  assert.equal(parts.pop(), '', 'output ends with a NUL');
  return parts;
}

describe('shQuote / shJoin', () => {
  it('keeps harmless words bare and quotes everything else', () => {
    assert.equal(shQuote('max_steps=10'), "'max_steps=10'"); // `=` quoted: as a first word it would be an assignment
    assert.equal(shQuote('tpu_trainer.train'), 'tpu_trainer.train');
    assert.equal(shQuote(''), "''");
    assert.equal(shQuote("it's"), `'it'\\''s'`);
    assert.equal(shJoin(['python3', '-m', 'a b']), "python3 -m 'a b'");
  });

  it('refuses NUL, which no argv element can carry', () => {
    assert.throws(() => shQuote('a\0b'), (e: unknown) => isTpwError(e, 'INVALID_ARGUMENT'));
  });

  it('round-trips hostile strings through a real `bash -c`', () => {
    const out = execFileSync('bash', ['-c', roundTripCommand(HOSTILE)], { encoding: 'utf8', cwd: tmp });
    assert.deepEqual(parseNulList(out), HOSTILE);
    assert.equal(fs.existsSync(marker), false, 'no hostile string was executed');
  });

  it('survives two levels of shell (a quoted script run by `bash -c` inside `bash -c`)', () => {
    const inner = roundTripCommand(HOSTILE);
    const out = execFileSync('bash', ['-c', `bash -c ${shQuote(inner)}`], { encoding: 'utf8', cwd: tmp });
    assert.deepEqual(parseNulList(out), HOSTILE);
    assert.equal(fs.existsSync(marker), false);
  });

  it('also works under a plain POSIX sh (dash), not only bash', () => {
    const sh = fs.existsSync('/bin/dash') ? '/bin/dash' : '/bin/sh';
    const out = execFileSync(sh, ['-c', roundTripCommand(HOSTILE.filter((s) => s !== '$\'\\x41\''))], { encoding: 'utf8', cwd: tmp });
    assert.deepEqual(parseNulList(out), HOSTILE.filter((s) => s !== '$\'\\x41\''));
  });

  it('shPath expands only a leading ~/ and quotes the rest', () => {
    const out = execFileSync('bash', ['-c', `printf '%s\\0' ${shPath('~/a b/$(x)')} ${shPath('/abs/~/c')} ${shPath('~')}`], {
      encoding: 'utf8',
      env: { ...process.env, HOME: '/home/h' },
    });
    assert.deepEqual(parseNulList(out), ['/home/h/a b/$(x)', '/abs/~/c', '/home/h']);
  });

  it('env file lines restore hostile values exactly and reject bad names', () => {
    const env = Object.fromEntries(HOSTILE.slice(0, 20).map((v, i) => [`V_${i}`, v]));
    const file = path.join(tmp, 'env');
    fs.writeFileSync(file, envFileContent(env));
    const script = `. ${shQuote(file)}; for i in $(seq 0 19); do n="V_$i"; printf '%s\\0' "\${!n}"; done`;
    const out = execFileSync('bash', ['-c', script], { encoding: 'utf8', cwd: tmp });
    assert.deepEqual(parseNulList(out), HOSTILE.slice(0, 20));
    assert.equal(isEnvName('A_1'), true);
    assert.equal(isEnvName('1A'), false);
    assert.throws(() => envFileContent({ 'BAD-NAME': 'x' }), (e: unknown) => isTpwError(e, 'INVALID_ARGUMENT'));
    assert.throws(() => envFileContent({ 'A;touch x': 'x' }), (e: unknown) => isTpwError(e, 'INVALID_ARGUMENT'));
  });
});

describe('quoting through a real OpenSSH sshd', () => {
  before(() => assert.ok(sshdAvailable(), 'OpenSSH sshd is missing at /usr/sbin/sshd: run bash scripts/setup.sh'));
  let sshd: SshdInstance;
  let conns: ConnectionManager;

  before(async () => {
    sshd = await startSshd({ host: `${testAddressPrefix(2)}.20` });
    conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'known_hosts') });
  });
  after(async () => {
    conns?.dispose();
    await sshd?.stop();
  });

  it('hostile strings arrive literally at the remote program', async () => {
    const conn = await conns.get({ host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey });
    const res = await execCollect(conn, `cd ${shQuote(tmp)} && ${roundTripCommand(HOSTILE)}`);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(parseNulList(res.stdout), HOSTILE);
    assert.equal(fs.existsSync(marker), false, 'no hostile string was executed on the remote side');
  });

  it('stdin content arrives byte for byte (how the env file travels)', async () => {
    const conn = await conns.get({ host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey });
    const payload = `${HOSTILE.join('\n')}\n`;
    const res = await execCollect(conn, 'cat', { stdin: payload });
    assert.equal(res.code, 0);
    assert.equal(res.stdout, payload);
  });
});

after(() => fs.rmSync(tmp, { recursive: true, force: true }));
