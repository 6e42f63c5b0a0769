/**
 * `tpw vm zones|cost`, `tpw vm create` with issue 3's options (spot, reserved, startup script, labels, data
 * disks, queued, dry run), `tpw qr list|delete`, and a quota failure that names the zones offering the type —
 * against a real emulator in this process, through the real client.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { runTpw, type CliResult } from '../helpers/cli';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

let home: string;
let ws: string;
let emu: Emulator;
const savedHome = process.env.TPW_HOME;

function tpw(...argv: string[]): Promise<CliResult> {
  return runTpw(ws, argv);
}

async function until(fn: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 30));
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli3-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli3-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, queuedStepMs: 40, addressPrefix: testAddressPrefix(17) });
  await emu.start();
});

after(async () => {
  await emu.stop();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(ws, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

test('vm zones lists every zone, or those offering a type', async () => {
  const all = await tpw('vm', 'zones');
  assert.equal(all.code, 0, all.err.join('\n'));
  assert.deepEqual(all.out, ['europe-west4-a', 'us-central2-b', 'us-east1-d', 'us-east5-b']);
  const v6e = await tpw('vm', 'zones', '--type', 'v6e-8', '--json');
  assert.deepEqual(JSON.parse(v6e.out[0]), ['europe-west4-a', 'us-central2-b', 'us-east1-d', 'us-east5-b']);
  const none = await tpw('vm', 'zones', '--type', 'v9-1');
  assert.equal(none.code, 1);
  assert.match(none.err[0], /No zone of local-project offers v9-1/);
});

test('vm cost prints list prices for a zone, or every priced region', async () => {
  const r = await tpw('vm', 'cost', 'v5litepod-16', '--zone', 'us-east5-b');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.deepEqual(r.out, ['v5litepod-16 in us-east5-b: on-demand $19.20/h (16 chips × $1.20), spot $9.60/h (16 chips × $0.60)']);
  assert.match(r.err[0], /List prices as of \d{4}-\d{2}-\d{2} \(https:\/\/cloud\.google\.com\/tpu\/pricing\)/);
  const all = await tpw('vm', 'cost', 'v4-8');
  assert.deepEqual(all.out, ['v4-8 in us-central2: on-demand $12.88/h (4 chips × $3.22), spot $3.69/h (4 chips × $0.92)']);
  const unpriced = await tpw('vm', 'cost', 'v4-8', '--zone', 'europe-west4-a');
  assert.equal(unpriced.code, 1);
  assert.match(unpriced.out[0], /on-demand: no list price/);
  assert.equal((await tpw('vm', 'cost', 'tpu9000')).code, 2);
  const ironwood = await tpw('vm', 'cost', 'tpu7x-8');
  assert.equal(ironwood.code, 1, 'no TPU7x list price: nothing priced, said in one line');
  assert.match(ironwood.out.join('\n'), /tpu7x-8: the price table has no tpu7x list price \(as of \d{4}-\d{2}-\d{2}\)/);
});

test('vm create --dry-run prints the gcloud command, with no emulator or project needed when all is given', async () => {
  const script = path.join(ws, "boot it's.sh");
  fs.writeFileSync(script, '#!/bin/bash\necho "$(hostname)"\n');
  const r = await tpw(
    'vm', 'create', 'dry', '--type', 'v6e-8', '--version', 'v2-alpha-tpuv6e', '--zone', 'us-east1-d', '--project', 'real-proj',
    '--spot', '--label', 'team=ml', '--label', 'note=a b', '--startup-script', script, '--description', 'it\'s "x"', '--dry-run',
  );
  assert.equal(r.code, 0, r.err.join('\n'));
  const argv = execFileSync('bash', ['-c', `gcloud() { printf '%s\\0' "$@"; }\n${r.out.join('\n')}`], { encoding: 'utf8' }).split('\0').slice(0, -1);
  assert.deepEqual(argv, [
    'compute', 'tpus', 'tpu-vm', 'create', 'dry', '--zone=us-east1-d', '--project=real-proj', '--accelerator-type=v6e-8',
    '--version=v2-alpha-tpuv6e', '--spot', '--description=it\'s "x"', '--labels=team=ml,note=a b', `--metadata-from-file=startup-script=${script}`,
  ]);
  assert.match(r.err.join('\n'), /Estimated cost: \$5\.19\/h \(8 chips × \$0\.65\/chip-hour, spot list price/);
  const q = await tpw('vm', 'create', 'dq', '--type', 'v5litepod-4', '--queued', '--tier', 'spot', '--valid-until', '6h', '--dry-run');
  assert.equal(q.code, 0, q.err.join('\n'));
  assert.match(q.out[0], /^gcloud compute tpus queued-resources create dq --zone=us-central2-b --project=local-project --node-id=dq --accelerator-type=v5litepod-4 --runtime-version=\S+ --spot --valid-until-time=\d{4}-/);
  assert.deepEqual((await tpw('vm', 'list')).out, [`No TPU VMs in local-project (us-central2-b, us-east5-b, us-east1-d, europe-west4-a).`], 'a dry run creates nothing');
});

test('vm create honours spot, labels, startup script, description and data disks', async () => {
  const script = path.join(ws, 'startup.sh');
  fs.writeFileSync(script, "#!/bin/bash\necho 'ready' > /tmp/ready\n");
  const r = await tpw(
    'vm', 'create', 'full', '--type', 'v5litepod-4', '--zone', 'us-east5-b', '--spot', '--label', 'team=ml', '--startup-script', script,
    '--description', 'the full one', '--data-disk', 'projects/local-project/zones/us-east5-b/disks/d1,mode=read-only',
  );
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out[0], new RegExp(`^full READY: w0=${esc(testAddressPrefix(17))}\\.\\d+$`));
  assert.match(r.err[0], /Creating full \(v5litepod-4, \S+, spot\) in us-east5-b… ~\$2\.40\/h/);
  const n = emu.state.getNode('projects/local-project/locations/us-east5-b/nodes/full');
  assert.equal(n.schedulingConfig.spot, true);
  assert.deepEqual(n.labels, { team: 'ml' });
  assert.equal(n.description, 'the full one');
  assert.equal(n.metadata?.['startup-script'], fs.readFileSync(script, 'utf8'));
  assert.deepEqual(n.dataDisks, [{ sourceDisk: 'projects/local-project/zones/us-east5-b/disks/d1', mode: 'READ_ONLY' }]);
  const reserved = await tpw('vm', 'create', 'resv', '--type', 'v6e-1', '--zone', 'us-east1-d', '--reserved');
  assert.equal(reserved.code, 0, reserved.err.join('\n'));
  assert.equal(emu.state.getNode('projects/local-project/locations/us-east1-d/nodes/resv').schedulingConfig.reserved, true);
});

test('vm create refuses bad option combinations with exit 2', async () => {
  const cases: [string[], RegExp][] = [
    [['--spot', '--reserved'], /--spot and --reserved cannot be combined/],
    [['--tier', 'spot'], /--tier and --valid-until apply to queued resources: add --queued/],
    [['--queued', '--tier', 'cheap'], /--tier must be spot or guaranteed/],
    [['--label', 'novalue'], /--label "novalue": expected KEY=VALUE/],
    [['--data-disk', 'disk-1'], /--data-disk "disk-1": the source must be projects\/PROJECT\/zones\/ZONE\/disks\/DISK/],
  ];
  for (const [extra, re] of cases) {
    const r = await tpw('vm', 'create', 'bad', '--type', 'v4-8', ...extra);
    assert.equal(r.code, 2, extra.join(' '));
    assert.match(r.err[0], re);
  }
  const badTime = await tpw('vm', 'create', 'bad', '--type', 'v4-8', '--queued', '--valid-until', 'yesterday');
  assert.equal(badTime.code, 1);
  assert.match(badTime.err[0], /Invalid valid-until "yesterday"/);
  const noScript = await tpw('vm', 'create', 'bad', '--type', 'v4-8', '--startup-script', path.join(ws, 'missing.sh'));
  assert.equal(noScript.code, 1);
  assert.match(noScript.err[0], /Cannot read the startup script .*missing\.sh: ENOENT/);
});

test('a quota failure names the zones that offer the type', async () => {
  emu.rest.addCapacityFault({ zone: 'us-central2-b', acceleratorType: 'v5p-8' });
  try {
    const r = await tpw('vm', 'create', 'big', '--type', 'v5p-8', '--zone', 'us-central2-b');
    assert.equal(r.code, 1);
    const err = r.err.join('\n');
    assert.match(err, /v5p-8 is also offered in: europe-west4-a, us-east1-d, us-east5-b\. Retry there with --zone europe-west4-a, or queue it with --queued\./);
    assert.match(err, /tpw: Quota or capacity exhausted for v5p-8 trying to create TPU VM "big" in local-project\/us-central2-b/);
  } finally {
    emu.rest.clearFaults();
  }
});

test('vm create --queued waits for capacity; qr list shows it; qr delete --force removes it and its VM', async () => {
  emu.rest.addCapacityFault({ zone: 'us-east1-d', acceleratorType: 'v5litepod-1' });
  const c = await tpw('vm', 'create', 'queued', '--type', 'v5litepod-1', '--zone', 'us-east1-d', '--queued', '--valid-until', '2h');
  assert.equal(c.code, 0, c.err.join('\n'));
  assert.match(c.out[0], /^queued ACCEPTED: node queued is created once capacity is there/);
  await until(async () => (await tpw('qr', 'list')).out.some((l) => /^queued\s+us-east1-d\s+WAITING_FOR_RESOURCES\s+v5litepod-1\s+guaranteed\s+queued\s+\d{4}-/.test(l)), 'WAITING_FOR_RESOURCES');
  emu.rest.clearFaults();
  await until(async () => (await tpw('qr', 'list')).out.some((l) => /^queued\s+us-east1-d\s+ACTIVE/.test(l)), 'ACTIVE');
  assert.match((await tpw('vm', 'list')).out.join('\n'), /queued\s+us-east1-d\s+v5litepod-1\s+READY/);
  const json = JSON.parse((await tpw('qr', 'list', '--json')).out.join('\n')) as { state: string; zone: string }[];
  assert.deepEqual(json.map((q) => [q.state, q.zone]), [['ACTIVE', 'us-east1-d']]);
  const refuse = await tpw('qr', 'delete', 'queued');
  assert.equal(refuse.code, 1);
  assert.match(refuse.err[0], /force/);
  const del = await tpw('qr', 'delete', 'queued', '--force');
  assert.equal(del.code, 0, del.err.join('\n'));
  assert.equal(del.out[0], 'queued: deleted (with node queued)');
  assert.match((await tpw('qr', 'list')).out[0], /^No queued resources/);
  assert.doesNotMatch((await tpw('vm', 'list')).out.join('\n'), /^queued\s/m);
  const ghost = await tpw('qr', 'delete', 'ghost');
  assert.equal(ghost.code, 1);
  assert.match(ghost.err[0], /Queued resource "ghost" not found/);
});
