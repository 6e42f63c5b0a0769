/**
 * `num_nodes: 2` in a SkyPilot task YAML, against a real emulator: `tpw launch` makes (then reuses) a multislice
 * group of 2 slices × 2 hosts on the Cloud TPU API (one queued resource with a node count) and on Compute
 * Engine (2 labelled slices), syncs the workdir to every host of every slice, runs setup once per host and run
 * on every host with SkyPilot's variables numbered slice-major (as SkyPilot ranks the hosts of several TPU pods)
 * and the MEGASCALE_* ones; `tpw down` removes the whole group.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { TpuNode } from '../../extension/src/core/tpu/models';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('taskslices', testAddressPrefix(72), { before, after });
const tpw = pod.tpw;

function write(rel: string, text: string): string {
  fs.mkdirSync(path.dirname(path.join(pod.ws, rel)), { recursive: true });
  fs.writeFileSync(path.join(pod.ws, rel), text);
  return rel;
}

/** A task on `num` slices of `type`: setup counts its runs per host; run prints what a host sees. */
const task = (type: string, zone: string, num: number) => `resources:
  accelerators: tpu-${type}
  zone: ${zone}
num_nodes: ${num}
workdir: ./proj
setup: |
  echo "setup rank $SKYPILOT_SETUP_NODE_RANK of $SKYPILOT_NUM_NODES"
  echo x >> ~/setup-count
run: |
  echo "rank=$SKYPILOT_NODE_RANK n=$SKYPILOT_NUM_NODES tpu=$TPU_WORKER_ID name=$TPU_NAME slice=$MEGASCALE_SLICE_ID of=$MEGASCALE_NUM_SLICES coord=$MEGASCALE_COORDINATOR_ADDRESS wd=$(cat marker.txt) setups=$(wc -l < ~/setup-count)"
  echo "hosts=$TPU_WORKER_HOSTNAMES ips=$(printf '%s' "$SKYPILOT_NODE_IPS" | paste -sd, -)"
`;

async function nodes(): Promise<TpuNode[]> {
  const r = await tpw('vm', 'list', '--json');
  assert.equal(r.code, 0, r.err.join('\n'));
  return JSON.parse(r.out.join('\n')) as TpuNode[];
}
const slicesOf = async (group: string) =>
  (await nodes()).filter((n) => new RegExp(`/${group}-\\d+$`).test(n.name)).sort((a, b) => a.name.localeCompare(b.name));
const ipsOf = (n: TpuNode) => n.networkEndpoints.map((e) => e.ipAddress);

/** Every host's lines, as a SkyPilot rank on 2 slices × 2 hosts sees them. */
function assertHostLines(out: string[], slices: TpuNode[], wd: string, setups: number): void {
  const all = slices.flatMap(ipsOf);
  const names = ['head', 'worker1', 'worker2', 'worker3'];
  for (let rank = 0; rank < 4; rank++) {
    const s = Math.floor(rank / 2);
    const prefix = `(${names[rank]}, rank=${rank})`;
    const slice = slices[s].name.split('/').pop();
    const want = `${prefix} rank=${rank} n=4 tpu=${rank % 2} name=${slice} slice=${s} of=2 coord=${all[0]}:8080 wd=${wd} setups=${setups}`;
    assert.ok(out.includes(want), `missing "${want}" in:\n${out.join('\n')}`);
    assert.ok(out.includes(`${prefix} hosts=${ipsOf(slices[s]).join(',')} ips=${all.join(',')}`), out.join('\n'));
  }
}

before(() => {
  write('proj/marker.txt', 'one\n');
  write('tpu.yaml', task('v4-16', 'us-central2-b', 2));
  write('compute.yaml', task('tpu7x-16', 'us-east5-b', 2));
});

test('--dry-run on a missing group prints the slices, hosts and multislice variables, and creates nothing', async () => {
  const r = await tpw('launch', 'tpu.yaml', '-c', 'grp', '--dry-run');
  assert.equal(r.code, 0, r.err.join('\n'));
  const text = r.out.join('\n');
  assert.match(text, /^VM: create multislice group grp: 2 slices of tpu-v4-16 \(grp-0 … grp-1; one queued resource with 2 nodes, \S+, guaranteed\) in us-central2-b$/m);
  assert.match(text, /^Hosts: 4 \(2 slices × 2 hosts; rank = slice × 2 \+ host\) \(once created\)$/m);
  assert.match(text, /^Setup: on every host of every slice, in ~\/sky_workdir/m);
  assert.match(text, /^Run: on every host of every slice/m);
  assert.match(text, /SKYPILOT_NODE_RANK.*MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID/);
  assert.deepEqual(await slicesOf('grp'), []);
});

test('launch on the Cloud TPU API queues the group, runs setup once per host and run on all 4 hosts, slice-major', async () => {
  const r = await tpw('launch', 'tpu.yaml', '-c', 'grp');
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  assert.match(r.err.join('\n'), /Multislice group grp does not exist: queueing 2 slices of tpu-v4-16/);
  const slices = await slicesOf('grp');
  assert.deepEqual(slices.map((s) => [s.name.split('/').pop(), s.state, s.networkEndpoints.length]), [['grp-0', 'READY', 2], ['grp-1', 'READY', 2]]);
  const names = ['head', 'worker1', 'worker2', 'worker3'];
  for (let rank = 0; rank < 4; rank++) assert.ok(r.out.includes(`(setup ${names[rank]}, rank=${rank}) setup rank ${rank} of 4`), r.out.join('\n'));
  assertHostLines(r.out, slices, 'one', 1);
  const qrs = JSON.parse((await tpw('qr', 'list', '--json')).out.join('\n')) as { name: string; state: string }[];
  assert.deepEqual(qrs.map((q) => [q.name.split('/').pop(), q.state]), [['grp', 'ACTIVE']]);
});

