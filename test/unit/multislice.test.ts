/**
 * Multislice on the Cloud TPU API, against the emulator through the real `@google-cloud/tpu` client: `tpw vm
 * create NAME --slices 2` makes one queued resource with multisliceParams, whose slices NAME-0 and NAME-1 the
 * emulator creates as Cloud TPU names them; `tpw run --vm NAME` runs on every worker of both slices with
 * `[s1w0]` prefixes and the MEGASCALE_* variables; the real trainer (torch on CPU, gloo) trains across the
 * two slices exactly as on one slice of four workers; the sample recipe runs two ranks per worker (the native
 * path, as on a TPU host); one slice preempted ends the whole run as preempted, and `tpw resume` recreates that
 * slice only.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { runTpw, type CliResult } from '../helpers/cli';
import { freePort } from '../helpers/sshd';
import { emulatorRequest } from '../helpers/emulator-http';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { Emulator } from '../../emulator/src/emulator';
import { loadRun } from '../../extension/src/core/run/engine';
import { gcloudQueuedCommand } from '../../extension/src/core/tpu/gcloud-command';
import { findSliceGroup } from '../../extension/src/core/slices/multislice';
import { testAddressPrefix } from '../helpers/loopback';

let home: string;
let ws: string;
let emu: Emulator;
let backend: Backend;
const saved = process.env.TPW_HOME;
const ZONE = 'us-central2-b';

/** `tpw argv…` in this process, from the test's workspace. */
const cli = (...argv: string[]): Promise<CliResult> => runTpw(ws, argv);

async function waitActive(qr: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await cli('qr', 'list', '--json');
    const rows = JSON.parse(r.out.join('\n')) as { name: string; state: string }[];
    const row = rows.find((x) => x.name.endsWith(`/queuedResources/${qr}`));
    if (row?.state === 'ACTIVE') return;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.fail(`queued resource ${qr} never became ACTIVE`);
}

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-multislice-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-multislice-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(14) });
  await emu.start();
  backend = await openBackend({ useEmulator: true });
  fs.mkdirSync(path.join(ws, 'recipes'));
  fs.writeFileSync(
    path.join(ws, 'recipes', 'where.sh'),
    `bash -c 'echo "slices=$MEGASCALE_NUM_SLICES slice=$MEGASCALE_SLICE_ID coordinator=$MEGASCALE_COORDINATOR_ADDRESS tpu_worker=$TPU_WORKER_ID hosts=$(echo $TPU_WORKER_HOSTNAMES | tr , " " | wc -w)"'\n`,
  );
  fs.writeFileSync(
    path.join(ws, 'recipes', 'train.sh'),
    'export OMP_NUM_THREADS=1\npython3 -m tpu_trainer.train model=tiny-llama max_steps=3 logging_steps=1 global_batch_size=8 block_size=32 seed=7 optimizer.lr=1e-2 num_threads=1 checkpoint.enabled=false device=cpu distributed_timeout_s=120\n',
  );
  // Until recipes/resumed exists: says it is up, then waits (only the VM poll ends it early).
  fs.writeFileSync(path.join(ws, 'recipes', 'long.sh'), `bash -c 'if [ -e recipes/resumed ]; then echo "resumed slice=$MEGASCALE_SLICE_ID"; exit 0; fi; trap "" TERM; echo up; for i in $(seq 1 600); do sleep 0.1; done'\n`);
});

