/**
 * The emulator's kubelet stand-in: a container's environment made as the kubelet makes it (envFrom, then env in
 * order, `$(VAR)` expansion, the downward API, Secrets and ConfigMaps), and its logs served as the kubelet's
 * /containerLogs serves them (timestamps, tail, since, byte limit, follow).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { LogWriter, serveLog } from '../../emulator/src/gke/container-log';
import { containerEnv, expand, quantity, type PodView } from '../../emulator/src/gke/pod-env';
import { containerPath } from '../../emulator/src/gke/pod-sandbox';

const pod: PodView = {
  metadata: { name: 'run-slice-0-1-abcde', namespace: 'default', uid: 'u-1', labels: { 'jobset.sigs.k8s.io/job-index': '0' }, annotations: { 'batch.kubernetes.io/job-completion-index': '1' } },
  spec: { nodeName: 'gke-c-np-1234abcd-wxyz', hostname: 'run-slice-0-1', subdomain: 'run' },
  status: { podIP: '10.1.2.3', hostIP: '10.1.2.3' },
};

test('env: envFrom first, then env in order with $(VAR) expanded against what came before; $$ is a dollar', () => {
  const env = containerEnv(pod, {
    name: 'main',
    envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'CFG_' }],
    env: [
      { name: 'A', value: 'x' },
      { name: 'B', value: '$(A)-$(CFG_K)-$(LATER)-$$(A)' },
      { name: 'LATER', value: 'y' },
      { name: 'IDX', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
      { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'sec', key: 'HF_TOKEN' } } },
      { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    ],
    resources: { limits: { cpu: '1500m' } },
  }, (kind, name): Record<string, string> | undefined => (kind === 'ConfigMap' && name === 'cfg' ? { K: 'v' } : kind === 'Secret' && name === 'sec' ? { HF_TOKEN: 'hf_secret' } : undefined));
  assert.equal(env.CFG_K, 'v');
  assert.equal(env.B, 'x-v-$(LATER)-$(A)');
  assert.equal(env.IDX, '1');
  assert.equal(env.NODE, 'gke-c-np-1234abcd-wxyz');
  assert.equal(env.TOKEN, 'hf_secret');
  assert.equal(env.CPU, '2', 'limits.cpu rounded up to whole cores, as the kubelet does with the default divisor');
});

test('env: a missing Secret key fails naming it, unless optional', () => {
  assert.throws(() => containerEnv(pod, { name: 'm', env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'nope', key: 'k' } } }] }, () => undefined), /Secret "nope" has no key "k"/);
  const env = containerEnv(pod, { name: 'm', env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'nope', key: 'k', optional: true } } }] }, () => undefined);
  assert.equal('T' in env, false);
});

test('quantities and expansion edge cases', () => {
  assert.equal(quantity('4Gi'), 4 * 1024 ** 3);
  assert.equal(quantity('250m'), 0.25);
  assert.equal(expand('$(UNSET) $(A', { A: '1' }), '$(UNSET) $(A');
});

test('logs: written in the CRI format, served with and without timestamps, tail, limitBytes and sinceTime', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-log-'));
  try {
    const file = path.join(dir, '0.log');
    const w = new LogWriter(file);
    const out = new PassThrough();
    const err = new PassThrough();
    w.attach(out, 'stdout');
    w.attach(err, 'stderr');
    out.write('one\ntw');
    out.write('o\n');
    err.write('oops\n');
    await new Promise((r) => setImmediate(r));
    const before = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    out.write('three\npartial');
    await new Promise((r) => setImmediate(r));
    w.close();
    const raw = fs.readFileSync(file, 'utf8').trim().split('\n');
    assert.match(raw[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z stdout F one$/);
    assert.ok(raw.some((l) => / stderr F oops$/.test(l)));
    assert.match(raw[raw.length - 1], / stdout P partial$/);
    const read = async (q: Parameters<typeof serveLog>[1]) => {
      let s = '';
      await serveLog(file, q, { write: (x: string) => ((s += x), true) }, () => false, new AbortController().signal);
      return s;
    };
    assert.equal(await read({ follow: false, timestamps: false }), 'one\ntwo\noops\nthree\npartial');
    assert.equal(await read({ follow: false, timestamps: false, tailLines: 2 }), 'three\npartial');
    assert.equal(await read({ follow: false, timestamps: false, limitBytes: 6 }), 'one\ntw');
    assert.equal(await read({ follow: false, timestamps: false, sinceTime: before }), 'three\npartial');
    assert.match(await read({ follow: false, timestamps: true, tailLines: 1 }), /^\d{4}-\S+Z partial$/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('logs: follow writes lines as they come and ends once the container has ended', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-follow-'));
  try {
    const file = path.join(dir, '0.log');
    const w = new LogWriter(file);
    const out = new PassThrough();
    w.attach(out, 'stdout');
    let running = true;
    let got = '';
    const served = serveLog(file, { follow: true, timestamps: false }, { write: (x: string) => ((got += x), true) }, () => running, new AbortController().signal);
    out.write('a\n');
    for (let i = 0; i < 100 && got !== 'a\n'; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(got, 'a\n');
    out.write('b\n');
    await new Promise((r) => setImmediate(r));
    w.close();
    running = false;
    await served;
    assert.equal(got, 'a\nb\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("mount paths are resolved in the container's view: this machine's links followed, not inside its own /run", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-links-'));
  try {
    fs.mkdirSync(path.join(dir, 'real'));
    fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'abs'));
    fs.symlinkSync('real', path.join(dir, 'rel'));
    const base = fs.realpathSync(dir);
    assert.equal(containerPath(path.join(dir, 'abs', 'x', 'y')), path.join(base, 'real', 'x', 'y'));
    assert.equal(containerPath(path.join(dir, 'rel', 'z')), path.join(base, 'real', 'z'));
    assert.equal(containerPath('/tpw/workspace'), '/tpw/workspace');
    // /var/run → /run on Debian-like machines: the token lands in the container's own /run.
    if (fs.existsSync('/var/run') && fs.lstatSync('/var/run').isSymbolicLink()) {
      assert.equal(containerPath('/var/run/secrets/kubernetes.io/serviceaccount'), '/run/secrets/kubernetes.io/serviceaccount');
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
