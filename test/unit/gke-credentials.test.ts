import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { isTpwError } from '../../extension/src/core/errors';
import { adcTokenSource, execTokenSource, gkeGoogleAuth, gcloudContextName, kubeconfigClusterFor, REFRESH_MARGIN_MS } from '../../extension/src/core/gke/credentials';
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

test('without a kubeconfig context: an access token from Application Default Credentials (google-auth-library), asked for again once within 5 minutes of its expiry', async () => {
  // ADC as on a GCE VM or GKE node: no GOOGLE_APPLICATION_CREDENTIALS, no gcloud ADC file, the metadata server's
  // token endpoint (Google's wire format; expires_in set per answer here, so the refresh rule can be seen).
  let expiresIn = 3600;
  let issued = 0;
  const asked: string[] = [];
  const server = http.createServer((req, res) => {
    asked.push(req.url ?? '');
    if (req.url?.startsWith('/computeMetadata/v1/instance/service-accounts/default/token') && req.headers['metadata-flavor'] === 'Google') {
      issued++;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Metadata-Flavor': 'Google' });
      res.end(JSON.stringify({ access_token: `adc-${issued}`, expires_in: expiresIn, token_type: 'Bearer' }));
      return;
    }
    res.writeHead(404, { 'Metadata-Flavor': 'Google' }).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const vars = ['GCE_METADATA_HOST', 'METADATA_SERVER_DETECTION', 'GOOGLE_APPLICATION_CREDENTIALS', 'CLOUDSDK_CONFIG'] as const;
  const saved = Object.fromEntries(vars.map((k) => [k, process.env[k]]));
  try {
    process.env.GCE_METADATA_HOST = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.METADATA_SERVER_DETECTION = 'assume-present';
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.CLOUDSDK_CONFIG = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-adc-'));
    assert.equal(kubeconfigClusterFor({ project: 'p1', location: 'us-central2-b', cluster: 'demo' }, [path.join(process.env.CLOUDSDK_CONFIG, 'absent')]), undefined, 'no kubeconfig: ADC it is');
    const src = adcTokenSource(gkeGoogleAuth('p1'));
    assert.equal(src.describe, 'Application Default Credentials');
    assert.equal(await src.token(), 'adc-1');
    assert.equal(await src.token(), 'adc-1', 'an hour left: kept');
    assert.equal(issued, 1);
    // The project is tpw's, not looked up (by gcloud, seconds, then the metadata server) before the first token.
    assert.deepEqual(asked.filter((u) => !u.includes('/token')), []);
    // A token with less than the margin left is never handed out: each ask gets a new one.
    expiresIn = REFRESH_MARGIN_MS / 1000 - 60;
    const other = adcTokenSource(gkeGoogleAuth('p1'));
    assert.equal(await other.token(), 'adc-2');
    assert.equal(await other.token(), 'adc-3');
    // No credentials anywhere (not on a VM either): one line naming ADC and the fix.
    process.env.METADATA_SERVER_DETECTION = 'none';
    await assert.rejects(adcTokenSource(gkeGoogleAuth('p1')).token(), (e: unknown) => isTpwError(e, 'UNAUTHENTICATED') && /^Application Default Credentials gave no access token for GKE: /.test(e.message) && !e.message.includes('\n'));
  } finally {
    server.close();
    for (const k of vars) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
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
