/**
 * The CLI and extension bundles users get (the production build in the packaged .vsix, test/helpers/packaged.ts)
 * leave @google-cloud/compute out of their own bundles (scripts/build.mjs bundles it apart, as dist/compute.js):
 * a command that makes no Compute Engine client never loads it, and making one does, and works minified.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { testAddressPrefix } from '../helpers/loopback';
import { packagedExtension } from '../helpers/packaged';

const dist = path.join(packagedExtension().root, 'dist');

/** Runs `script` in node with dist/ as its folder, and lists the files under dist/ that node loaded. */
async function loadedFromDist(script: string, env: NodeJS.ProcessEnv = process.env): Promise<{ loaded: string[]; out: string }> {
  const probe = `const M = require('node:module'); const seen = new Set(); const load = M._load;
M._load = function (req, parent, isMain) { const r = load.apply(this, arguments); try { seen.add(M._resolveFilename(req, parent, isMain)); } catch {} return r; };
process.on('exit', () => process.stderr.write('\\nLOADED ' + JSON.stringify([...seen].filter((f) => f.startsWith(${JSON.stringify(dist + path.sep)})).map((f) => f.slice(${dist.length + 1})).sort())));`;
  // Not spawnSync: the emulator that a command talks to runs in this process.
  const r = await new Promise<{ stdout: string; stderr: string; error: Error | null }>((resolve) => {
    execFile(process.execPath, ['-e', `${probe}\n${script}`], { cwd: dist, env, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => resolve({ error, stdout, stderr }));
  });
  const m = /\nLOADED (.*)$/.exec(r.stderr);
  assert.ok(m, `no module list (${String(r.error)}): ${r.stderr.slice(-500)}`);
  return { loaded: JSON.parse(m[1]) as string[], out: r.stdout };
}

test('the CLI and extension bundles require dist/compute.js instead of holding @google-cloud/compute', () => {
  for (const bundle of ['cli.js', 'extension.js']) {
    const text = readFileSync(path.join(dist, bundle), 'utf8');
    assert.match(text, /require\("\.\/compute\.js"\)/, bundle);
    assert.doesNotMatch(text, /\.google\.cloud\.compute\.v1\.InstanceGroupManager\b/, `${bundle} holds compute's message types`);
    assert.ok(statSync(path.join(dist, bundle)).size < 20e6, `${bundle} is ${statSync(path.join(dist, bundle)).size} bytes`);
  }
  assert.match(readFileSync(path.join(dist, 'compute.js'), 'utf8'), /\.google\.cloud\.compute\.v1\.InstanceGroupManager\b/);
});

test('`tpw --help` does not load dist/compute.js; a command that makes Compute Engine clients does', async () => {
  const help = await loadedFromDist(`require('./cli.js').main(['--help']).then((c) => { process.exitCode = c; });`);
  assert.match(help.out, /Usage: tpw/);
  assert.deepEqual(help.loaded, ['cli.js']);
  const home = mkdtempSync(path.join(tmpdir(), 'tpw-cli-bundle-'));
  const emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(78) });
  await emu.start();
  try {
    const types = await loadedFromDist(`require('./cli.js').main(['vm', 'types', '--zone', 'us-central2-b']).then((c) => { process.exitCode = c; });`, { ...process.env, TPW_HOME: home });
    assert.match(types.out, /^Compute Engine TPU types in us-central2-b: .*tpu7x-8 \(1×tpu7x-standard-4t\)/m);
    assert.deepEqual(types.loaded, ['cli.js', 'compute.js']);
    // A GKE command opens the same backend and makes no Compute Engine client: the library stays unloaded.
    const gke = await loadedFromDist(`require('./cli.js').main(['gke', 'clusters']).then((c) => { process.exitCode = c; });`, { ...process.env, TPW_HOME: home });
    assert.match(gke.out, /No GKE clusters/, gke.out);
    assert.deepEqual(gke.loaded, ['cli.js', 'container.js']);
    // A create sends int64 fields (the boot disk's size): the serializer must still know a Long when minified.
    const create = await loadedFromDist(`require('./cli.js').main(['vm', 'create', 'ce', '--type', 'tpu7x-8']).then((c) => { process.exitCode = c; });`, { ...process.env, TPW_HOME: home });
    assert.match(create.out, /^ce READY: w0=/m, create.out);
  } finally {
    await emu.stop();
    rmSync(home, { recursive: true, force: true });
  }
});

test('the packaged `tpw` launcher (bin/tpw → bin/tpw.js → dist/cli.js) runs a command', async () => {
  const root = packagedExtension().root;
  const r = await new Promise<{ code: number | string | null | undefined; stdout: string; stderr: string }>((resolve) => {
    execFile(path.join(root, 'bin/tpw'), ['--help'], { encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Usage: tpw/);
});
