import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    // core is shared by the extension, the CLI and the tests: it must never depend on VS Code, nor on the
    // packages on the other side of a process boundary (their shared types are in protocol/).
    files: ['extension/src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'extension/src/core must not import vscode' }],
        patterns: [
          { group: ['**/webview/**', '**/language-server/**'], message: 'extension/src/core imports what crosses a process boundary from protocol/' },
          { group: ['**/emulator/src/**'], message: 'the product reaches the emulator only as a client reaches Google: REST, SSH and the endpoint file (protocol/node)' },
        ],
      }],
    },
  },
  {
    files: ['extension/src/cli/**/*.ts', 'extension/src/vscode/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['**/emulator/src/**'], message: 'the product reaches the emulator only as a client reaches Google: REST, SSH and the endpoint file (protocol/node)' }],
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
