/**
 * The run view (browser side). First version: one log pane per worker, fed by `logLines` messages.
 * Metrics charts and profiles come with the run-view issue.
 */
import type { HostToWebview, WebviewToHost } from './protocol';

interface VsCodeApi {
  postMessage(msg: WebviewToHost): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const panes = new Map<number, HTMLPreElement>();

function pane(worker: number): HTMLPreElement {
  let pre = panes.get(worker);
  if (!pre) {
    const section = document.createElement('section');
    const title = document.createElement('h3');
    title.textContent = `worker ${worker}`;
    pre = document.createElement('pre');
    section.append(title, pre);
    document.body.append(section);
    panes.set(worker, pre);
  }
  return pre;
}

window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
  const msg = event.data;
  if (msg.type === 'logLines') {
    // textContent, never innerHTML: log lines are untrusted text.
    pane(msg.worker).append(document.createTextNode(msg.lines.join('\n') + '\n'));
  } else if (msg.type === 'runState') {
    document.title = `${msg.runId}: ${msg.state}`;
  }
});

vscode.postMessage({ type: 'ready' });
