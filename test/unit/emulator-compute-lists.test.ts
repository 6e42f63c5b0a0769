import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { computeFilter } from '../../emulator/src/compute-lists';
import { Emulator } from '../../emulator/src/emulator';
import { endpointFile, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { emulatorRequest } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';

/**
 * The emulator's Compute Engine list surface as Google's clients use it (issue 33): the filter language, the
 * aggregated lists, and the batch endpoint gcloud sends several calls through. The real gcloud and Python's
 * google-cloud-compute run against the same code in test/emulator-clients/; these pin the edges they do not reach:
 * a failing call inside a batch, the guard on the batch body, and filter expressions one by one.
 */

const P = '/compute/v1/projects/local-project';
let dir: string;
let emu: Emulator;
let ep: EmulatorEndpoint;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-emu-lists-'));
  emu = new Emulator({ dir, opDelayMs: 5, addressPrefix: testAddressPrefix(162) });
  await emu.start();
  ep = JSON.parse(fs.readFileSync(endpointFile(dir), 'utf8')) as EmulatorEndpoint;
  for (const [zone, name] of [['us-central2-b', 'lst-a'], ['us-east1-d', 'lst-b']]) {
    const r = await emulatorRequest(ep, 'POST', `${P}/zones/${zone}/instances`, { name, machineType: `zones/${zone}/machineTypes/tpu7x-standard-4t`, labels: { team: 'ml' } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await emulatorRequest(ep, 'POST', `${P}/zones/${zone}/operations/${String(r.body.name)}/wait`);
  }
});

after(async () => {
  await emu.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("Compute Engine's list filter", () => {
  const vm = { name: 'iron-1', status: 'RUNNING', labels: { team: 'ml' }, scheduling: { automaticRestart: false }, cpus: 8, zone: 'https://x/zones/us-east1-d' };
  const cases: [string, boolean][] = [
    ['name = iron-1', true],
    ['name = iron-*', true],
    ['name != iron-1', false],
    ['name eq "iron-\\d"', true],
    ['name eq iron', false],
    ['name ne ".*\\biron\\b.*"', false],
    ['labels.team = ml AND status = RUNNING', true],
    ['(labels.team = ops) OR (status = RUNNING)', true],
    ['(labels.team = ops) (status = RUNNING)', false],
    ['labels.team:*', true],
    ['-labels.owner:*', true],
    ['NOT status = RUNNING', false],
    ['scheduling.automaticRestart = false', true],
    ['cpus > 4', true],
    ['cpus < 4', false],
    ['zone:us-east1-d', false],
    ['zone:*us-east1-d', true],
    ['', true],
  ];
  for (const [expr, want] of cases) it(`${expr || '(empty)'} → ${want}`, () => assert.equal(computeFilter(expr)(vm), want));
  it('refuses what it cannot read, naming the filter', () => {
    assert.throws(() => computeFilter('name ='), /Invalid value for field 'filter': 'name ='/);
    assert.throws(() => computeFilter('(name = a'), /unclosed parenthesis/);
  });
});

describe('aggregated lists', () => {
  it('answer every zone, a warning where a zone has none, and page over all of them', async () => {
    const all = await emulatorRequest(ep, 'GET', `${P}/aggregated/instances?includeAllScopes=true&returnPartialSuccess=true`);
    assert.equal(all.status, 200);
    const items = all.body.items as Record<string, { instances?: { name: string }[]; warning?: { code: string } }>;
    assert.deepEqual(Object.keys(items), ep.zones.map((z) => `zones/${z}`));
    assert.deepEqual(items['zones/us-central2-b'].instances?.map((i) => i.name), ['lst-a']);
    assert.equal(items['zones/us-east5-b'].warning?.code, 'NO_RESULTS_ON_PAGE');
    const first = await emulatorRequest(ep, 'GET', `${P}/aggregated/instances?maxResults=1`);
    assert.ok(first.body.nextPageToken);
    const second = await emulatorRequest(ep, 'GET', `${P}/aggregated/instances?maxResults=1&pageToken=${String(first.body.nextPageToken)}`);
    assert.equal(second.body.nextPageToken, undefined);
    const names = [first, second].flatMap((r) => Object.values(r.body.items as Record<string, { instances?: { name: string }[] }>).flatMap((s) => s.instances ?? []).map((i) => i.name));
    assert.deepEqual(names, ['lst-a', 'lst-b']);
    const filtered = await emulatorRequest(ep, 'GET', `${P}/aggregated/instances?filter=${encodeURIComponent('name = lst-b')}`);
    assert.deepEqual(Object.entries(filtered.body.items as Record<string, { instances?: unknown[] }>).filter(([, s]) => s.instances).map(([k]) => k), ['zones/us-east1-d']);
  });
});

describe('the batch endpoint', () => {
  const boundary = '===============7330845974216740156==';
  const part = (id: number, line: string) =>
    `--${boundary}\r\nContent-Type: application/http\r\nMIME-Version: 1.0\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <b29c5de2+${id}>\r\n\r\n${line} HTTP/1.1\r\nContent-Type: application/json\r\ncontent-length: 0\r\n\r\n\r\n`;
  const body = `${part(0, `GET ${P}/zones/us-central2-b/instances/lst-a?alt=json`)}${part(1, `GET ${P}/zones/us-central2-b/instances/nobody?alt=json`)}--${boundary}--\r\n`;
  const post = (headers: Record<string, string>) => fetch(`http://${ep.host}:${ep.restPort}/batch/compute/v1`, { method: 'POST', headers, body });

  it("answers each call in its own part, a failing one with Compute's error, the batch itself 200", async () => {
    const r = await post({ authorization: `Bearer ${ep.token}`, 'content-type': `multipart/mixed; boundary="${boundary}"` });
    assert.equal(r.status, 200);
    const outer = /boundary=(\S+)/.exec(r.headers.get('content-type') ?? '')?.[1] ?? '';
    const parts = (await r.text()).split(`--${outer}`).slice(1, -1);
    assert.equal(parts.length, 2);
    assert.match(parts[0], /Content-ID: <response-b29c5de2\+0>[\s\S]*HTTP\/1\.1 200 OK[\s\S]*"name":"lst-a"/);
    assert.match(parts[1], /Content-ID: <response-b29c5de2\+1>[\s\S]*HTTP\/1\.1 404 Not Found[\s\S]*"reason":"notFound"/);
  });

  it('needs the bearer token, and takes multipart only there', async () => {
    assert.equal((await post({ 'content-type': `multipart/mixed; boundary="${boundary}"` })).status, 401);
    const elsewhere = await fetch(`http://${ep.host}:${ep.restPort}${P}/zones/us-central2-b/instances`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ep.token}`, 'content-type': `multipart/mixed; boundary="${boundary}"` },
      body,
    });
    assert.equal(elsewhere.status, 415);
  });
});
