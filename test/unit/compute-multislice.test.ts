/**
 * Multislice on Compute Engine, against the emulator through the real `@google-cloud/compute` client: `tpw vm
 * create NAME --type tpu7x-16 --slices 2` makes two 2-VM slice MIGs NAME-0 and NAME-1 labelled with their group
 * (all or nothing), `tpw run --vm NAME` runs on every worker of both with `[s1w0]` prefixes and the MEGASCALE_*
 * variables, a spot VM of slice 1 preempted by Compute Engine ends the whole run as preempted and `tpw resume`
 * recreates slice 1 only, and `tpw vm delete NAME` deletes every slice of the group.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { Emulator } from '../../emulator/src/emulator';
import { loadRun } from '../../extension/src/core/run/registry';
import { findRunTarget, findSliceGroup } from '../../extension/src/core/slices/multislice';
import { runTpw, writeRecipeIn } from '../helpers/cli';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

let home = '';
let ws = '';
let emu: Emulator | undefined;
let backend: Backend | undefined;
const savedHome = process.env.TPW_HOME;
const ZONE = 'us-east5-b';
const tpw = (...argv: string[]) => runTpw(ws, argv);

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-computems-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-computems-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(147) });
  await emu.start();
  backend = await openBackend({ useEmulator: true });
});

after(async () => {
  await backend?.close();
  await emu?.stop();
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

test('--slices 2 on Compute Engine makes two slice MIGs NAME-0 and NAME-1, found again as one group', async () => {
  const dry = await tpw('vm', 'create', 'grp', '--type', 'tpu7x-16', '--slices', '2', '--project', 'p1', '--zone', 'us-central1-c', '--dry-run');
  assert.equal(dry.code, 0, dry.err.join('\n'));
  const migs = dry.out.filter((l) => l.startsWith('gcloud compute instance-groups managed create'));
  assert.deepEqual(migs.map((l) => l.split(' ')[5]), ['grp-0', 'grp-1']);
  assert.equal(dry.out.length, 6, dry.out.join('\n'));

  const c = await tpw('vm', 'create', 'grp', '--type', 'tpu7x-16', '--slices', '2', '--zone', ZONE, '--spot');
  assert.equal(c.code, 0, c.err.join('\n'));
  assert.match(c.err.join('\n'), /Creating multislice group grp on Compute Engine: 2 slices grp-0 … grp-1 \(each tpu7x-16, topology 2x2x2, 2 VMs/);
  const w = esc(testAddressPrefix(147));
  for (const g of ['grp-0', 'grp-1']) assert.match(c.out.join('\n'), new RegExp(`^${g} READY: w0=${w}\\.\\d+ w1=${w}\\.\\d+$`, 'm'));
  const l = (await tpw('vm', 'list')).out.join('\n');
  assert.match(l, /grp-0\s+us-east5-b\s+tpu7x-16\s+READY\s+2\s+-\s+compute/);
  assert.match(l, /grp-1\s+us-east5-b\s+tpu7x-16\s+READY\s+2\s+-\s+compute/);

  assert.ok(backend);
  const group = await findSliceGroup(backend, 'grp');
  assert.ok(group);
  assert.equal(group.controlPlane, 'compute');
  assert.equal(group.zone, ZONE);
  assert.deepEqual(group.slices.map((s) => s.name.split('/').pop()), ['grp-0', 'grp-1']);
  for (const s of group.slices) {
    assert.equal(s.sliceGroup, group.group);
    assert.match(s.sliceGroup ?? '', /\/sliceGroups\/grp$/);
    assert.equal(s.networkEndpoints.length, 2);
    assert.equal(s.schedulingConfig?.spot, true);
  }
  const target = await findRunTarget(backend, 'grp');
  assert.equal(target.slices?.length, 2);
  // A slice is still a VM on its own.
  assert.equal((await findRunTarget(backend, 'grp-1')).slices, undefined);
});

test('a run on the group goes to every worker of every slice, with [sNwM] prefixes and the multislice variables', async () => {
  assert.ok(backend);
  const group = await findSliceGroup(backend, 'grp');
  assert.ok(group);
  const coordinator = `${group.slices[0].networkEndpoints[0].ipAddress}:8080`;
  const recipe = writeRecipeIn(ws, 'where.sh', `bash -c 'echo "slices=$MEGASCALE_NUM_SLICES slice=$MEGASCALE_SLICE_ID coordinator=$MEGASCALE_COORDINATOR_ADDRESS tpu_worker=$TPU_WORKER_ID hosts=$(echo $TPU_WORKER_HOSTNAMES | tr , " " | wc -w)"'\n`);
  const r = await tpw('run', recipe, '--vm', 'grp');
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  assert.deepEqual(r.out.filter((l) => l.includes('slices=')).sort(), [
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
  assert.equal(rec.status, 'succeeded');
});

test('a spot VM of one slice preempted: the whole run is preempted, and resume recreates only that slice', async () => {
  assert.ok(backend && emu);
  // Ignores SIGTERM like a trainer writing a checkpoint: only the VMs' state can end this run early.
  const recipe = writeRecipeIn(ws, 'long.sh', `bash -c 'if [ -e resumed ]; then echo "resumed slice=$MEGASCALE_SLICE_ID"; exit 0; fi; trap "" TERM; echo up; for i in $(seq 1 600); do sleep 0.1; done'\n`);
  const running = tpw('run', recipe, '--vm', 'grp');
  let runId = '';
  for (let i = 0; i < 300; i++) {
    runId = (await tpw('runs')).out.find((x) => /\bgrp\b/.test(x) && /running/.test(x))?.split(/\s+/)[0] ?? '';
    if (runId && (await tpw('logs', runId)).out.filter((l) => / up$/.test(l)).length === 4) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok(runId, 'the run started on all four workers');
  const victim = (await backend.compute.getSlice(backend.project, ZONE, 'grp-1')).workers[1].instance;
  const before0 = (await backend.compute.getSlice(backend.project, ZONE, 'grp-0')).workers.map((w) => w.instance);
  const ep = emu.endpoint;
  assert.ok(ep);
  const pre = await fetch(`http://${ep.host}:${ep.restPort}/emulator/v1/compute/projects/${ep.project}/zones/${ZONE}/instances/${victim}:preempt`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ep.token}` },
  });
  assert.equal(pre.status, 200);
  const ended = await running;
  assert.notEqual(ended.code, 0);
  const rec = loadRun(runId, home);
  assert.equal(rec.status, 'preempted', [...ended.out, ...ended.err].join('\n'));
  assert.match(rec.reason ?? '', /grp-1 went PREEMPTED/);
  assert.match((await tpw('vm', 'list')).out.join('\n'), /grp-1\s+us-east5-b\s+tpu7x-16\s+PREEMPTED\s+2/);

  fs.writeFileSync(path.join(ws, 'resumed'), '');
  const again = await tpw('resume', runId);
  assert.equal(again.code, 0, [...again.out, ...again.err].join('\n'));
  assert.match(again.err.join('\n'), /Deleting grp-1 \(PREEMPTED\)/);
  assert.doesNotMatch(again.err.join('\n'), /Deleting grp-0/);
  assert.deepEqual(again.out.filter((l) => l.includes('resumed')).sort(), ['[s0w0] resumed slice=0', '[s0w1] resumed slice=0', '[s1w0] resumed slice=1', '[s1w1] resumed slice=1']);
  // Slice 0 kept its VMs; slice 1 is new, spot again, and still in the group.
  assert.deepEqual((await backend.compute.getSlice(backend.project, ZONE, 'grp-0')).workers.map((w) => w.instance), before0);
  const back = await findSliceGroup(backend, 'grp');
  assert.ok(back);
  assert.deepEqual(back.slices.map((s) => `${s.name.split('/').pop()} ${s.state} ${s.schedulingConfig?.spot}`), ['grp-0 READY true', 'grp-1 READY true']);
});

test('a group whose second slice fails leaves nothing behind; vm delete NAME deletes every slice of a group', async () => {
  assert.ok(emu);
  emu.rest.addFault({ method: 'compute\\.instances\\.insert', code: 'RESOURCE_EXHAUSTED', count: 1 });
  const bad = await tpw('vm', 'create', 'half', '--type', 'tpu7x-8', '--slices', '2', '--zone', ZONE);
  emu.rest.clearFaults();
  assert.notEqual(bad.code, 0);
  assert.match(bad.err.join('\n'), /half-[01]/);
  assert.doesNotMatch((await tpw('vm', 'list')).out.join('\n'), /\bhalf-/);

  const d = await tpw('vm', 'delete', 'grp');
  assert.equal(d.code, 0, d.err.join('\n'));
  assert.equal(d.out.at(-1), 'grp: deleted (slices grp-0, grp-1)');
  assert.doesNotMatch((await tpw('vm', 'list')).out.join('\n'), /\bgrp-/);
  const none = await tpw('vm', 'delete', 'grp');
  assert.notEqual(none.code, 0);
  assert.match(none.err.join('\n'), /TPU VM "grp" not found/);
});
