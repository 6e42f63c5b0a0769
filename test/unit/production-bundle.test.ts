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
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { buildProductionBundles, productionTpw as runProductionTpw } from '../helpers/production-cli';
import { escapeRegExp, testAddressPrefix } from '../helpers/loopback';

let out = '';
let home = '';
let emu: Emulator | undefined;

before(async () => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-prod-bundle-'));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-prod-home-'));
  await buildProductionBundles(out, ['cli', 'compute']);
});

after(async () => {
  await emu?.stop();
  fs.rmSync(out, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

/** Runs the production CLI in a child node (the emulator it talks to runs in this process). */
function productionTpw(argv: string[]): ReturnType<typeof runProductionTpw> {
  return runProductionTpw(out, argv, { cwd: home, env: { TPW_HOME: home } });
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
