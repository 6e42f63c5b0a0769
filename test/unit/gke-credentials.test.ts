import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { isTpwError } from '../../extension/src/core/errors';
import { execTokenSource, gcloudContextName, kubeconfigClusterFor, REFRESH_MARGIN_MS } from '../../extension/src/core/gke/credentials';
import { checkGkeUse, loadGkeUse, saveGkeUse } from '../../extension/src/core/gke/use-config';

/**
 * Credentials as gcloud leaves them: the kubeconfig `gcloud container clusters get-credentials` writes (its exec
 * plugin run as kubectl runs it, its token asked for again before it expires), and `tpw gke use` remembered per
 * folder. The plugin here is a script that prints an ExecCredential as gke-gcloud-auth-plugin does.
 */

function plugin(dir: string, expiresInMs: number): { file: string; runs: () => number } {
  const count = path.join(dir, 'runs');
  const file = path.join(dir, 'gke-gcloud-auth-plugin');
  fs.writeFileSync(
    file,
    `#!/bin/bash\nn=$(( $(cat ${count} 2>/dev/null || echo 0) + 1 )); echo $n > ${count}\n` +
      `exp=$(date -u -d "@$(( $(date +%s) + ${Math.round(expiresInMs / 1000)} ))" +%Y-%m-%dT%H:%M:%SZ)\n` +
      `echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{},"status":{"token":"tok-'$n'","expirationTimestamp":"'$exp'"}}'\n`,
    { mode: 0o755 },
  );
  return { file, runs: () => Number(fs.readFileSync(count, 'utf8')) };
}

test('the exec plugin runs once for callers at once, and again only when its token nears its expiry', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-cred-'));
  const p = plugin(dir, 60 * 60_000);
  let now = Date.now();
  const src = execTokenSource({ command: p.file }, () => now);
  const [a, b] = await Promise.all([src.token(), src.token()]);
  assert.equal(a, 'tok-1');
  assert.equal(b, 'tok-1');
  assert.equal(p.runs(), 1);
  // Within the token's life, less the margin: kept.
  now += 60 * 60_000 - REFRESH_MARGIN_MS - 60_000;
  assert.equal(await src.token(), 'tok-1');
  // Inside the margin before expiry: asked for again, before any request could be refused with it.
  now += 2 * 60_000;
  assert.equal(await src.token(), 'tok-2');
  assert.equal(p.runs(), 2);
});

test('a failing plugin is one line naming it and the fix', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-cred-'));
  const file = path.join(dir, 'gke-gcloud-auth-plugin');
  fs.writeFileSync(file, '#!/bin/bash\necho "ERROR: Reauthentication failed. cannot prompt during non-interactive execution." >&2\nexit 1\n', { mode: 0o755 });
  await assert.rejects(execTokenSource({ command: file }).token(), (e: unknown) => isTpwError(e, 'UNAUTHENTICATED') && /gke-gcloud-auth-plugin failed \(ERROR: Reauthentication failed/.test(e.message) && /gcloud auth login/.test(e.message) && !e.message.includes('\n'));
});

test('gcloud’s kubeconfig context of a cluster is found, with its server, CA and plugin', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-kc-'));
  const p = plugin(dir, 60 * 60_000);
  const id = { project: 'p1', location: 'us-central2-b', cluster: 'demo' };
  const ctx = gcloudContextName(id);
  assert.equal(ctx, 'gke_p1_us-central2-b_demo');
  const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: ctx, cluster: { server: 'https://34.1.2.3', 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
    users: [{ name: ctx, user: { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: p.file, provideClusterInfo: true, installHint: 'x' } } }],
    contexts: [{ name: ctx, context: { cluster: ctx, user: ctx } }],
    'current-context': ctx,
  };
  const file = path.join(dir, 'config');
  fs.writeFileSync(file, stringify(kubeconfig));
  const found = kubeconfigClusterFor(id, [path.join(dir, 'absent'), file]);
  assert.equal(found?.server, 'https://34.1.2.3');
  assert.equal(found?.caPem, ca);
  assert.equal(await found?.tokens.token(), 'tok-1');
  assert.equal(kubeconfigClusterFor({ ...id, cluster: 'other' }, [file]), undefined);
});

test('tpw gke use is remembered per folder, and refuses what tp use refuses', () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-use-'));
  const base = { cluster: 'demo', project: 'p1', zone: 'us-central2-b', numSlices: 2, tpuType: 'v5litepod-16', image: 'i', namespace: 'default', priority: 'medium' as const, emulator: false };
  saveGkeUse({ ...base, workspace: '/ws/a', artifactDir: 'gs://bkt/runs' }, home);
  assert.equal(loadGkeUse('/ws/a', home)?.artifactDir, 'gs://bkt/runs');
  assert.equal(loadGkeUse('/ws/b', home), undefined);
  assert.throws(() => checkGkeUse({ ...base, artifactDir: '/local/dir' }), /--artifact-dir "\/local\/dir" must be a Cloud Storage folder/);
  assert.throws(() => checkGkeUse({ ...base, artifactDir: 'gs://bkt/$(rm -rf x)' }), /must be a Cloud Storage folder/);
  assert.throws(() => checkGkeUse({ ...base, tpuType: 'v5litepod-3' }), /Unknown TPU type "v5litepod-3"/);
  assert.throws(() => checkGkeUse({ ...base, numSlices: 0 }), /--num-slices must be a whole number of at least 1 \(got 0\)/);
});
