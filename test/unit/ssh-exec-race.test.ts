/**
 * Regression: a command that ends at once can have its open confirmation, exit status and close arrive in one
 * TCP read; ssh2 then emits them synchronously after the exec callback. Every exit code must still be seen. And a
 * connection whose socket ended (or that failed a command because its socket is gone) is never handed out again.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { startSshd, type SshdInstance } from '../helpers/sshd';

let sshds: SshdInstance[] = [];
let knownHosts: string;

before(async () => {
  sshds = await Promise.all([1, 2, 3, 4].map((i) => startSshd({ host: `127.0.5.${i}`, extraConfig: ['SetEnv SHLVL=1'] }) /* skips root's slow pyenv bashrc, so exit comes at once */));
  knownHosts = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-race-')), 'known_hosts');
});
after(async () => {
  await Promise.all(sshds.map((s) => s.stop()));
});

test('instant commands on fresh connections never lose their exit status', async () => {
  const results: { code: number | null; lost: boolean }[] = [];
  for (let round = 0; round < 25; round++) {
    const conns = new ConnectionManager({ knownHostsPath: knownHosts });
    try {
      const r = await Promise.all(sshds.map(async (s, i) => execCollect(await conns.get(s), `exit ${(round + i) % 5}`)));
      results.push(...r);
      r.forEach((x, i) => assert.equal(x.code, (round + i) % 5, `round ${round} worker ${i}`));
    } finally {
      conns.dispose();
    }
  }
  assert.equal(results.filter((r) => r.lost).length, 0);
  assert.equal(results.length, 100);
});

test('a connection whose socket ended is not handed out again: the next caller gets a new one that works', async () => {
  const conns = new ConnectionManager({ knownHostsPath: knownHosts });
  try {
    const first = await conns.get(sshds[0]);
    assert.equal((await execCollect(first, 'echo one')).stdout, 'one\n');
    // Ending our side leaves the socket unwritable at once, while ssh2's 'close' waits for the server to close
    // too: a caller in between used to get this connection back and fail with "Not connected".
    first.client.end();
    const again = await conns.get(sshds[0]);
    assert.notEqual(again, first, 'a new connection, not the ending one');
    assert.equal((await execCollect(again, 'echo two')).stdout, 'two\n');
    // One that fails a command because its socket is gone is forgotten too.
    again.client.destroy();
    await assert.rejects(execCollect(again, 'true'));
    const third = await conns.get(sshds[0]);
    assert.notEqual(third, again);
    assert.equal((await execCollect(third, 'echo three')).stdout, 'three\n');
  } finally {
    conns.dispose();
  }
});
