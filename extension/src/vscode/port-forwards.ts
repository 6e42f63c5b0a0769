import * as vscode from 'vscode';
import { parsePortPair, PortForward } from '../core/ssh/port-forward';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';

/** The ports a TPU user forwards most, offered first in "Forward Port…". */
export const WELL_KNOWN_PORTS: readonly { port: number; label: string; detail: string }[] = [
  { port: 6006, label: 'TensorBoard', detail: '6006' },
  { port: 8888, label: 'Jupyter', detail: '8888' },
  // torch_xla's xp.start_server(9012), the port its profiling docs and capture_profile use.
  { port: 9012, label: 'Profiler server (torch_xla)', detail: '9012' },
];

interface Forwarded {
  forward: PortForward;
  vm: string;
  worker: number;
  what: string;
  /** Its row in VS Code's Ports view, when VS Code's tunnel API made one. */
  tunnel?: { dispose(): unknown };
}

/**
 * The window's forwarded ports, over the extension's one ConnectionManager (a dropped connection is made
 * again on the next local connection, so a forward outlives it). Closed when the extension deactivates. Each
 * is also given to VS Code (showInPorts), so it is listed in the Ports view like the ports VS Code forwards
 * itself, and a status bar item says what is forwarded.
 */
export class PortForwards implements vscode.Disposable {
  private readonly list: Forwarded[] = [];
  private readonly status: vscode.StatusBarItem;

  constructor(private readonly ctx: Ctx) {
    this.status = vscode.window.createStatusBarItem('tpuWorkbench.forwards', vscode.StatusBarAlignment.Left, 49);
    this.status.name = 'TPU Forwarded Ports';
    this.status.command = { command: 'tpuWorkbench.openForwardedPort', title: 'Open Forwarded Port in Browser' };
  }

  private updateStatus(): void {
    this.ctx.setContext('forwarding', this.list.length > 0);
    if (this.list.length === 0) return this.status.hide();
    const only = this.list.length === 1 ? this.list[0] : undefined;
    this.status.text = only ? `$(radio-tower) ${only.what}: localhost:${only.forward.localPort}` : `$(radio-tower) ${this.list.length} TPU ports`;
    this.status.tooltip = `${this.list.map((f) => `localhost:${f.forward.localPort} → ${f.vm} w${f.worker}:${f.forward.remotePort} (${f.what})`).join('\n')}\nClick to open one in the browser.`;
    this.status.show();
  }

  get active(): readonly Forwarded[] {
    return this.list;
  }