after(async () => {
  await backend?.close();
  await emu?.stop();
  if (saved === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = saved;
});

test('--slices 2 queues one multislice queued resource; the gcloud equivalent uses --node-count and --node-prefix', async () => {
  const dry = await cli('vm', 'create', 'grp', '--type', 'v4-16', '--slices', '2', '--version', 'tpu-ubuntu2204-base', '--zone', ZONE, '--project', 'p', '--dry-run');
  assert.equal(dry.code, 0, dry.err.join('\n'));
  assert.match(dry.out.join(' '), /queued-resources create grp .*--node-count=2 --node-prefix=grp /);
  assert.doesNotMatch(dry.out.join(' '), /--node-id/);
  assert.equal(gcloudQueuedCommand({ project: 'p', zone: ZONE, queuedResourceId: 'one', node: { nodeId: 'one', acceleratorType: 'v4-8', runtimeVersion: 'v' }, tier: 'guaranteed' }).includes("--node-id=one"), true);

  const r = await cli('vm', 'create', 'grp', '--type', 'v4-16', '--slices', '2', '--spot');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out.join('\n'), /grp ACCEPTED: nodes grp-0, grp-1 are created once capacity is there/);
  await waitActive('grp');
  const group = await findSliceGroup(backend, 'grp');
  assert.ok(group);
  assert.deepEqual(group.slices.map((s) => s.name.split('/').pop()), ['grp-0', 'grp-1']);
  for (const s of group.slices) {
    assert.equal(s.multisliceNode, true);
    assert.match(s.queuedResource ?? '', /\/queuedResources\/grp$/);
    assert.equal(s.networkEndpoints.length, 2, 'v4-16 is 2 workers per slice');
  }
  const bad = await cli('vm', 'create', 'bad', '--type', 'v4-16', '--slices', 'two');
  assert.equal(bad.code, 2);
  assert.match(bad.err.join('\n'), /--slices must be a whole number from 1 to 64 \(got "two"\)/);
});

test('a run on the group goes to every worker of every slice, with [sNwM] prefixes and the multislice variables', async () => {
  const group = await findSliceGroup(backend, 'grp');
  assert.ok(group);
  const coordinator = `${group.slices[0].networkEndpoints[0].ipAddress}:8080`;
  const r = await cli('run', 'recipes/where.sh', '--vm', 'grp');
  assert.equal(r.code, 0, r.err.join('\n'));
  const lines = r.out.filter((l) => l.includes('slices=')).sort();
  assert.deepEqual(lines, [
    `[s0w0] slices=2 slice=0 coordinator=${coordinator} tpu_worker=0 hosts=2`,
    `[s0w1] slices=2 slice=0 coordinator=${coordinator} tpu_worker=1 hosts=2`,
    `[s1w0] slices=2 slice=1 coordinator=${coordinator} tpu_worker=0 hosts=2`,
    `[s1w1] slices=2 slice=1 coordinator=${coordinator} tpu_worker=1 hosts=2`,
  ]);
  const runId = /Run (\S+) started/.exec(r.err.join('\n'))?.[1];
  assert.ok(runId, r.err.join('\n'));
  const rec = loadRun(runId, home);
  assert.deepEqual(rec.slices?.map((s) => s.split('/').pop()), ['grp-0', 'grp-1']);
  assert.equal(rec.workersPerSlice, 2);
  assert.equal(rec.workers.length, 4);
  assert.equal(rec.status, 'succeeded');
});

/** `step N loss L` per worker label, from a run's prefixed output. */
function losses(out: string[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const l of out) {
    const m = /^\[(\w+)\] step (\d+) loss (\S+)/.exec(l);
    if (m) by.set(m[1], [...(by.get(m[1]) ?? []), `${m[2]}:${m[3]}`]);
  }
  return by;
}

test('the trainer on 2 slices of 2 workers (dcn_mesh.data=2) trains exactly as on 1 slice of 4 workers', async () => {
  assert.equal((await cli('vm', 'create', 'quad', '--type', 'v4-32')).code, 0);
  // The rendezvous port on worker 0, free on this machine (torch's store listens on every address).
  const two = await cli('run', 'recipes/train.sh', '--vm', 'grp', '--', 'dcn_mesh.data=2', `coordinator_port=${await freePort()}`);
  assert.equal(two.code, 0, [...two.out, ...two.err].join('\n'));
  const one = await cli('run', 'recipes/train.sh', '--vm', 'quad', '--', `coordinator_port=${await freePort()}`);
  assert.equal(one.code, 0, [...one.out, ...one.err].join('\n'));
  const byTwo = losses(two.out);
  const byOne = losses(one.out);
  assert.deepEqual([...byTwo.keys()].sort(), ['s0w0', 's0w1', 's1w0', 's1w1']);
  assert.deepEqual([...byOne.keys()].sort(), ['w0', 'w1', 'w2', 'w3']);
  const ref = byOne.get('w0');
  assert.equal(ref?.length, 3, one.out.join('\n'));
  for (const seq of [...byTwo.values(), ...byOne.values()]) assert.deepEqual(seq, ref);
  assert.match(two.out.join('\n'), /slice 1\/2 \(gloo\)/);
});

