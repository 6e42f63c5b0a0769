/**
 * The run view (browser side): Logs, Metrics and Profiles tabs fed by the extension host through the typed
 * messages of protocol/run-view-messages.ts. The panel is kept alive while hidden (retainContextWhenHidden on
 * the host side), and the UI state that matters across reloads (the open tab) also goes to setState.
 */
import './style.css';
import type { HostToWebview, WebviewToHost } from '../../protocol/run-view-messages';
import { ChipsView } from './chips';
import { el } from './dom';
import { LogView } from './logs/view';
import { MetricsView, parseStepLine } from './metrics';
import { ProfileView } from './profile';

interface VsCodeApi {
  postMessage(msg: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
type Tab = 'logs' | 'metrics' | 'chips' | 'profiles';
const saved = (vscode.getState() ?? {}) as { tab?: Tab };

const logs = new LogView({ copy: (text) => vscode.postMessage({ type: 'copy', text }), save: (text) => vscode.postMessage({ type: 'saveLogs', text }) });
const metrics = new MetricsView();
const chips = new ChipsView();
const profiles = new ProfileView({
  open: (id) => vscode.postMessage({ type: 'openProfile', id }),
  exportTrace: (id) => vscode.postMessage({ type: 'exportTrace', id }),
  browse: () => vscode.postMessage({ type: 'browse' }),
  compare: (ids) => vscode.postMessage({ type: 'compareProfiles', ids }),
});

const header = el('header');
const title = el('span', 'run-title');
title.textContent = 'Run';
const state = el('span', 'run-state');
state.setAttribute('role', 'status');
const tabs = el('div', 'tabs');
tabs.setAttribute('role', 'tablist');
const panels: Record<Tab, HTMLElement> = { logs: logs.root, metrics: metrics.root, chips: chips.root, profiles: profiles.root };
const tabButtons = new Map<Tab, HTMLButtonElement>();
const order: Tab[] = ['logs', 'metrics', 'chips', 'profiles'];
for (const t of order) {
  const b = el('button', 'tab');
  b.type = 'button';
  b.id = `tab-${t}`;
  b.textContent = t[0].toUpperCase() + t.slice(1);
  b.setAttribute('role', 'tab');
  b.setAttribute('aria-controls', `panel-${t}`);
  b.addEventListener('click', () => select(t));
  // Arrow keys move between tabs (WAI-ARIA tabs pattern).
  b.addEventListener('keydown', (e) => {
    const i = order.indexOf(t);
    const n = order.length;
    const next = e.key === 'ArrowRight' ? order[(i + 1) % n] : e.key === 'ArrowLeft' ? order[(i + n - 1) % n] : undefined;
    if (next) {
      select(next);
      tabButtons.get(next)?.focus();
    }
  });
  tabButtons.set(t, b);
  tabs.append(b);
  const p = panels[t];
  p.id = `panel-${t}`;
  p.setAttribute('role', 'tabpanel');
  p.setAttribute('aria-labelledby', b.id);
  p.classList.add('panel');
}
header.append(title, state, tabs);
document.body.append(header, ...order.map((t) => panels[t]));

function select(t: Tab): void {
  for (const o of order) {
    const on = o === t;
    panels[o].hidden = !on;
    const b = tabButtons.get(o)!;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  metrics.setVisible(t === 'metrics');
  if (t === 'logs') logs.schedule();
  vscode.setState({ ...saved, tab: t });
}
select(saved.tab ?? 'logs');

window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
  const msg = event.data;
  switch (msg.type) {
    case 'logLines': {
      logs.append(msg.worker, msg.lines);
      const recs = [];
      for (const line of msg.lines) {
        // Cheap prefilter: most lines are not step lines.
        if (!line.startsWith('step ')) continue;
        const r = parseStepLine(line, msg.worker);
        if (r) recs.push(r);
      }
      if (recs.length) metrics.add(recs);
      break;
    }
    case 'runState':
      title.textContent = msg.runId;
      state.textContent = msg.state + (msg.summary ? ` — ${msg.summary}` : '');
      state.dataset.state = msg.state;
      if (msg.workersPerSlice) logs.store.perSlice = msg.workersPerSlice;
      for (let w = 0; w < (msg.workers ?? 0); w++) if (!logs.store.workers.has(w)) logs.setWorkerStatus(w, 'running');
      break;
    case 'workerStatus':
      logs.setWorkerStatus(msg.worker, msg.state, msg.exitCode);
      break;
    case 'metrics':
      metrics.add(msg.records);
      break;
    case 'profiles':
      profiles.setCaptures(msg.captures);
      break;
    case 'profile':
      profiles.setProfile(msg.id, msg.summary, msg.prefetched);
      break;
    case 'profileError':
      profiles.setError(msg.id, msg.message);
      break;
    case 'profileHosts':
      profiles.setHosts(msg);
      break;
    case 'health':
      profiles.setHealth(msg.findings, msg.worker, msg.source);
      break;
    case 'chips':
      chips.update(msg.workers);
      metrics.addChips(msg.workers);
      break;
  }
});

// Test and benchmark hook: the harness reads these (a webview has no other way to expose state).
(window as unknown as { tpwRunView: unknown }).tpwRunView = { logs, metrics, chips, profiles, select };
vscode.postMessage({ type: 'ready' });
