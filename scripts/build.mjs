// Bundles every target with its own esbuild context (as vscode-eslint does):
// the extension host (node, cjs, `vscode` external), the CLI, the language server, and the webview (browser).
import * as esbuild from 'esbuild';
import { mkdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
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
  },
  {
    ...common,
    entryPoints: ['extension/src/cli/main.ts'],
    outfile: 'dist/cli.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['cpu-features', '*.node'],
  },
  // `tpw profile` on its own (bin/tpw loads it instead of the whole CLI: see profile-main.ts).
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
  console.log(`[build] ${targets.length} bundles in ${Date.now() - started} ms${production ? ' (production)' : ''}`);
}