  /** "Forward Port…" on a worker: a well-known port or one typed as REMOTE or REMOTE:LOCAL. */
  async ask(node: TpuNode, worker: number): Promise<void> {
    const items: (vscode.QuickPickItem & { port?: number })[] = [
      ...WELL_KNOWN_PORTS.map((p) => ({ label: p.label, description: String(p.port), port: p.port })),
      { label: 'Other port…', description: 'REMOTE or REMOTE:LOCAL' },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: `Forward Port from ${shortName(node.name)} worker ${worker}` });
    if (!picked) return;
    let spec: { remotePort: number; localPort?: number };
    if (picked.port !== undefined) spec = { remotePort: picked.port };
    else {
      const text = await vscode.window.showInputBox({
        title: `Forward Port from ${shortName(node.name)} worker ${worker}`,
        prompt: 'The port on the worker, optionally :the local port (e.g. 6006 or 6006:16006)',
        validateInput: (v) => {
          try {
            parsePortPair(v);
            return undefined;
          } catch (e) {
            return (e as Error).message;
          }
        },
      });
      if (!text) return;
      spec = parsePortPair(text);
    }
    const f = await this.open(node, worker, spec, picked.port !== undefined ? picked.label : `Port ${spec.remotePort}`);
    const choice = await vscode.window.showInformationMessage(`${f.what}: worker ${worker} of ${f.vm} port ${f.forward.remotePort} is at localhost:${f.forward.localPort}.`, 'Open in Browser', 'Stop Forwarding');
    if (choice === 'Open in Browser') await openInBrowser(f.forward);
    if (choice === 'Stop Forwarding') await this.stop(f);
  }

  async open(node: TpuNode, worker: number, spec: { remotePort: number; localPort?: number; remoteHost?: string }, what: string): Promise<Forwarded> {
    const backend = await this.ctx.backend();
    const target = (await backend.workersOf(node))[worker];
    const conns = this.ctx.connections(backend);
    await conns.get(target); // a refused host key or an unreachable worker is said now, not on first use
    const forward = await PortForward.open(
      conns,
      { target, ...spec, samePortFirst: backend.kind !== 'emulator' },
      { onError: (e) => this.ctx.log.warn(`forward: ${e.message}`) },
    );
    const f: Forwarded = { forward, vm: shortName(node.name), worker, what };
    this.list.push(f);
    f.tunnel = await showInPorts(forward.localPort, `${what} (${f.vm} w${worker}:${forward.remotePort})`, () => void this.stop(f), (m) => this.ctx.log.info(m));
    this.updateStatus();
    this.ctx.log.info(`forward: localhost:${forward.localPort} → ${f.vm} w${worker} ${forward.remoteHost}:${forward.remotePort} (${what})`);
    return f;
  }

  /** "Open Forwarded Port in Browser" / "Stop Forwarding Port": a pick among the active forwards. */
  async pick(title: string): Promise<Forwarded | undefined> {
    if (this.list.length === 0) {
      void vscode.window.showInformationMessage('No port is forwarded from a TPU worker.');
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      this.list.map((f) => ({ label: `localhost:${f.forward.localPort}`, description: `${f.what} · ${f.vm} w${f.worker}:${f.forward.remotePort}`, f })),
      { title },
    );
    return picked?.f;
  }

  async stop(f: Forwarded): Promise<void> {
    const i = this.list.indexOf(f);
    if (i < 0) return;
    this.list.splice(i, 1);
    this.updateStatus();
    f.tunnel?.dispose();
    await f.forward.close();
  }

  dispose(): void {
    for (const f of this.list.splice(0)) {
      f.tunnel?.dispose();
      void f.forward.close();
    }
    this.status.dispose();
  }
}

/** The parts of VS Code's tunnel API (`workspace.openTunnel`, vscode.proposed.tunnels.d.ts) used here. */
interface TunnelApi {
  openTunnel(options: { remoteAddress: { host: string; port: number }; localAddressPort?: number; label?: string; privacy?: string; protocol?: string }): Thenable<{ dispose(): unknown; onDidDispose: vscode.Event<void> }>;
}

/**
 * Lists a forwarded port in VS Code's Ports view: VS Code's tunnel API where the editor offers it (code-server
 * enables it for every extension; the Ports view's own close then stops our forward too, `onClosed`), else
 * `asExternalUri`, which in a remote window (Remote-SSH, a dev container) forwards it to the user's machine and
 * lists it; a local window needs nothing, the port is on this machine. The tunnel API is a proposed API, used
 * only where the editor grants it, so the package declares no proposal and installs from any marketplace.
 */
async function showInPorts(localPort: number, label: string, onClosed: () => void, log: (m: string) => void): Promise<{ dispose(): unknown } | undefined> {
  const api = vscode.workspace as unknown as Partial<TunnelApi>;
  try {
    if (typeof api.openTunnel !== 'function') throw new Error('no workspace.openTunnel');
    const tunnel = await api.openTunnel({ remoteAddress: { host: 'localhost', port: localPort }, localAddressPort: localPort, label, privacy: 'private', protocol: 'http' });
    let closing = false;
    tunnel.onDidDispose(() => {
      if (!closing) onClosed();
    });
    return {
      dispose: () => {
        closing = true;
        return tunnel.dispose();
      },
    };
  } catch (e) {
    log(`forward: VS Code's tunnel API is not offered here (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); asExternalUri instead`);
    await vscode.env.asExternalUri(vscode.Uri.parse(`http://localhost:${localPort}`)).then(undefined, () => undefined);
    return undefined;
  }
}

/** The browser of the machine the user sits at (asExternalUri: code-server and remote windows map the port). */
export async function openInBrowser(forward: PortForward): Promise<void> {
  const uri = await vscode.env.asExternalUri(vscode.Uri.parse(forward.url));
  await vscode.env.openExternal(uri);
}
