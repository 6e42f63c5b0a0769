/// <reference lib="dom" />
/**
 * Loads the built run-view bundle (dist/webview.js + dist/webview.css) in headless Chromium with a stub
 * acquireVsCodeApi that records what the webview posts, and lets tests post host messages to it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { HostToWebview, ProfileSummary, WebviewToHost } from '../../protocol/run-view-messages';
import { launchBrowser } from '../e2e/workbench';

export const repo = path.resolve(__dirname, '../..');
export const artifacts = path.join(repo, 'test-artifacts/webview');

/** The theme variables a dark VS Code theme sets, enough for contrast in screenshots. */
const THEME = `--vscode-foreground:#cccccc;--vscode-editor-background:#1e1e1e;--vscode-font-family:sans-serif;--vscode-font-size:13px;
--vscode-editor-font-family:monospace;--vscode-button-background:#0e639c;--vscode-button-foreground:#fff;--vscode-button-secondaryBackground:#3a3d41;
--vscode-button-secondaryForeground:#ccc;--vscode-input-background:#3c3c3c;--vscode-input-foreground:#ccc;--vscode-errorForeground:#f48771;
--vscode-editorWarning-foreground:#cca700;--vscode-charts-blue:#3794ff;--vscode-charts-orange:#d18616;--vscode-charts-green:#89d185;
--vscode-charts-red:#f14c4c;--vscode-charts-yellow:#cca700;--vscode-charts-purple:#b180d7;--vscode-charts-lines:rgba(204,204,204,.3);
--vscode-terminal-ansiRed:#cd3131;--vscode-terminal-ansiGreen:#0dbc79;--vscode-editor-findMatchHighlightBackground:rgba(234,92,0,.33);
--vscode-list-activeSelectionBackground:#04395e;--vscode-descriptionForeground:#9d9d9d;--vscode-editorLineNumber-foreground:#858585;`;

export async function openHarness(): Promise<{ browser: Browser; page: Page }> {
  mkdirSync(artifacts, { recursive: true });
  const html = path.join(artifacts, 'harness.html');
  // The same CSP as the extension's panel (run-view/html.ts), with file: standing in for the webview's origin.
  writeFileSync(html, `<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src file: data:; style-src file: 'nonce-harness'; font-src file:; script-src 'nonce-harness' file:">
<link rel="stylesheet" href="${path.join(repo, 'dist/webview.css')}">
<script nonce="harness">
  window.cspViolations = [];
  document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
  window.posted = [];
  let state;
  window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), getState: () => state, setState: (s) => { state = s; } });
</script><style nonce="harness">body { ${THEME.replace(/\n/g, '')} }</style></head><body>
<script nonce="harness" src="${path.join(repo, 'dist/webview.js')}"></script></body></html>`);
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`file://${html}`);
  await page.waitForFunction(() => (window as unknown as { posted: unknown[] }).posted.length > 0);
  if (errors.length) throw new Error(errors.join('\n'));
  return { browser, page };
}

/** CSP violations seen so far (the bundle must run under the panel's policy). */
export async function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
}

export async function post(page: Page, msg: HostToWebview): Promise<void> {
  await page.evaluate((m) => window.postMessage(m, '*'), msg as unknown as Record<string, unknown>);
}

export async function posted(page: Page): Promise<WebviewToHost[]> {
  return page.evaluate(() => (window as unknown as { posted: WebviewToHost[] }).posted);
}

/** Posts a profile: typed arrays go as plain arrays through Playwright and are rebuilt in the page. */
export async function postProfile(page: Page, id: string, s: ProfileSummary, prefetched = false): Promise<void> {
  const plain = { ...s, timeline: { names: s.timeline.names, lines: s.timeline.lines.map((l) => ({ ...l, start: [...l.start], dur: [...l.dur], name_: [...l.name_], depth: [...l.depth] })) } };
  await page.evaluate(({ id, plain, prefetched }) => {
    const lines = plain.timeline.lines.map((l) => ({ ...l, start: Float64Array.from(l.start), dur: Float64Array.from(l.dur), name_: Int32Array.from(l.name_), depth: Uint8Array.from(l.depth) }));
    window.postMessage({ type: 'profile', id, summary: { ...plain, timeline: { names: plain.timeline.names, lines } }, prefetched }, '*');
  }, { id, plain, prefetched });
}
