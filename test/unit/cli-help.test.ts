/**
 * `tpw`'s command line: each command's own help, each command refusing the options it does not take, unknown
 * commands and subcommands with a did-you-mean (exit 2, never the global help), and `tpw run … -- OVERRIDES`
 * passing option-like overrides on literally. The CLI runs in this process (its exit code and the lines it prints),
 * and once as a child process, to show a user's shell sees the same.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { buildStopScript } from '../../extension/src/core/run/remote-script';
import { cliReference } from '../../extension/src/cli/reference';
import { spawnTpw, tpwInProcess, writeRecipeIn } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli-help-'));
const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli-help-ws-'));
const env = { TPW_HOME: home, TPW_PROJECT: undefined, TPW_ZONES: undefined };
const tpw = (...argv: string[]) => tpwInProcess(argv, { cwd: ws, env });

after(() => {
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

test('tpw --help lists every command; bare tpw prints it with exit 2; --version', async () => {
  const help = await tpw('--help');
  assert.equal(help.code, 0, help.stderr);
  for (const usage of [
    'tpw vm list',
    'tpw vm create NAME --type TYPE',
    'tpw vm delete NAME',
    'tpw vm start NAME',
    'tpw vm stop NAME',
    'tpw vm add-key NAME',
    'tpw vm types',
    'tpw vm zones [--type TYPE]',
    'tpw vm cost TYPE',
    'tpw qr list',
    'tpw qr delete NAME',
    'tpw run RECIPE --vm NAME',
    'tpw runs',
    'tpw logs RUN [--follow]',
    'tpw stop RUN',
    'tpw resume RUN',
    'tpw emulator start',
    'tpw emulator stop',
    'tpw emulator status',
    'tpw flags lint FILE',
    'tpw flags explain NAME',
  ]) {
    assert.ok(help.stdout.split('\n').some((l) => l.startsWith(`  ${usage}`)), `global help lists ${usage}:\n${help.stdout}`);
  }
  for (const flag of ['--project P', '--zone Z', '--emulator', '--accept-new-host-keys', '-h, --help', '--version']) assert.match(help.stdout, new RegExp(`^  ${flag}`, 'm'));
  assert.doesNotMatch(help.stdout, /run-foreground/, 'the internal subcommand is not listed');
  const bare = await tpw();
  assert.equal(bare.code, 2);
  assert.equal(bare.stdout, help.stdout);
  const version = await tpw('--version');
  assert.deepEqual([version.code, version.stdout], [0, '0.1.0\n']);
});

test('a user\'s shell sees what the CLI prints: the help on stdout with exit 0, a refusal on stderr with exit 2', async () => {
  for (const argv of [['vm', 'create', '--help'], ['vm', 'list', '--follow']]) {
    const [child, here] = await Promise.all([spawnTpw(argv, { cwd: ws, env }), tpw(...argv)]);
    assert.deepEqual(child, here, `tpw ${argv.join(' ')}`);
  }
});

test('docs/cli.md is every command\'s help as the CLI prints it (regenerate: npx tsx scripts/gen-cli-docs.ts)', async () => {
  const doc = fs.readFileSync(path.join(__dirname, '../../docs/cli.md'), 'utf8');
  assert.equal(doc, cliReference());
  const create = await tpw('vm', 'create', '--help');
  assert.ok(doc.includes(create.stdout.trimEnd()), 'the page holds what `tpw vm create --help` prints');
});

test('each command and command group has its own help', async () => {
  const vm = await tpw('vm', '--help');
  assert.equal(vm.code, 0, vm.stderr);
  assert.match(vm.stdout, /^Usage: tpw vm COMMAND/);
  for (const sub of ['list', 'create NAME --type TYPE', 'delete NAME', 'start NAME', 'stop NAME', 'add-key NAME', 'types', 'zones', 'cost TYPE']) assert.match(vm.stdout, new RegExp(`^  ${sub}`, 'm'));
  assert.doesNotMatch(vm.stdout, /tpw run RECIPE|tpw flags/, 'not the global help');

  const create = await tpw('vm', 'create', '--help');
  assert.equal(create.code, 0, create.stderr);
  assert.match(create.stdout, /^Usage: tpw vm create NAME --type TYPE \[options\]\n\nCreate a TPU VM/);
  for (const o of ['--type TYPE', '--version V', '--zone Z', '--spot', '--reserved', '--startup-script FILE', '--label K=V', '--data-disk SOURCE', '--description D', '--queued', '--tier spot\\|guaranteed', '--valid-until', '--dry-run', '--project P', '--emulator', '-h, --help']) {
    assert.match(create.stdout, new RegExp(`^  ${o}`, 'm'), `vm create --help names ${o}`);
  }
  assert.doesNotMatch(create.stdout, /--vm NAME|--follow|--accept-new-host-keys|--json/, 'only the options vm create takes');

  const run = await tpw('run', '-h');
  assert.equal(run.code, 0);
  assert.match(run.stdout, /^Usage: tpw run RECIPE --vm NAME \[options\] \[-- OVERRIDE\.\.\.\]/);
  for (const o of ['--vm NAME', '--no-fail-fast', '--detach', '--accept-new-host-keys', '--project P', '--zone Z']) assert.match(run.stdout, new RegExp(`^  ${o}`, 'm'));
  assert.match(run.stdout, /^ {2}-- \.\.\. +Everything after -- is taken as hydra OVERRIDEs/m);

  const logs = await tpw('logs', '--help');
  assert.match(logs.stdout, /^ {2}-f, --follow +Follow until the run ends/m);
  const explain = await tpw('flags', 'explain', '--help');
  assert.match(explain.stdout, /^Usage: tpw flags explain NAME\.\.\. \[--json\]/);
  // A help request wins over a bad option next to it, and works before the command words too.
  assert.equal((await tpw('vm', 'cost', '--bogus', '--help')).code, 0);
  assert.match((await tpw('--help', 'qr', 'delete')).stdout, /^Usage: tpw qr delete NAME \[--force\]/);
});

test('tpw stop --help names the signals the stop program sends, in its order', async () => {
  const stop = await tpw('stop', '--help');
  assert.equal(stop.code, 0);
  const said = [...stop.stdout.matchAll(/SIG(INT|TERM|KILL)/g)].map((m) => m[1]);
  const script = buildStopScript({ runId: 'r', graceMs: 5000 });
  const sent = [...script.matchAll(/kill -(INT|TERM|KILL) /g)].map((m) => m[1]);
  assert.deepEqual(sent, ['INT', 'TERM', 'KILL']);
  assert.deepEqual(said, sent);
  // SIGTERM goes out after half the grace period (the script counts in 0.1 s steps): "halfway through a 5 s grace period".
  assert.match(script, /kill -INT -- "-\$g" 2>\/dev\/null\nwaitgone 25\n/);
  assert.match(stop.stdout.replace(/\s+/g, ' '), /SIGTERM halfway through a 5 s grace period/);
  const guide = fs.readFileSync(path.join(__dirname, '../../docs/guide.md'), 'utf8');
  assert.match(guide.replace(/\s+/g, ' '), /`tpw stop RUN` \(SIGINT, then SIGTERM halfway through a 5 s grace period, then SIGKILL\)/);
});

test('an option a command does not take is refused, naming the option and the command (exit 2)', async () => {
  const cases: [string[], string][] = [
    [['runs', '--type', 'x'], 'tpw runs: unknown option --type; see tpw runs --help'],
    [['vm', 'list', '--follow'], 'tpw vm list: unknown option --follow; see tpw vm list --help'],
    [['vm', 'cost', 'v4-8', '--vm', 'x'], 'tpw vm cost: unknown option --vm; see tpw vm cost --help'],
    [['emulator', 'status', '--json'], 'tpw emulator status: unknown option --json; see tpw emulator status --help'],
    [['logs', 'r1', '--detach'], 'tpw logs: unknown option --detach; see tpw logs --help'],
    [['qr', 'list', '--force'], 'tpw qr list: unknown option --force; see tpw qr list --help'],
    [['run', 'r.sh', '--vm', 'x', '--version', '1'], 'tpw run: unknown option --version; see tpw run --help'],
    [['vm', 'create', 'x', '--typ', 'v4-8'], 'tpw vm create: unknown option --typ (did you mean --type?); see tpw vm create --help'],
    [['runs', '--zone', 'z'], 'tpw runs: --zone does not apply to this command; see tpw runs --help'],
    [['vm', 'zones', '--zone', 'z'], 'tpw vm zones: --zone does not apply to this command; see tpw vm zones --help'],
    [['--zone', 'z', 'flags', 'lint', 'f'], 'tpw flags lint: --zone does not apply to this command; see tpw flags lint --help'],
    [['vm', 'list', '--', 'x'], 'tpw vm list: unexpected argument "x" after --; see tpw vm list --help'],
  ];
  for (const [argv, message] of cases) {
    const r = await tpw(...argv);
    assert.equal(r.code, 2, `tpw ${argv.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `${message}\n`);
    assert.equal(r.stdout, '');
  }
});

test('an unknown command or subcommand is refused with a did-you-mean, also with --help (exit 2)', async () => {
  const cases: [string[], string][] = [
    [['nosuch'], 'tpw: unknown command "nosuch" (see tpw --help)'],
    [['nosuch', '--help'], 'tpw: unknown command "nosuch" (see tpw --help)'],
    [['vn', 'list'], 'tpw: unknown command "vn"; did you mean vm? (see tpw --help)'],
    [['stpo', 'r1'], 'tpw: unknown command "stpo"; did you mean stop? (see tpw --help)'],
    [['emu', 'start'], 'tpw: unknown command "emu"; did you mean emulator? (see tpw --help)'],
    [['vm', 'lst'], 'tpw vm: unknown command "lst"; did you mean list? (see tpw vm --help)'],
    [['vm', 'lst', '--help'], 'tpw vm: unknown command "lst"; did you mean list? (see tpw vm --help)'],
    [['--project', 'p', 'vm', 'cre', 'x'], 'tpw vm: unknown command "cre"; did you mean create? (see tpw vm --help)'],
    [['flags', 'lnt', 'f'], 'tpw flags: unknown command "lnt"; did you mean lint? (see tpw flags --help)'],
    [['emulator', 'run'], 'tpw emulator: unknown command "run" (see tpw emulator --help)'],
    [['vm'], 'tpw vm: missing command, one of: list, create, delete, start, stop, add-key, types, zones, cost (see tpw vm --help)'],
  ];
  for (const [argv, message] of cases) {
    const r = await tpw(...argv);
    assert.equal(r.code, 2, `tpw ${argv.join(' ')}`);
    assert.equal(r.stderr, `${message}\n`);
    assert.equal(r.stdout, '', 'not the global help');
  }
});

test('tpw run passes everything after -- to the recipe literally, option-like overrides included', async (t) => {
  const emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(21) });
  await emu.start();
  t.after(() => emu.stop());
  const c = await tpw('vm', 'create', 'one', '--type', 'v5litepod-4');
  assert.equal(c.code, 0, c.stderr);
  const recipe = writeRecipeIn(ws, 'args.sh', "printf '<%s>\\n'\n");
  const overrides = ['--help', '-h', '--vm=other', '--detach', 'model.name=a b', '$(touch pwned)', '--', 'lr=1e-3'];
  const r = await tpw('run', recipe, '--vm', 'one', '--', ...overrides);
  assert.equal(r.code, 0, r.stderr);
  const w0 = r.stdout.split('\n').filter((l) => l.startsWith('[w0] '));
  assert.deepEqual(w0, overrides.map((o) => `[w0] <${o}>`));
  assert.match(r.stdout, /workers ok/);
  assert.equal(fs.existsSync(path.join(ws, 'pwned')), false);
});
