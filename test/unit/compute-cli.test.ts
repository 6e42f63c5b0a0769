/**
 * Issue 14 from the CLI, against a real emulator: `tpw vm create NAME --type tpu7x-16` makes a 2-VM Compute
 * Engine slice (TPU7x is not offered by the Cloud TPU API, so Compute Engine is the default), `tpw vm list`
 * shows both control planes, `tpw run` runs a recipe on every worker of the slice (TPU_WORKER_ID 0 and 1, each
 * on its own VM), and `tpw vm delete` removes it; bad input gets a one-line message naming the thing at fault.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { loadRun } from '../../extension/src/core/run/registry';
import { runTpw, writeRecipeIn } from '../helpers/cli';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

let home = '';
let ws = '';
let emu: Emulator | undefined;
const savedHome = process.env.TPW_HOME;
const tpw = (...argv: string[]) => runTpw(ws, argv);

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-computecli-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-computecli-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(142) });
  await emu.start();
});

after(async () => {
  await emu?.stop();
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

test('vm create --type tpu7x-16 makes a 2-VM slice; vm list shows both control planes; a recipe runs on both workers', async () => {
  const c = await tpw('vm', 'create', 'iron', '--type', 'tpu7x-16', '--zone', 'us-east5-b');
  assert.equal(c.code, 0, c.err.join('\n'));
  assert.match(c.err.join('\n'), /Creating iron on Compute Engine \(tpu7x-16, topology 2x2x2, 2 VMs of tpu7x-standard-4t, 8 chips \/ 16 devices, on-demand\)/);
  const w = esc(testAddressPrefix(142));
  assert.match(c.out.at(-1) ?? '', new RegExp(`^iron READY: w0=${w}\\.\\d+ w1=${w}\\.\\d+$`));
  const t = await tpw('vm', 'create', 'trill', '--type', 'v6e-1', '--zone', 'us-east5-b');
  assert.equal(t.code, 0, t.err.join('\n'));

  const l = await tpw('vm', 'list');
  assert.equal(l.code, 0, l.err.join('\n'));
  assert.match(l.out[0], /^NAME\s+ZONE\s+TYPE\s+STATE\s+WORKERS\s+RUNTIME\s+CONTROL PLANE$/);
  assert.match(l.out.join('\n'), /iron\s+us-east5-b\s+tpu7x-16\s+READY\s+2\s+-\s+compute/);
  assert.match(l.out.join('\n'), /trill\s+us-east5-b\s+v6e-1\s+READY\s+1\s+\S+\s+tpu-api/);

  const recipe = writeRecipeIn(ws, 'hello.sh', `bash -c 'echo "worker $TPU_WORKER_ID of $(echo $TPU_WORKER_HOSTNAMES | tr , " " | wc -w) on $(hostname -I 2>/dev/null | cut -d" " -f1)"'\n`);
  const r = await tpw('run', recipe, '--vm', 'iron');
  assert.equal(r.code, 0, r.err.join('\n'));
  const w0 = r.out.find((x) => x.startsWith('[w0] worker'));
  const w1 = r.out.find((x) => x.startsWith('[w1] worker'));
  assert.match(w0 ?? '', /^\[w0\] worker 0 of 2/, r.out.join('\n'));
  assert.match(w1 ?? '', /^\[w1\] worker 1 of 2/, r.out.join('\n'));
  assert.match(r.out.at(-1) ?? '', /2\/2 workers ok/);
  const runId = (await tpw('runs')).out.find((x) => /\biron\b/.test(x))?.split(/\s+/)[0] ?? '';
  assert.equal(loadRun(runId, home).status, 'succeeded');
  assert.deepEqual(loadRun(runId, home).exitCodes, [0, 0]);

  const d = await tpw('vm', 'delete', 'iron');
  assert.equal(d.code, 0, d.err.join('\n'));
  assert.doesNotMatch((await tpw('vm', 'list')).out.join('\n'), /\biron\b/);
  assert.equal((await tpw('vm', 'delete', 'trill')).code, 0);
});

test('vm create on Compute Engine: one VM for tpu7x-8, and one-line errors for bad input', async () => {
  const c = await tpw('vm', 'create', 'one', '--type', 'tpu7x-8', '--zone', 'us-east5-b', '--spot');
  assert.equal(c.code, 0, c.err.join('\n'));
  assert.match(c.err.join('\n'), /tpu7x-8, topology 2x2x1, 1 VM of tpu7x-standard-4t, 4 chips \/ 8 devices, spot/);
  const taken = await tpw('vm', 'create', 'one', '--type', 'tpu7x-8', '--zone', 'us-east5-b');
  assert.notEqual(taken.code, 0);
  assert.match(taken.err.join('\n'), /TPU VM "one" already exists/);
  assert.equal((await tpw('vm', 'stop', 'one')).code, 0);
  assert.match((await tpw('vm', 'list')).out.join('\n'), /one\s+us-east5-b\s+tpu7x-8\s+STOPPED/);
  assert.equal((await tpw('vm', 'delete', 'one')).code, 0);

  const badType = await tpw('vm', 'create', 'x', '--type', 'tpu7x-7', '--control-plane', 'compute');
  assert.match(badType.err.join('\n'), /tpu7x-7/);
  const badTopo = await tpw('vm', 'create', 'x', '--type', 'tpu7x-16', '--topology', '2x2x1');
  assert.match(badTopo.err.join('\n'), /Topology "2x2x1" is not valid for tpu7x-16/);
  const tpuApi = await tpw('vm', 'create', 'x', '--type', 'tpu7x-8', '--control-plane', 'tpu-api');
  assert.match(tpuApi.err.join('\n'), /the Cloud TPU API does not offer tpu7x-8/);
  const flex = await tpw('vm', 'create', 'x', '--type', 'tpu7x-8', '--flex-start');
  assert.match(flex.err.join('\n'), /--flex-start needs --max-run-duration/);
  emu?.rest.addCapacityFault({ zone: 'us-east5-b', acceleratorType: 'tpu7x-16' });
  const so = await tpw('vm', 'create', 'so', '--type', 'tpu7x-16', '--zone', 'us-east5-b');
  emu?.rest.clearFaults();
  assert.notEqual(so.code, 0);
  assert.match(so.err.join('\n'), /No capacity of tpu7x-16 in zone us-east5-b/);
  assert.doesNotMatch((await tpw('vm', 'list')).out.join('\n'), /\bso\b/);

  const types = await tpw('vm', 'types', '--zone', 'us-east5-b');
  assert.equal(types.code, 0, types.err.join('\n'));
  const ce = types.out.find((x) => x.startsWith('Compute Engine TPU types in us-east5-b: ')) ?? '';
  assert.match(ce, /tpu7x-8 \(1×tpu7x-standard-4t\)/);
  assert.match(ce, /tpu7x-16 \(2×tpu7x-standard-4t\)/);
  assert.match(ce, /v6e-8 \(1×ct6e-standard-8t\)/);

  const dry = await tpw('vm', 'create', 'dr', '--type', 'tpu7x-16', '--project', 'p1', '--zone', 'us-central1-c', '--dry-run');
  assert.equal(dry.code, 0, dry.err.join('\n'));
  assert.deepEqual(dry.out.map((x) => x.split(' ').slice(0, 5).join(' ')), [
    'gcloud compute resource-policies create workload-policy',
    'gcloud compute instance-templates create dr-tpw-template',
    'gcloud compute instance-groups managed create',
  ]);
  assert.match(dry.out[0], /--region=us-central1 --type=HIGH_THROUGHPUT --accelerator-topology=2x2x2 --description='Made by TPU Workbench for TPU slice dr'$/);
  assert.match(dry.out[2], /--size=2 /);
});

test('a spot TPU7x VM preempted by Compute Engine mid-run: the run ends preempted, and resume recreates it on Compute Engine', async () => {
  const c = await tpw('vm', 'create', 'spot7', '--type', 'tpu7x-8', '--zone', 'us-east5-b', '--spot');
  assert.equal(c.code, 0, c.err.join('\n'));
  // Ignores SIGTERM like a trainer writing a checkpoint: only the VM's state can end this run early.
  const recipe = writeRecipeIn(ws, 'long.sh', `bash -c 'if [ -e resumed ]; then echo resumed; exit 0; fi; trap "" TERM; echo up; for i in $(seq 1 600); do sleep 0.1; done'\n`);
  const running = tpw('run', recipe, '--vm', 'spot7');
  let runId = '';
  for (let i = 0; i < 200; i++) {
    runId = (await tpw('runs')).out.find((x) => /\bspot7\b/.test(x))?.split(/\s+/)[0] ?? '';
    if (runId && (await tpw('logs', runId)).out.includes('[w0] up')) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const ep = emu?.endpoint;
  assert.ok(ep && runId);
  const pre = await fetch(`http://${ep.host}:${ep.restPort}/emulator/v1/compute/projects/${ep.project}/zones/us-east5-b/instances/spot7:preempt`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ep.token}` },
  });
  assert.equal(pre.status, 200);
  const ended = await running;
  assert.notEqual(ended.code, 0);
  assert.equal(loadRun(runId, home).status, 'preempted', [...ended.out, ...ended.err].join('\n'));
  assert.match((await tpw('vm', 'list')).out.join('\n'), /spot7\s+us-east5-b\s+tpu7x-8\s+PREEMPTED\s+1\s+-\s+compute/);

  fs.writeFileSync(path.join(ws, 'resumed'), '');
  const again = await tpw('resume', runId);
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.ok(again.out.includes('[w0] resumed'), again.out.join('\n'));
  assert.match(again.err.join('\n'), /Deleting spot7 \(PREEMPTED\)/);
  assert.match((await tpw('vm', 'list')).out.join('\n'), /spot7\s+us-east5-b\s+tpu7x-8\s+READY\s+1\s+-\s+compute/);
  assert.equal((await tpw('vm', 'delete', 'spot7')).code, 0);
});
