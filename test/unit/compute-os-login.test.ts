/**
 * Issue 14, OS Login on Compute Engine TPU VMs: the real `@google-cloud/os-login` (REST) and `@google-cloud/compute`
 * clients against a real emulator. Compute Engine's rule (Google's "About OS Login" / "Set up OS Login"): OS Login
 * governs a VM when `enable-oslogin` is TRUE in its own metadata, or else in the project's common instance
 * metadata; the VM's value overrides the project's. A VM under OS Login ignores metadata `ssh-keys` and lets in the
 * caller's OS Login POSIX user (a user account's email with non-alphanumerics as "_") with the keys imported through
 * users.importSshPublicKey — which is what `gcloud compute ssh` does, and what the backend does before it connects.
 */
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { main } from '../../extension/src/cli/main';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { emulatorOsLogin, type OsLoginAccess } from '../../extension/src/core/compute/os-login';
import { Emulator } from '../../emulator/src/emulator';
import { EMULATOR_ACCOUNT } from '../../emulator/src/os-login';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { ensureExtensionKey, generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { findNode } from '../../extension/src/core/slices/find';
import { testAddressPrefix } from '../helpers/loopback';

const run = promisify(execFile);
/** The POSIX name OS Login gives tpw-emulator-user@example.com (Google's rule for user accounts). */
const OS_LOGIN_USER = 'tpw_emulator_user_example_com';

describe('OS Login on Compute Engine TPU VMs (emulator)', () => {
  let home: string;
  let emu: Emulator;
  let ep: EmulatorEndpoint;
  let backend: Backend;
  let osLogin: OsLoginAccess;
  let zone: string;
  const notices: string[] = [];
  const saved = process.env.TPW_HOME;

  before(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-oslogin-'));
    process.env.TPW_HOME = home;
    emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(149) });
    ep = await emu.start();
    zone = ep.zones[0];
    backend = await openBackend({ useEmulator: true, onNotice: (m) => notices.push(m) });
    osLogin = emulatorOsLogin(ep);
    await backend.compute.createSlice({ project: ep.project, zone, name: 'osl', acceleratorType: 'tpu7x-8' });
  });

  after(async () => {
    await osLogin?.close();
    await backend?.close();
    await emu?.stop();
    fs.rmSync(home, { recursive: true, force: true });
    if (saved === undefined) delete process.env.TPW_HOME;
    else process.env.TPW_HOME = saved;
  });

  /** projects.setCommonInstanceMetadata through the real compute client, keeping the fingerprint rule. */
  async function setProjectOsLogin(value: string | undefined): Promise<void> {
    const [p] = await backend.compute.clients.projects.get({ project: ep.project });
    const items = (p.commonInstanceMetadata?.items ?? []).filter((x) => x.key !== 'enable-oslogin');
    if (value !== undefined) items.push({ key: 'enable-oslogin', value });
    const [op] = await backend.compute.clients.projects.setCommonInstanceMetadata({ project: ep.project, metadataResource: { fingerprint: p.commonInstanceMetadata?.fingerprint, items } });
    assert.equal((op.latestResponse as { status?: string }).status, 'DONE');
  }
  async function setVmOsLogin(value: string | undefined): Promise<void> {
    const { node } = await findNode(backend, 'osl');
    const { 'enable-oslogin': _old, ...rest } = node.metadata;
    await backend.api.updateNodeMetadata({ project: ep.project, zone, node: 'osl' }, value === undefined ? rest : { ...rest, 'enable-oslogin': value });
  }
  async function workers(): Promise<WorkerTarget[]> {
    return backend.workersOf((await findNode(backend, 'osl')).node);
  }
  async function sshEcho(w: WorkerTarget): Promise<string> {
    const conns = new ConnectionManager({ knownHostsPath: path.join(home, `kh-${Math.random()}`) });
    try {
      return (await execCollect(await conns.get(w), 'echo "w$TPU_WORKER_ID"')).stdout;
    } finally {
      conns.dispose();
    }
  }

  it('without OS Login: the emulator user with its own key, and no OS Login call', async () => {
    const [w] = await workers();
    assert.equal(w.username, ep.username);
    assert.equal(await sshEcho(w), 'w0\n');
    assert.deepEqual(notices, []);
    const [profile] = await osLogin.client.getLoginProfile({ name: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project });
    assert.deepEqual(Object.keys(profile.sshPublicKeys ?? {}), [], 'nothing imported');
  });

  it('project enforces OS Login: the key is imported, the profile username is used, ssh2 and OpenSSH get in', async () => {
    await setProjectOsLogin('TRUE');
    const [w] = await workers();
    assert.equal(w.username, OS_LOGIN_USER);
    assert.deepEqual(notices, [`OS Login is enabled on project ${ep.project}: your key was added to your OS Login profile (${EMULATOR_ACCOUNT}) as ${OS_LOGIN_USER}.`]);
    const [profile] = await osLogin.client.getLoginProfile({ name: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project });
    assert.equal(profile.posixAccounts?.[0]?.username, OS_LOGIN_USER);
    const pub = fs.readFileSync(`${ep.clientKeyPath}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
    assert.deepEqual(Object.values(profile.sshPublicKeys ?? {}).map((k) => k.key), [pub]);
    assert.equal(await sshEcho(w), 'w0\n');
    // OpenSSH, as Remote-SSH would log in.
    const { stdout } = await run('ssh', [
      '-i', ep.clientKeyPath, '-p', String(ep.sshPort), '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes',
      '-o', 'IdentitiesOnly=yes', `${OS_LOGIN_USER}@${w.host}`, 'echo openssh-$TPU_WORKER_ID',
    ]);
    assert.equal(stdout, 'openssh-0\n');
    // The emulator's own login and its key no longer get in: OS Login is the only way.
    await assert.rejects(sshEcho({ ...w, username: ep.username }), /authentication/i);
    await workers();
    assert.equal(notices.length, 1, 'told once per VM and key');
  });

  it('under OS Login a metadata ssh-keys key is refused; `tpw vm add-key` goes through OS Login instead', async () => {
    const other = generateEd25519KeyPair('meta@test');
    const [w] = await workers();
    await backend.compute.addSshKeys(ep.project, zone, 'osl', [`${OS_LOGIN_USER}:${other.public}`, `${ep.username}:${other.public}`]);
    for (const username of [OS_LOGIN_USER, ep.username]) {
      await assert.rejects(sshEcho({ ...w, username, privateKey: other.private }), /authentication/i, `metadata key for ${username}`);
    }
    const out: string[] = [];
    assert.equal(await main(['vm', 'add-key', 'osl'], (l) => out.push(l), (l) => out.push(l)), 0, out.join('\n'));
    assert.match(out.join('\n'), new RegExp(`added through OS Login for ${OS_LOGIN_USER}`));
    const mine = ensureExtensionKey(home);
    assert.equal(await sshEcho({ ...w, privateKey: mine.privateKey }), 'w0\n');
    const { node } = await findNode(backend, 'osl');
    assert.doesNotMatch(node.metadata['ssh-keys'] ?? '', new RegExp(mine.publicKey.split(' ')[1].slice(0, 30).replace(/[+/]/g, '.')), 'not put in metadata');
  });

  it("the VM's enable-oslogin=FALSE beats the project's TRUE; the VM's TRUE alone turns it on", async () => {
    await setVmOsLogin('FALSE');
    let [w] = await workers();
    assert.equal(w.username, ep.username);
    assert.equal(await sshEcho(w), 'w0\n');
    await assert.rejects(sshEcho({ ...w, username: OS_LOGIN_USER }), /authentication/i);

    await setProjectOsLogin(undefined);
    await setVmOsLogin('true');
    [w] = await workers();
    assert.equal(w.username, OS_LOGIN_USER);
    assert.equal(await sshEcho(w), 'w0\n');
    assert.match(notices.at(-1) ?? '', /^OS Login is enabled on VM osl: your key was added to your OS Login profile/);
  });

  it("OS Login answers only for the emulator's account, with Google's error codes", async () => {
    await assert.rejects(osLogin.client.getLoginProfile({ name: 'users/someone-else@example.com' }), (e: { code?: number; message?: string }) => e.code === 7 && /tpw-emulator-user@example\.com/.test(e.message ?? ''));
    await assert.rejects(osLogin.client.getSshPublicKey({ name: `users/${EMULATOR_ACCOUNT}/sshPublicKeys/00ff` }), (e: { code?: number }) => e.code === 5);
    await assert.rejects(
      osLogin.client.importSshPublicKey({ parent: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project, sshPublicKey: { key: 'not a key' } }),
      (e: { code?: number }) => e.code === 3,
    );
    const [profile] = await osLogin.client.getLoginProfile({ name: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project });
    const fp = Object.keys(profile.sshPublicKeys ?? {})[0];
    const [key] = await osLogin.client.getSshPublicKey({ name: `users/${EMULATOR_ACCOUNT}/sshPublicKeys/${fp}` });
    assert.equal(key.fingerprint, fp);
    await osLogin.client.deleteSshPublicKey({ name: `users/${EMULATOR_ACCOUNT}/sshPublicKeys/${fp}` });
    await assert.rejects(osLogin.client.getSshPublicKey({ name: `users/${EMULATOR_ACCOUNT}/sshPublicKeys/${fp}` }), (e: { code?: number }) => e.code === 5);
  });

  it('imported keys and the project metadata survive an emulator restart, and the VM still lets in only OS Login', async () => {
    await setProjectOsLogin('TRUE');
    const [before] = await osLogin.client.getLoginProfile({ name: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project });
    const keysBefore = Object.keys(before.sshPublicKeys ?? {}).sort();
    assert.ok(keysBefore.length > 0);
    await osLogin.close();
    await backend.close();
    await emu.stop();
    ep = await emu.start();
    backend = await openBackend({ useEmulator: true, onNotice: (m) => notices.push(m) });
    osLogin = emulatorOsLogin(ep);
    const [p] = await backend.compute.clients.projects.get({ project: ep.project });
    assert.deepEqual((p.commonInstanceMetadata?.items ?? []).map((x) => [x.key, x.value]), [['enable-oslogin', 'TRUE']]);
    const [after] = await osLogin.client.getLoginProfile({ name: `users/${EMULATOR_ACCOUNT}`, projectId: ep.project });
    assert.deepEqual(Object.keys(after.sshPublicKeys ?? {}).sort(), keysBefore);
    const [w] = await workers();
    assert.equal(w.username, OS_LOGIN_USER);
    assert.equal(await sshEcho(w), 'w0\n');
    await assert.rejects(sshEcho({ ...w, username: ep.username }), /authentication/i);
  });
});
