/**
 * The language server inside a real VS Code (code-server 4.100.3) through the extension's language client:
 * in recipes/tiny-llama.sh, typing a LIBTPU_INIT_ARGS flag prefix opens the suggest widget with the catalog's
 * flag, accepting it inserts `--name=`, a hydra override completes from the trainer's schema, and a typo gets a
 * warning squiggle with did-you-mean, and "Run on TPU with Overrides…" completes and checks overrides typed in its
 * input with the same code. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/completion.e2e.ts
 *
 * Screenshots go to test-artifacts/e2e/completion-*.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { REPO } from './code-server';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, openVsCode, requireBuilt, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

describe('language server completion in VS Code (code-server)', { timeout: 6 * 60_000 }, () => {
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;

  before(async () => {
    requireBuilt('extension.js', 'language-server.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('lsp'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.copyFileSync(path.join(REPO, 'recipes', 'tiny-llama.sh'), path.join(workspace, 'recipes', 'tiny-llama.sh'));
    // The trainer's schema and config tree, where the language server looks for them.
    fs.mkdirSync(path.join(workspace, 'trainer', 'tpu_trainer'), { recursive: true });
    fs.copyFileSync(path.join(REPO, 'trainer', 'config.schema.json'), path.join(workspace, 'trainer', 'config.schema.json'));
    fs.cpSync(path.join(REPO, 'trainer', 'tpu_trainer', 'configs'), path.join(workspace, 'trainer', 'tpu_trainer', 'configs'), { recursive: true });
    const env = testEnv(home, { VSCODE_CLI: '1' });
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'editor.quickSuggestions': { other: false, comments: false, strings: false } } }));
  });

  after(() => teardown({ browser, procs, home, root, failed: false, logsName: 'logs-completion' }));

  /** The editor's rendered lines in document order (Monaco reuses line elements, so DOM order is not line order). */
  const editorText = async (): Promise<string> => {
    const lines = await wb.page
      .locator('.editor-instance .view-lines .view-line')
      .evaluateAll((els) => els.map((e) => ({ top: parseFloat((e as HTMLElement).style.top) || 0, text: (e as HTMLElement).innerText })));
    return lines
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text.replace(/\u00a0/g, ' '))
      .join('\n');
  };

  /** Types at the end of the file on a new line, then asks for suggestions and returns the widget's rows. */
  /** Focuses the editor (a click in its text, once the file's lines are rendered) and puts the cursor at the end. */
  const focusEnd = async (): Promise<void> => {
    const line = wb.page.locator('.editor-instance .view-lines .view-line').filter({ hasText: 'tpu_trainer.train' }).first();
    await line.waitFor({ timeout: 30_000 });
    await line.click();
    await wb.page.keyboard.press('Control+End');
  };

  const suggestAfter = async (typed: string, expect: string): Promise<string[]> => {
    await focusEnd();
    await wb.page.keyboard.press('Enter');
    await wb.page.keyboard.type(typed, { delay: 15 });
    const widget = wb.page.locator('.editor-widget.suggest-widget');
    // The server may still be starting on the first request: ask again until the flag shows.
    for (let i = 0; i < 30; i++) {
      await wb.page.keyboard.press('Control+Space');
      try {
        await widget.locator('.monaco-list-row').filter({ hasText: expect }).first().waitFor({ timeout: 2000 });
        break;
      } catch {
        await wb.page.keyboard.press('Escape');
      }
    }
    return widget.locator('.monaco-list-row .label-name').allInnerTexts();
  };

  test('a LIBTPU_INIT_ARGS flag completes from the catalog and is inserted with =', async () => {
    await wb.openFile('recipes/tiny-llama.sh');
    const rows = await suggestAfter('export LIBTPU_INIT_ARGS="--xla_tpu_scoped_v', 'xla_tpu_scoped_vmem_limit_kib');
    assert.ok(rows.some((r) => r.includes('--xla_tpu_scoped_vmem_limit_kib')), rows.join(' | '));
    await wb.screenshot(path.join(ARTIFACTS, 'completion-flag.png'));
    await wb.page.keyboard.press('Enter');
    await wb.page.waitForTimeout(300);
    await wb.page.keyboard.press('Escape');
    assert.match(await editorText(), /export LIBTPU_INIT_ARGS="--xla_tpu_scoped_vmem_limit_kib=/);
  });

  test('a hydra override after the trainer command completes from the trainer\'s schema', async () => {
    const rows = await suggestAfter('python3 -m tpu_trainer.train optimizer.weig', 'optimizer.weight_decay');
    // The real trainer schema may name it differently over time; any optimizer.* key proves the schema path.
    assert.ok(rows.some((r) => r.startsWith('optimizer.')), rows.join(' | '));
    await wb.page.keyboard.press('Escape');
  });

  test('a typo gets a warning squiggle with did-you-mean', async () => {
    await focusEnd();
    await wb.page.keyboard.press('Enter');
    await wb.page.keyboard.type("export XLA_FLAGS='--xla_backend_optimisation_level=1'", { delay: 10 });
    await wb.page.locator('.squiggly-warning').first().waitFor({ timeout: 30_000 });
    const problems = wb.page.locator('.markers-panel .monaco-list-row').filter({ hasText: /Did you mean --xla_backend_optimization_level/ });
    // Open the Problems panel with its focus command, not Ctrl+Shift+M: that key toggles, and under load it can land
    // while focus is elsewhere or close a panel that was just opening. Try again until the row appears.
    for (let attempt = 0; attempt < 4 && !(await problems.first().isVisible()); attempt++) {
      await wb.runCommand('View: Focus Problems (Errors, Warnings, Infos)').catch(() => undefined);
      await problems.first().waitFor({ timeout: 10_000 }).catch(() => undefined);
    }
    await problems.first().waitFor({ timeout: 30_000 });
    await wb.screenshot(path.join(ARTIFACTS, 'completion-diagnostic.png'));
  });

  test('"Run on TPU with Overrides…" completes the last override and blocks a typo with did-you-mean', async () => {
    await wb.page.keyboard.press('Escape');
    await wb.runCommand('TPU: Run on TPU with Overrides');
    await wb.waitQuickInputTitle(/Run on TPU with Overrides/);
    const input = wb.page.locator('.quick-input-widget input.input');
    const rows = wb.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await wb.typeQuickInput('max_st');
    await rows.filter({ hasText: 'max_steps' }).first().waitFor({ timeout: 30_000 });
    await wb.screenshot(path.join(ARTIFACTS, 'completion-overrides.png'));
    // Enter on a completion completes the token (and keeps the input open) instead of running.
    await wb.page.keyboard.press('Enter');
    await wb.page.waitForFunction(() => (document.querySelector('.quick-input-widget input.input') as HTMLInputElement | null)?.value === 'max_steps=', undefined, { timeout: 15_000 });
    await wb.typeQuickInput('max_step=3');
    await wb.waitQuickInputTitle(/Did you mean "max_steps"/);
    await rows.filter({ hasText: /Unknown config key "max_step"/ }).first().waitFor({ timeout: 15_000 });
    await wb.screenshot(path.join(ARTIFACTS, 'completion-overrides-typo.png'));
    // The error row is all Enter can pick: the run must not start, the input stays.
    await wb.page.keyboard.press('Enter');
    await wb.page.waitForTimeout(500);
    assert.equal(await input.inputValue(), 'max_step=3');
    await wb.page.keyboard.press('Escape');
  });
});
