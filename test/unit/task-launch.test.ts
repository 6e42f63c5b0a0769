/**
 * `tpw launch`, `tpw exec`, `tpw down` with SkyPilot task YAMLs written for this suite, against a real emulator:
 * the VM is created when missing and reused when present, workdir and file_mounts reach every host, setup runs
 * once per VM (again only when an input changed), run reaches every host with SkyPilot's variables, --env beats
 * envs, a secret reaches the program but never argv, our output or the registry, exec skips setup, down deletes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { TpuNode } from '../../extension/src/core/tpu/models';
import { storageDir } from '../../emulator/src/emulator';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const hasGcloud = (process.env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'gcloud')));

const pod = emulatorPodFixture('tasklaunch', testAddressPrefix(71), { before, after });
const tpw = pod.tpw;
const SECRET = 'tpw-test-secret-7f3a9c';
const sha16 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 16);

function write(rel: string, text: string): string {
  const file = path.join(pod.ws, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return rel;
}

const TASK = `name: tl
resources:
  accelerators: tpu-v5litepod-16
workdir: ./proj
file_mounts:
  ~/mounted.txt: ./data/one.txt
  ~/mdir: ./data/dir
setup: |
  echo "setting up rank $SKYPILOT_SETUP_NODE_RANK of $SKYPILOT_NUM_NODES"
  echo x >> ~/setup-count
run: |
  echo "rank=$SKYPILOT_NODE_RANK n=$SKYPILOT_NUM_NODES tpu=$TPU_WORKER_ID type=$TPU_ACCELERATOR_TYPE wd=$(cat marker.txt) m=$(cat ~/mounted.txt) d=$(cat ~/mdir/f.txt) A=$A B=$B setups=$(wc -l < ~/setup-count)"
  echo "ips=$(printf '%s' "$SKYPILOT_NODE_IPS" | paste -sd, -) task=$SKYPILOT_TASK_ID"
  ps -eww -o args > ~/ps.txt
  echo "secret=$(printf %s "$MY_SECRET" | sha256sum | cut -c1-16) in-argv=$(grep -c -F -f <(printf '%s\\n' "$MY_SECRET") ~/ps.txt) envfile=$(if [ -e "$TPW_RUN_DIR/env" ]; then stat -c %a "$TPW_RUN_DIR/env"; else echo gone; fi)"
envs:
  A: from-yaml
  B: from-yaml
secrets:
  MY_SECRET: null
`;

async function nodeOf(name: string): Promise<TpuNode | undefined> {
  const r = await tpw('vm', 'list', '--json');
  assert.equal(r.code, 0, r.err.join('\n'));
  return (JSON.parse(r.out.join('\n')) as TpuNode[]).find((n) => n.name.endsWith(`/${name}`));
}

before(() => {
  write('proj/marker.txt', 'hello\n');
  write('data/one.txt', 'one\n');
  write('data/dir/f.txt', 'f\n');
  write('task.yaml', TASK);
  process.env.MY_SECRET = SECRET;
});
after(() => {
  delete process.env.MY_SECRET;
});

test('--dry-run on a missing VM prints the plan with names only, and creates nothing', async () => {
  const r = await tpw('launch', 'task.yaml', '--env', 'B=from-cli', '--secret', 'MY_SECRET', '--dry-run');
  assert.equal(r.code, 0, r.err.join('\n'));
  const text = r.out.join('\n');
  assert.match(text, /^VM: create tl \(tpu-v5litepod-16, \S+\) in \S+/m);
  assert.match(text, /^Hosts: 4 \(once created\)/m);
  assert.match(text, /^Sync: .*proj → ~\/sky_workdir on every host/m);
  assert.match(text, /^Sync: .*one\.txt → ~\/mounted\.txt on every host/m);
  assert.match(text, /^Setup: on every host/m);
  assert.match(text, /^Variables: A, B$/m);
  assert.match(text, /^Secrets \(names only\): MY_SECRET$/m);
  assert.match(text, /SKYPILOT_NODE_RANK.*SKYPILOT_NODE_IPS/);
  assert.ok(!`${text}${r.err.join('')}`.includes(SECRET) && !text.includes('from-cli'), 'no values in the plan');
  assert.equal(await nodeOf('tl'), undefined);
});

test('launch creates the missing VM, syncs, runs setup and then run on every host with SkyPilot variables', async () => {
  const r = await tpw('launch', 'task.yaml', '--env', 'B=from-cli', '--secret', 'MY_SECRET');
  const all = [...r.out, ...r.err].join('\n');
  assert.equal(r.code, 0, all);
  assert.match(r.err.join('\n'), /VM tl does not exist: creating it/);
  const node = await nodeOf('tl');
  assert.equal(node?.state, 'READY');
  const ips = node.networkEndpoints.map((e) => e.ipAddress);
  assert.equal(ips.length, 4);
  const names = ['head', 'worker1', 'worker2', 'worker3'];
  for (const rank of [0, 1, 2, 3]) {
    const prefix = `(${names[rank]}, rank=${rank})`;
    assert.ok(r.out.includes(`(setup ${names[rank]}, rank=${rank}) setting up rank ${rank} of 4`), all);
    assert.ok(r.out.includes(`${prefix} rank=${rank} n=4 tpu=${rank} type=v5litepod-16 wd=hello m=one d=f A=from-yaml B=from-cli setups=1`), all);
    const ipLine = r.out.find((l) => l.startsWith(`${prefix} ips=`)) ?? '';
    assert.match(ipLine, new RegExp(`ips=${ips.join(',').replace(/\./g, '\\.')} task=sky-\\d{4}-\\d\\d-\\d\\d-[\\d-]+_tl_\\d{8}-\\d{6}-[0-9a-f]{4}$`));
    // The program has the secret; no process's argv on the host carries it; the 0600 env file that brought it
    // is gone once the wrapper read it.
    assert.ok(r.out.includes(`${prefix} secret=${sha16(SECRET)} in-argv=0 envfile=gone`), all);
  }
  assert.ok(!all.includes(SECRET), 'the secret is not in our output');
  const runs = fs.readdirSync(path.join(pod.home, 'runs'));
  assert.ok(runs.length >= 2, 'setup and run are recorded runs');
  for (const f of runs) assert.ok(!fs.readFileSync(path.join(pod.home, 'runs', f), 'utf8').includes(SECRET), `no secret in the registry (${f})`);
});

test('launch again reuses the VM and skips the unchanged setup; a changed workdir runs it again', async () => {
  const again = await tpw('launch', 'task.yaml', '--env', 'B=from-cli', '--secret', 'MY_SECRET');
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.match(again.err.join('\n'), /VM tl exists .*reusing it/);
  assert.match(again.err.join('\n'), /Setup: unchanged .*skipped/);
  assert.ok(!again.out.some((l) => l.startsWith('(setup')));
  assert.ok(again.out.includes('(worker2, rank=2) rank=2 n=4 tpu=2 type=v5litepod-16 wd=hello m=one d=f A=from-yaml B=from-cli setups=1'), again.out.join('\n'));

  write('proj/marker.txt', 'changed\n');
  const changed = await tpw('launch', 'task.yaml', '--secret', 'MY_SECRET');
  assert.equal(changed.code, 0, changed.err.join('\n'));
  assert.ok(changed.out.some((l) => l.startsWith('(setup head, rank=0)')), 'a changed workdir runs setup again');
  // Without --env B the YAML's value is back.
  assert.ok(changed.out.includes('(head, rank=0) rank=0 n=4 tpu=0 type=v5litepod-16 wd=changed m=one d=f A=from-yaml B=from-yaml setups=2'), changed.out.join('\n'));
});

test('exec runs on the existing VM without setup; on a missing VM it refuses', async () => {
  const r = await tpw('exec', 'tl', 'task.yaml', '--env', 'A=exec', '--secret', 'MY_SECRET');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.ok(!r.out.some((l) => l.startsWith('(setup')));
  assert.doesNotMatch(r.err.join('\n'), /creating|Setup/);
  assert.ok(r.out.includes('(worker3, rank=3) rank=3 n=4 tpu=3 type=v5litepod-16 wd=changed m=one d=f A=exec B=from-yaml setups=2'), r.out.join('\n'));

  // tpw resume takes recipes; a task's run says how to go again instead.
  const runId = r.err.map((l) => /^Run (\S+) started on every host/.exec(l)?.[1]).find(Boolean) ?? '';
  assert.match(runId, /^\d{8}-\d{6}-[0-9a-f]{4}$/, r.err.join('\n'));
  const resume = await tpw('resume', runId);
  assert.equal(resume.code, 1);
  assert.match(resume.err.join('\n'), new RegExp(`Run ${runId} ran the task YAML .*task\\.yaml, not a recipe: launch it again with \`tpw launch .*task\\.yaml -c tl\``));

  const missing = await tpw('exec', 'nope', 'task.yaml', '--secret', 'MY_SECRET');
  assert.equal(missing.code, 1);
  assert.match(missing.err.join('\n'), /TPU VM "nope" does not exist: `tpw launch` creates it/);
});

test('a task that fails on one host fails the launch; refusals name the field', async () => {
  write('fail.yaml', 'resources: {accelerators: tpu-v5litepod-16}\nrun: if [ "$SKYPILOT_NODE_RANK" = 2 ]; then exit 7; fi; sleep 30\n');
  const f = await tpw('launch', 'fail.yaml', '-c', 'tl');
  assert.equal(f.code, 1);
  assert.match(f.err.join('\n'), /Run: .*w2/);

  write('disk.yaml', 'resources: {accelerators: tpu-v6e-8, disk_size: 500}\nrun: echo\n');
  const d = await tpw('launch', 'disk.yaml', '-c', 'other');
  assert.equal(d.code, 1);
  assert.match(d.err.join('\n'), /disk\.yaml cannot run: resources\.disk_size is not supported: a TPU VM's boot disk has a fixed size/);

  write('bucket.yaml', 'resources: {accelerators: tpu-v5litepod-16}\nfile_mounts: {~/data: gs://no-such-bucket/data}\nrun: echo\n');
  const b = await tpw('launch', 'bucket.yaml', '-c', 'tl');
  assert.equal(b.code, 1);
  // The real gcloud's own error, from each host.
  assert.match(b.err.join('\n'), /Failed copying gs:\/\/no-such-bucket\/data to ~\/data: worker 0 \(.*\): ERROR: \(gcloud\.storage\.rsync\) gs:\/\/no-such-bucket not found: 404/);

  const other = await tpw('launch', 'disk.yaml', '-c', 'tl', '--dry-run');
  assert.equal(other.code, 1);
  write('v6e.yaml', 'resources: {accelerators: tpu-v6e-8}\nrun: echo\n');
  const mismatch = await tpw('launch', 'v6e.yaml', '-c', 'tl');
  assert.equal(mismatch.code, 1);
  assert.match(mismatch.err.join('\n'), /TPU VM "tl" is a v5litepod-16, but the task asks for tpu-v6e-8/);

  const noSecret = await tpw('launch', 'task.yaml', '--dry-run', '--secret', 'UNSET_SECRET_X');
  assert.equal(noSecret.code, 2);
  assert.match(noSecret.err.join('\n'), /--secret UNSET_SECRET_X: UNSET_SECRET_X is not set in your environment/);
});

test('resources reach the created VM (type, runtime_version, use_spot, labels); a STOPPED VM is started, not recreated', async () => {
  write('solo.yaml', 'resources:\n  accelerators: tpu-v5litepod-4\n  accelerator_args: {runtime_version: v2-alpha-tpuv5-lite}\n  use_spot: true\n  labels: {team: ml}\nrun: echo "solo $SKYPILOT_NODE_RANK/$SKYPILOT_NUM_NODES"\n');
  const first = await tpw('launch', 'solo.yaml', '-c', 'solo');
  assert.equal(first.code, 0, first.err.join('\n'));
  // One host: SkyPilot's single-node prefix, the task having no name.
  assert.ok(first.out.includes('(task) solo 0/1'), first.out.join('\n'));
  const node = await nodeOf('solo');
  assert.equal(node?.acceleratorType, 'v5litepod-4');
  assert.equal(node.runtimeVersion, 'v2-alpha-tpuv5-lite');
  assert.equal(node.schedulingConfig?.spot, true);
  assert.deepEqual(node.labels, { team: 'ml' });
  assert.ok(node.createTime);

  assert.equal((await tpw('vm', 'stop', 'solo')).code, 0);
  const again = await tpw('launch', 'solo.yaml', '-c', 'solo');
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.match(again.err.join('\n'), /VM solo is STOPPED: starting it/);
  assert.ok(again.out.includes('(task) solo 0/1'));
  assert.equal((await nodeOf('solo'))?.createTime, node.createTime, 'the same VM, started again');
  assert.equal((await tpw('down', 'solo')).code, 0);
});

test('gs:// file_mounts are copied on every host by the real gcloud, from the emulator\'s Cloud Storage', { skip: !hasGcloud && 'gcloud is not installed on this machine' }, async () => {
  // A bucket of the emulator is a folder of its storage; the workers' gcloud reaches it as a TPU VM's reaches Cloud Storage.
  const bucket = path.join(storageDir(path.join(pod.home, 'emulator')), 'tpw-test-bucket');
  fs.mkdirSync(path.join(bucket, 'data/sub'), { recursive: true });
  fs.writeFileSync(path.join(bucket, 'data/a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(bucket, 'data/sub/b.txt'), 'beta\n');
  fs.writeFileSync(path.join(bucket, 'other.txt'), 'not under data/\n');
  write('gs.yaml', 'resources: {accelerators: tpu-v5litepod-16}\nfile_mounts: {~/gsdata: gs://tpw-test-bucket/data, ~/cfg/one.txt: gs://tpw-test-bucket/other.txt}\nrun: echo "a=$(cat ~/gsdata/a.txt) b=$(cat ~/gsdata/sub/b.txt) files=$(find ~/gsdata -type f | wc -l) one=$(cat ~/cfg/one.txt)"\n');
  const r = await tpw('launch', 'gs.yaml', '-c', 'tl');
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  assert.match(r.err.join('\n'), /Copying gs:\/\/tpw-test-bucket\/data → ~\/gsdata on every host/);
  for (const [rank, name] of ['head', 'worker1', 'worker2', 'worker3'].entries()) assert.ok(r.out.includes(`(${name}, rank=${rank}) a=alpha b=beta files=2 one=not under data/`), r.out.join('\n'));
});

test('setup runs again when a gs:// mount\'s content changed, not only its name', { skip: !hasGcloud && 'gcloud is not installed on this machine' }, async () => {
  const bucket = path.join(storageDir(path.join(pod.home, 'emulator')), 'tpw-setup-bucket');
  fs.mkdirSync(bucket, { recursive: true });
  fs.writeFileSync(path.join(bucket, 'vocab.txt'), 'v1\n');
  write('gs-setup.yaml', 'resources: {accelerators: tpu-v5litepod-16}\nfile_mounts: {~/vocab: gs://tpw-setup-bucket}\nsetup: echo "setup saw $(cat ~/vocab/vocab.txt)"\nrun: echo ran\n');
  const first = await tpw('launch', 'gs-setup.yaml', '-c', 'tl');
  assert.equal(first.code, 0, first.err.join('\n'));
  assert.ok(first.out.some((l) => l.endsWith('setup saw v1')), first.out.join('\n'));
  const same = await tpw('launch', 'gs-setup.yaml', '-c', 'tl');
  assert.match(same.err.join('\n'), /Setup: unchanged since it last ran on every host/);
  fs.writeFileSync(path.join(bucket, 'vocab.txt'), 'v2\n');
  const changed = await tpw('launch', 'gs-setup.yaml', '-c', 'tl');
  assert.equal(changed.code, 0, changed.err.join('\n'));
  assert.doesNotMatch(changed.err.join('\n'), /Setup: unchanged/);
  assert.ok(changed.out.some((l) => l.endsWith('setup saw v2')), changed.out.join('\n'));
});

test('--secret K=V works but warns that other users can read it; the help says so', async () => {
  const r = await tpw('launch', 'task.yaml', '--dry-run', '--secret', 'MY_SECRET=visible-in-ps');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.err.join('\n'), /Warning: --secret MY_SECRET=… puts the value in tpw's command line, which every user of this machine can read \(ps, \/proc\): export MY_SECRET and pass --secret MY_SECRET instead\./);
  assert.doesNotMatch([...r.out, ...r.err].join('\n'), /visible-in-ps/);
  const help = await tpw('launch', '--help');
  assert.match(help.out.join('\n'), /K=V works but other local users can read V in `ps`/);
});

test('down deletes the VM', async () => {
  const r = await tpw('down', 'tl');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.equal(await nodeOf('tl'), undefined);
});
