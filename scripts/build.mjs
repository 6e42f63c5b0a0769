// Bundles every target with its own esbuild context (as vscode-eslint does):
// the extension host (node, cjs, `vscode` external), the CLI, the language server, and the webview (browser).
import * as esbuild from 'esbuild';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { buildNativeProfile } from './build-native.mjs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
/** `--outdir DIR`: the bundles go there instead of dist/ (a test builds the production bundles apart). */
const outdir = argValue('--outdir') ?? 'dist';
/** `--only cli,compute`: just those bundles (named by their file in dist/, without `.js`). */
const only = argValue('--only')?.split(',');

function argValue(flag) {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  // Minifying renames classes, and libraries we bundle test a class by its name: protobufjs's int64 values
  // reach proto3-json-serializer, which converts a value only when `value.constructor.name === 'Long'`, so every
  // Compute Engine create failed in the package with "toProto3JSON: don't know how to convert value 100".
  keepNames: production,
  logLevel: 'warning',
};

/**
 * Libraries most commands never reach, each bundled on its own and required by the bundles that use them only when
 * the first client is made, so that every `tpw` command and extension activation does not parse them:
 * - @google-cloud/compute, 73 MB of Compute Engine message types (~1.3 s to parse): dist/compute.js, loaded by
 *   core/compute/client.ts;
 * - @google-cloud/container, 9 MB (the GKE API's messages): dist/container.js, loaded by core/gke/gke-api.ts;
 * - @kubernetes/client-node, 15 MB (every Kubernetes model): dist/kubernetes.js, loaded by core/gke/kube.ts.
 */
const APART = { '@google-cloud/compute': './compute.js', '@google-cloud/container': './container.js', '@kubernetes/client-node': './kubernetes.js' };

/** @type {import('esbuild').Plugin} */
const computeApart = {
  name: 'libraries-apart',
  setup(build) {
    build.onResolve({ filter: /^(@google-cloud\/(compute|container)|@kubernetes\/client-node)$/ }, (args) => ({ path: APART[args.path], external: true }));
  },
};

/** @type {import('esbuild').BuildOptions[]} */
const targets = [
  {
    ...common,
    entryPoints: ['extension/src/vscode/main.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // cpu-features is an optional native speed-up of ssh2; the pure-JS path is used without it.
    external: ['vscode', 'cpu-features', '*.node'],
    plugins: [computeApart],
  },
  {
    ...common,
    entryPoints: ['extension/src/cli/main.ts'],
    outfile: 'dist/cli.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['cpu-features', '*.node'],
    plugins: [computeApart],
  },
  // Required by dist/extension.js and dist/cli.js when their first client is made (APART above).
  ...Object.entries(APART).map(([lib, file]) => ({
    ...common,
    entryPoints: [lib],
    outfile: `dist/${file.slice(2)}`,
    // proto3-json-serializer tells a Long by its class name: minified, every int64 field (a disk's size) fails.
    keepNames: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  })),
  // `tpw profile` on its own (bin/tpw.js loads it instead of the whole CLI: see profile-main.ts).
  {
    ...common,
    entryPoints: ['extension/src/cli/profile-main.ts'],
    outfile: 'dist/profile-cli.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['cpu-features', '*.node'],
  },
  {
    // The local emulator, its own program (emulator/README.md): `tpw emulator start` and the extension run it.
    ...common,
    entryPoints: ['emulator/src/main.ts'],
    outfile: 'dist/emulator.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['cpu-features', '*.node'],
  },
  {
    ...common,
    entryPoints: ['language-server/src/server.ts'],
    outfile: 'dist/language-server.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    // The profile analysis (dist/profile.wasm) runs on a worker thread of the extension host (core/profiles/parse.ts).
    ...common,
    entryPoints: ['extension/src/core/profiles/worker.ts'],
    outfile: 'dist/profile-worker.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    ...common,
    entryPoints: ['webview/src/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  },
];

const chosen = targets
  .filter((t) => !only || only.includes(path.basename(t.outfile, '.js')))
  .map((t) => ({ ...t, outfile: path.join(outdir, path.basename(t.outfile)) }));
mkdirSync(outdir, { recursive: true });
const contexts = await Promise.all(chosen.map((t) => esbuild.context(t)));
if (watch) {
  // Built once: its sources are Rust (native/profile), which the bundles' watchers do not follow (rerun the build).
  buildNativeProfile();
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('[build] watching');
} else {
  const started = Date.now();
  await Promise.all(contexts.map((c) => c.rebuild()));
  await Promise.all(contexts.map((c) => c.dispose()));
  // The native builds are dist/'s alone (bin/tpw and the bundles find them there).
  const native = outdir === 'dist' && !only;
  if (native) buildNativeProfile();
  console.log(`[build] ${chosen.length} bundles${native ? ', dist/tpw-profile and dist/profile.wasm' : ''} in ${Date.now() - started} ms${production ? ' (production)' : ''}`);
}
