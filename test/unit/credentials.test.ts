/**
 * Application Default Credentials, checked up front: a missing, unreadable or malformed credentials file and
 * no credentials at all each give TpwError UNAUTHENTICATED with a message that names the file and says what to
 * run — and never repeats the file's contents. A good file yields a CloudTpuApi for the project.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { cloudTpuApiForProject, resolveAdc, wellKnownAdcFile } from '../../extension/src/core/tpu/credentials';
import { runTpw } from '../helpers/cli';

const SECRET = 'sk-THIS-MUST-NOT-LEAK-0123456789';
const KEYS = ['GOOGLE_APPLICATION_CREDENTIALS', 'CLOUDSDK_CONFIG', 'METADATA_SERVER_DETECTION', 'TPW_HOME', 'GCE_METADATA_HOST'] as const;
const saved: Partial<Record<(typeof KEYS)[number], string>> = {};
let dir: string;

function unauthenticated(...mustContain: string[]) {
  return (e: unknown) => {
    assert.ok(isTpwError(e, 'UNAUTHENTICATED'), `expected UNAUTHENTICATED, got ${String(e)}`);
    for (const s of mustContain) assert.ok(e.message.includes(s), `"${e.message}" lacks "${s}"`);
    assert.ok(!e.message.includes(SECRET), 'the message repeats the credentials');
    assert.ok(!String((e.cause as Error | undefined)?.message ?? '').includes(SECRET), 'the cause repeats the credentials');
    return true;
  };
}

before(() => {
  for (const k of KEYS) saved[k] = process.env[k];
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-adc-'));
  // No metadata server probe (it would wait for 169.254.169.254), and no gcloud config of this machine's user.
  process.env.METADATA_SERVER_DETECTION = 'none';
  process.env.CLOUDSDK_CONFIG = path.join(dir, 'gcloud-empty');
  fs.mkdirSync(process.env.CLOUDSDK_CONFIG);
});

after(() => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('Application Default Credentials', () => {
  it('GOOGLE_APPLICATION_CREDENTIALS naming a missing file', async () => {
    const file = path.join(dir, 'nope.json');
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    await assert.rejects(resolveAdc(), unauthenticated(file, 'does not exist', 'GOOGLE_APPLICATION_CREDENTIALS', 'gcloud auth application-default login'));
  });

  it('a malformed file: named, its contents not repeated', async () => {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, `{"type": "service_account", "private_key": "${SECRET}"`);
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    await assert.rejects(resolveAdc(), unauthenticated(file, 'is not valid JSON'));
    fs.writeFileSync(file, JSON.stringify({ private_key: SECRET }));
    await assert.rejects(resolveAdc(), unauthenticated(file, 'no "type" field'));
    fs.writeFileSync(file, JSON.stringify([SECRET]));
    await assert.rejects(resolveAdc(), unauthenticated(file, 'not a JSON object'));
  });

  it('a folder instead of a file', async () => {
    process.env.GOOGLE_APPLICATION_CREDENTIALS = dir;
    await assert.rejects(resolveAdc(), unauthenticated(dir, 'is a folder'));
  });

  it('gcloud\'s well-known file when the variable is unset, and its problems named the same way', async () => {
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    const file = wellKnownAdcFile();
    assert.equal(file, path.join(dir, 'gcloud-empty', 'application_default_credentials.json'));
    fs.writeFileSync(file, `not json ${SECRET}`);
    try {
      await assert.rejects(resolveAdc(), unauthenticated(file, 'gcloud application-default credentials', 'not valid JSON'));
    } finally {
      fs.rmSync(file);
    }
  });

  it('no credentials anywhere: says to run gcloud auth application-default login', async () => {
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    await assert.rejects(resolveAdc(), unauthenticated('No usable Google Application Default Credentials', 'gcloud auth application-default login'));
  });

  it('a well-formed authorized_user file gives a CloudTpuApi for the project', async () => {
    const file = path.join(dir, 'user.json');
    fs.writeFileSync(file, JSON.stringify({ type: 'authorized_user', client_id: 'id.apps.googleusercontent.com', client_secret: SECRET, refresh_token: SECRET }));
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    const { info } = await resolveAdc();
    assert.deepEqual(info, { source: 'GOOGLE_APPLICATION_CREDENTIALS', file, type: 'authorized_user' });
    const api = await cloudTpuApiForProject('my-proj');
    try {
      assert.equal(api.description, 'project my-proj');
    } finally {
      await api.close();
    }
  });

  it('the CLI against a project without credentials exits 1 with the fix', async () => {
    process.env.GOOGLE_APPLICATION_CREDENTIALS = path.join(dir, 'missing.json');
    process.env.TPW_HOME = path.join(dir, 'home');
    const r = await runTpw(dir, ['vm', 'list', '--project', 'my-proj', '--zone', 'us-east5-b']);
    assert.equal(r.code, 1);
    assert.match(r.err.join('\n'), /credentials file .*missing\.json .*does not exist.*gcloud auth application-default login/);
  });
});
