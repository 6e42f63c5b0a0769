// Bundles every target with its own esbuild context (as vscode-eslint does):
// the extension host (node, cjs, `vscode` external), the CLI, the language server, and the webview (browser).
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
};

/**
 * @google-cloud/compute is 73 MB of the bundles that use it (every Compute Engine message type, as code and as
 * JSON): parsing that took ~1.3 s at every `tpw` command and extension activation, which most never reach Compute
 * Engine. It is bundled on its own, as dist/compute.js, and the bundles that use it require that file when
 * core/compute/client.ts makes the first client.
 * @type {import('esbuild').Plugin}
 */
const computeApart = {
  name: 'compute-apart',
  setup(build) {
    build.onResolve({ filter: /^@google-cloud\/compute$/ }, () => ({ path: './compute.js', external: true }));
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
  {
    // Required by dist/extension.js and dist/cli.js when the first Compute Engine client is made (computeApart).
    ...common,
    entryPoints: ['@google-cloud/compute'],
    outfile: 'dist/compute.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
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
    ...common,
    entryPoints: ['language-server/src/server.ts'],
    outfile: 'dist/language-server.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    // Profile parsing runs on a worker thread of the extension host (see core/profiles/parse.ts).
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

mkdirSync('dist', { recursive: true });
const contexts = await Promise.all(targets.map((t) => esbuild.context(t)));
if (watch) {
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('[build] watching');
} else {
  const started = Date.now();
  await Promise.all(contexts.map((c) => c.rebuild()));
  await Promise.all(contexts.map((c) => c.dispose()));
  const native = buildNativeProfile();
  console.log(`[build] ${targets.length} bundles${native ? ' and dist/tpw-profile' : ''} in ${Date.now() - started} ms${production ? ' (production)' : ''}`);
}

/**
 * dist/tpw-profile: `tpw profile` compiled to one native executable by Bun (a dev dependency), from the same
 * sources as dist/profile-cli.js; bin/tpw runs it for `tpw profile` (extension/src/cli/profile-native.ts says
 * why). Without a Bun that runs here, and in watch mode (where it would fall behind the sources), any old one is
 * removed, so that bin/tpw runs node rather than a stale build.
 */
function buildNativeProfile() {
  const out = 'dist/tpw-profile';
  rmSync(out, { force: true });
  const bun = watch ? undefined : bunBinary();
  if (!bun) return false;
  const args = ['build', '--compile', '--bytecode', '--minify', 'extension/src/cli/profile-native.ts', '--outfile', out];
  const r = spawnSync(bun, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bun} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`);
  return true;
}

/**
 * The Bun executable npm installed: the `bun` package's, which its postinstall script puts in place, or, where
 * npm ran no install scripts (--ignore-scripts), the platform package's it would have moved there.
 */
function bunBinary() {
  const platform = `${process.platform}-${process.arch === 'arm64' ? 'aarch64' : process.arch}`;
  for (const bin of ['node_modules/bun/bin/bun.exe', `node_modules/@oven/bun-${platform}/bin/bun`]) {
    if (existsSync(bin) && spawnSync(bin, ['--version'], { encoding: 'utf8' }).status === 0) return bin;
  }
  console.log('[build] no Bun that runs here (the bun dev dependency): dist/tpw-profile not built; bin/tpw runs `tpw profile` on node');
  return undefined;
}
