import js from '@eslint/js';
import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

/**
 * extension/src/core in layers, bottom first (ARCHITECTURE.md, "Layers of core"): a folder or file imports only from
 * layers below its own, never from its own layer's other members, so there is a bottom and no cycle between them.
 */
const CORE_LAYERS = [
  ['errors.ts', 'paths.ts'],
  ['local-emulator.ts', 'change-journal.ts', 'ssh', 'recipes', 'storage'],
  ['tpu', 'sync', 'profiles', 'chips'],
  ['compute'],
  ['gke'],
  ['backend.ts'],
  ['slices', 'run'],
  ['debug', 'explorer'],
  ['task-yaml'],
];

/** What every file of core may not import, whatever its layer. */
const CORE_BOUNDARIES = {
  paths: [{ name: 'vscode', message: 'extension/src/core must not import vscode' }],
  patterns: [
    { group: ['**/webview/**', '**/language-server/**'], message: 'extension/src/core imports what crosses a process boundary from protocol/' },
    { group: ['**/emulator/src/**'], message: 'the product reaches the emulator only as a client reaches Google: REST, SSH and the endpoint file (protocol/node)' },
  ],
};

function coreLayerConfigs() {
  // A folder or file of core in no layer would be unchecked: refuse to lint until it has its place.
  const placed = new Set(CORE_LAYERS.flat());
  const unplaced = readdirSync('extension/src/core').filter((e) => !placed.has(e) && !e.endsWith('.json'));
  if (unplaced.length > 0) throw new Error(`extension/src/core/${unplaced[0]} is in no layer: add it to CORE_LAYERS in eslint.config.mjs`);
  const strip = (name) => name.replace(/\.ts$/, '');
  return CORE_LAYERS.flatMap((layer, i) =>
    layer.map((member) => {
      const above = CORE_LAYERS.slice(i).flat().filter((m) => m !== member);
      const isFile = member.endsWith('.ts');
      // Specifiers as written from inside a folder (../x) or from a file at core's root (./x).
      const prefix = isFile ? './' : '../';
      const group = above.flatMap((m) => (m.endsWith('.ts') ? [`${prefix}${strip(m)}`] : [`${prefix}${m}`, `${prefix}${m}/*`]));
      return {
        files: [isFile ? `extension/src/core/${member}` : `extension/src/core/${member}/**/*.ts`],
        rules: {
          'no-restricted-imports': ['error', {
            ...CORE_BOUNDARIES,
            patterns: [
              ...CORE_BOUNDARIES.patterns,
              ...(group.length ? [{ group, message: `core's layers (ARCHITECTURE.md): ${member} is in layer ${i} and imports only from the layers below it` }] : []),
            ],
          }],
        },
      };
    }),
  );
}

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.vscode-test/**', 'trainer/**', '**/*.js', '**/*.mjs', '.cache/**', 'test-artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': 'off',
    },
  },
  ...coreLayerConfigs(),
  {
    files: ['extension/src/cli/**/*.ts', 'extension/src/vscode/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/emulator/src/**'], message: 'the product reaches the emulator only as a client reaches Google: REST, SSH and the endpoint file (protocol/node)' },
          { group: ['**/core/run/*', '!**/core/run/engine'], message: 'runs are reached through their front door, core/run/engine.ts' },
          { group: ['./main', '../main'], message: 'an entry point (main.ts) is imported by nothing: share through another module (cli/context.ts), so there is no cycle through it' },
        ],
      }],
    },
  },
  {
    // The emulator is its own program (emulator/README.md): it shares only protocol/ with the product, so the
    // stand-in never agrees with the product by construction.
    files: ['emulator/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'the emulator must not import vscode' }],
        patterns: [{ group: ['**/extension/**', '**/language-server/**', '**/webview/**', '**/trainer/**'], message: 'the emulator imports nothing from the product; shared contracts live in protocol/' }],
      }],
    },
  },
  {
    // The webview runs in a browser: it shares types with the extension through protocol/ only.
    files: ['webview/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'the webview cannot import vscode' }],
        patterns: [{ group: ['**/extension/**', '**/language-server/**'], message: 'the webview imports what it shares with the extension from protocol/' }],
      }],
    },
  },
  {
    // protocol/ is what both sides of a boundary import: it depends on no package of this repository.
    files: ['protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'protocol/ must not import vscode' }],
        patterns: [{ group: ['../../*', '**/extension/**', '**/webview/**', '**/language-server/**', '**/emulator/**'], message: 'protocol/ imports nothing from the other packages' }],
      }],
    },
  },
);