test('launch again reuses the group and skips the unchanged setup; exec runs on it too', async () => {
  const slices = await slicesOf('grp');
  const plan = await tpw('launch', 'tpu.yaml', '-c', 'grp', '--dry-run');
  assert.equal(plan.code, 0, plan.err.join('\n'));
  assert.match(plan.out.join('\n'), /^VM: reuse multislice group grp: 2 slices of v4-16 \(grp-0, grp-1; Cloud TPU queued resource\) in us-central2-b$/m);
  const hostList = slices.flatMap((n, s) => ipsOf(n).map((ip, w) => `s${s}w${w}=${ip}`)).join(' ');
  assert.ok(plan.out.includes(`Hosts: 4 (2 slices × 2 hosts; rank = slice × 2 + host) (${hostList})`), plan.out.join('\n'));

  const again = await tpw('launch', 'tpu.yaml', '-c', 'grp');
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.match(again.err.join('\n'), /Multislice group grp exists \(2 slices of v4-16, READY in us-central2-b\): reusing it/);
  assert.match(again.err.join('\n'), /Setup: unchanged .*skipped/);
  assert.ok(!again.out.some((l) => l.startsWith('(setup')));
  assertHostLines(again.out, slices, 'one', 1);

  write('proj/marker.txt', 'two\n');
  const exec = await tpw('exec', 'grp', 'tpu.yaml');
  assert.equal(exec.code, 0, exec.err.join('\n'));
  assert.ok(!exec.out.some((l) => l.startsWith('(setup')));
  assertHostLines(exec.out, slices, 'two', 1);
  // Recorded with both slices; resume points back at the group's launch.
  const runId = exec.err.map((l) => /^Run (\S+) started on every host/.exec(l)?.[1]).find(Boolean) ?? '';
  const rec = JSON.parse(fs.readFileSync(path.join(pod.home, 'runs', `${runId}.json`), 'utf8')) as { slices?: string[]; workersPerSlice?: number };
  assert.deepEqual(rec.slices, slices.map((s) => s.name));
  assert.equal(rec.workersPerSlice, 2);
  const resume = await tpw('resume', runId);
  assert.equal(resume.code, 1);
  assert.match(resume.err.join('\n'), /launch it again with `tpw launch .*tpu\.yaml -c grp`/);
});

test('a group of another shape, or a single VM, is refused by name; num_nodes: 1 on a group is refused', async () => {
  write('three.yaml', task('v4-16', 'us-central2-b', 3));
  const three = await tpw('launch', 'three.yaml', '-c', 'grp');
  assert.equal(three.code, 1);
  assert.match(three.err.join('\n'), /Multislice group "grp" has 2 slices of v4-16, but the task asks for num_nodes: 3 of tpu-v4-16: `tpw down grp` first/);
  write('pod2.yaml', task('v5litepod-16', 'us-central2-b', 2));
  const single = await tpw('launch', 'pod2.yaml', '-c', 'pod', '--dry-run');
  assert.equal(single.code, 1);
  assert.match(single.err.join('\n'), /TPU VM "pod" is a single v5litepod-16, but the task asks for num_nodes: 2/);
  write('one.yaml', task('v4-16', 'us-central2-b', 1));
  const one = await tpw('launch', 'one.yaml', '-c', 'grp', '--dry-run');
  assert.equal(one.code, 1);
  assert.match(one.err.join('\n'), /"grp" is a multislice group of 2 slices, but the task asks for one VM \(num_nodes: 1\)/);
});

test('down removes the queued resource and both slices', async () => {
  const r = await tpw('down', 'grp');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.err.join('\n'), /Deleting multislice group grp: queued resource grp and its slices grp-0, grp-1/);
  assert.deepEqual(await slicesOf('grp'), []);
  assert.deepEqual(JSON.parse((await tpw('qr', 'list', '--json')).out.join('\n')), []);
  const gone = await tpw('down', 'grp');
  assert.equal(gone.code, 1);
  assert.match(gone.err.join('\n'), /no multislice group has that name either/);
});

test('on Compute Engine (tpu7x): 2 labelled slices, the same ranks and variables, reused, then removed by down', async () => {
  write('proj/marker.txt', 'ce\n');
  const r = await tpw('launch', 'compute.yaml', '-c', 'g7');
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  assert.match(r.err.join('\n'), /Multislice group g7 does not exist: creating 2 slices of tpu-tpu7x-16 on Compute Engine \(on-demand\) in us-east5-b/);
  const slices = await slicesOf('g7');
  assert.deepEqual(slices.map((s) => [s.name.split('/').pop(), s.controlPlane, s.labels?.['tpw-slice-group']]), [['g7-0', 'compute', 'g7'], ['g7-1', 'compute', 'g7']]);
  assertHostLines(r.out, slices, 'ce', 1);

  const again = await tpw('launch', 'compute.yaml', '-c', 'g7');
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.match(again.err.join('\n'), /Multislice group g7 exists .*reusing it/);
  assert.match(again.err.join('\n'), /Setup: unchanged .*skipped/);
  assertHostLines(again.out, slices, 'ce', 1);

  const down = await tpw('down', 'g7');
  assert.equal(down.code, 0, down.err.join('\n'));
  assert.match(down.err.join('\n'), /Deleted multislice group g7 on Compute Engine \(slices g7-0, g7-1\)/);
  assert.deepEqual(await slicesOf('g7'), []);
});
