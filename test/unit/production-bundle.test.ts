/**
 * What users install: `npm run package` builds the bundles with `--production` (minified), and the CLI of that
 * build must make a Compute Engine TPU7x slice as the development build does. Minifying once renamed
 * protobufjs's `Long`, and every Compute Engine create failed in the package with "toProto3JSON: don't know
 * how to convert value 100" while every test (on the development bundles) passed.
 *
 * The production bundles are built here into a folder of their own (scripts/build.mjs with the package's own
 * flags), so the test never touches dist/ that other tests run.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { REPO } from '../helpers/fresh-bundle';
import { escapeRegExp, testAddressPrefix } from '../helpers/loopback';

let out = '';
let home = '';
let emu: Emulator | undefined;

before(() => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-prod-bundle-'));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-prod-home-'));
  const r = spawnSync(process.execPath, [path.join(REPO, 'scripts/build.mjs'), '--production', '--outdir', out, '--only', 'cli,compute'], { cwd: REPO, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`the production build failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
});

after(async () => {
  await emu?.stop();
  fs.rmSync(out, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

/** Runs the production CLI in a child node (the emulator it talks to runs in this process). */
function productionTpw(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `require(${JSON.stringify(path.join(out, 'cli.js'))}).main(${JSON.stringify(argv)}).then((c) => { process.exitCode = c; });`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { cwd: home, env: { ...process.env, TPW_HOME: home }, encoding: 'utf8', timeout: 180_000 }, (error, stdout, stderr) =>
      resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
    );
  });
}

test('the production build is the minified one the package ships', () => {
  const compute = fs.readFileSync(path.join(out, 'compute.js'), 'utf8');
  assert.ok(!fs.existsSync(path.join(out, 'compute.js.map')), 'no source map in the package');
  // Minified: far fewer lines than a readable bundle of 70 MB.
  assert.ok(compute.split('\n').length < 50_000, `compute.js has ${compute.split('\n').length} lines: not minified`);
});

test('the production CLI creates a tpu7x-16 slice on Compute Engine (2 VMs) and deletes it', { timeout: 300_000 }, async () => {
  const prefix = testAddressPrefix(233);
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: prefix });
  await emu.start();
  const c = await productionTpw(['vm', 'create', 'shipped', '--type', 'tpu7x-16', '--zone', 'us-east5-b']);
  assert.equal(c.code, 0, c.stderr);
  assert.doesNotMatch(c.stderr, /toProto3JSON/);
  const p = escapeRegExp(prefix);
  assert.match(c.stdout.trim().split('\n').at(-1) ?? '', new RegExp(`^shipped READY: w0=${p}\\.\\d+ w1=${p}\\.\\d+$`));
  const l = await productionTpw(['vm', 'list']);
  assert.match(l.stdout, /shipped\s+us-east5-b\s+tpu7x-16\s+READY\s+2\s+-\s+compute/);
  const d = await productionTpw(['vm', 'delete', 'shipped']);
  assert.equal(d.code, 0, d.stderr);
});