test('the sample recipe runs the native path: two CPU ranks per worker, one world over every worker', async () => {
  // The recipe as "Run on TPU" runs it: device=auto picks plain PyTorch here, nproc_per_node=2 starts two ranks on
  // each of the VM's 2 workers, and the 4 ranks shard the model with FSDP2 over gloo as a TPU host's devices would.
  fs.copyFileSync(path.join(__dirname, '..', '..', 'recipes', 'tiny-llama.sh'), path.join(ws, 'recipes', 'tiny-llama.sh'));
  assert.equal((await cli('vm', 'create', 'pair', '--type', 'v4-16')).code, 0);
  const r = await cli('run', 'recipes/tiny-llama.sh', '--vm', 'pair', '--', 'max_steps=2', 'logging_steps=1', 'distributed_timeout_s=120', `coordinator_port=${await freePort()}`);
  const text = [...r.out, ...r.err].join('\n');
  assert.equal(r.code, 0, text);
  assert.match(text, /\[w0\] mesh data=1 fsdp=4 tensor=1 expert=1 .* rank 0\/4 \(gloo\)/);
  assert.match(text, /\[w1\] mesh data=1 fsdp=4 tensor=1 expert=1 .* rank 2\/4 \(gloo\)/);
  const by = losses(r.out);
  assert.deepEqual([...by.keys()].sort(), ['w0', 'w1']);
  assert.equal(by.get('w0')?.length, 2, text);
  assert.deepEqual(by.get('w1'), by.get('w0')); // one world: every worker logs the mean over all 4 ranks
});

test('one slice preempted: the whole run is preempted, and resume recreates only that slice', async () => {
  const started: string[] = [];
  const run = cli('run', 'recipes/long.sh', '--vm', 'grp');
  // Preempt slice 1 once all four workers are up.
  const ep = emu.endpoint;
  assert.ok(ep);
  for (let i = 0; i < 300; i++) {
    const runsDir = path.join(home, 'runs');
    const recs = fs.existsSync(runsDir) ? fs.readdirSync(runsDir).filter((f) => f.endsWith('.json')) : [];
    const active = recs.map((f) => JSON.parse(fs.readFileSync(path.join(runsDir, f), 'utf8')) as { runId: string; status: string; recipe: string }).find((x) => x.status === 'running' && x.recipe.endsWith('long.sh'));
    if (active) {
      started.push(active.runId);
      break;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(started.length, 1, 'the run started');
  // Every worker says "up" in its run log before slice 1 goes away (however long that takes on a busy machine).
  const logs = ['grp-0', 'grp-1'].flatMap((slice) => [0, 1].map((w) => path.join(emu.sandboxDir(slice, w), '.tpw', 'runs', started[0], 'log')));
  for (const deadline = Date.now() + 120_000; !logs.every((l) => fs.existsSync(l) && fs.readFileSync(l, 'utf8').includes('up')); await new Promise((res) => setTimeout(res, 100))) {
    assert.ok(Date.now() < deadline, `not every worker said up: ${logs.join(', ')}`);
  }
  const pre = await emulatorRequest(ep, 'POST', `/emulator/v1/projects/${backend.project}/locations/${ZONE}/nodes/grp-1:preempt`);
  assert.equal(pre.status, 200);
  const r = await run;
  assert.equal(r.code, 1, r.out.join('\n'));
  const rec = loadRun(started[0], home);
  assert.equal(rec.status, 'preempted');
  assert.match(rec.reason ?? '', /grp-1 went PREEMPTED/);

  fs.writeFileSync(path.join(ws, 'recipes', 'resumed'), '');
  const again = await cli('resume', started[0]);
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.match(again.err.join('\n'), /Deleting grp-1 \(PREEMPTED\)/);
  assert.doesNotMatch(again.err.join('\n'), /Deleting grp-0/);
  assert.deepEqual(again.out.filter((l) => l.includes('resumed')).sort(), ['[s0w0] resumed slice=0', '[s0w1] resumed slice=0', '[s1w0] resumed slice=1', '[s1w1] resumed slice=1']);
});
