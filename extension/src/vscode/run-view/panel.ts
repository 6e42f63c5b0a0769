import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError } from '../../core/errors';
import { captureHost } from '../../core/profiles/capture-names';
import { ProfileParser } from '../../core/profiles/parse';
import { CaptureAnalyses, captureKey, type AnalysisEvent, type CaptureIdentity, type CaptureJob } from '../../core/profiles/prefetch';
import { healthFindings, parseXlaMetricsReport } from '../../core/profiles/xla-metrics';
import type { MetricRecord } from '../../../../protocol/metrics-record';
import type { RunStatus, WorkerStatus } from '../../../../protocol/run-status';
import type { HostToWebview, ProfileCapture, WebviewToHost } from '../../../../protocol/run-view-messages';
import { isActive } from '../../core/run/engine';
import { chipIdleNoteSeconds } from '../config';
import type { Ctx } from '../ctx';
import { ChipsWatch } from './chips';
import { runViewHtml } from './html';
import { findCaptures, outputDir, readMetricsJsonl } from './local';
import type { RunSource } from './remote';

/** Log lines are sent in batches: one postMessage per line would flood the IPC on 64 chatty workers. */
const FLUSH_MS = 100;

/**
 * A capture in the Profiles tab. Local ones have a file; remote ones are known by their identity on the worker
 * and a fetch that copies them here (once: the prefetch, an open and an export share it).
 */
interface CaptureEntry {
  capture: ProfileCapture;
  file?: string;
  remote?: { identity: CaptureIdentity; fetch(signal: AbortSignal): Promise<string> };
  fetching?: Promise<string>;
}

export interface RunViewInfo {
  runId: string;
  title: string;
  workers?: number;
  /** Multislice and GKE runs: workers per slice, so the view labels them sNwM. */
  workersPerSlice?: number;
  /** `runId` is a stand-in: the run has no id yet (it is being synced and started), or the panel shows no run. */
  provisional?: boolean;
}

/** The runState field that makes the view label workers sNwM, when the run has slices. */
const slices = (info: RunViewInfo): { workersPerSlice?: number } => (info.workersPerSlice ? { workersPerSlice: info.workersPerSlice } : {});

/**
 * One webview panel per run: every worker's log, live metrics, profiles. The panel survives being hidden
 * (retainContextWhenHidden: a million log lines cannot be rebuilt from setState), and messages sent before the
 * webview said `ready` are queued, so a run's first lines are never lost.
 */
export class RunViewPanel implements vscode.Disposable {
  private static readonly panels = new Map<string, RunViewPanel>();
  private static last: RunViewPanel | undefined;
  private static parser: ProfileParser | undefined;

  private ready = false;
  private readonly queue: HostToWebview[] = [];
  private pending = new Map<number, string[]>();
  private timer: NodeJS.Timeout | undefined;
  private readonly captures = new Map<string, CaptureEntry>();
  /** Every capture is analyzed in the background as soon as it is listed, so that opening one is a lookup. */
  private analyses = this.newAnalyses();
  private disposed = false;
  private readonly aliases: string[] = [];
  private chips: ChipsWatch | undefined;

  /**
   * Shows (or reveals) the panel of `info.runId`. `reuse`: the run this one repeats (Run Again), whose panel, once
   * that run has ended, shows this run instead of a new panel opening. A new panel opens where the run views
   * already are, so runs one after another never add editor groups; the first opens beside the editor.
   */
  static show(ctx: Ctx, info: RunViewInfo, preserveFocus = true, column?: vscode.ViewColumn, reuse?: string): RunViewPanel {
    const existing = RunViewPanel.panels.get(info.runId);
    if (existing) {
      existing.panel.reveal(undefined, preserveFocus);
      return existing;
    }
    const previous = reuse === undefined ? undefined : RunViewPanel.panels.get(reuse);
    if (previous && !previous.disposed && !isActive(previous.state)) {
      previous.restart(info);
      previous.panel.reveal(undefined, preserveFocus);
      return previous;
    }
    const where = column ?? RunViewPanel.current?.panel.viewColumn ?? vscode.ViewColumn.Beside;
    const panel = vscode.window.createWebviewPanel('tpuWorkbench.runView', titleOf(info), { viewColumn: where, preserveFocus }, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(ctx.extContext.extensionUri, 'dist')],
    });
    const view = new RunViewPanel(ctx, panel, info);
    // While the webview loads: the analysis is loaded and its worker started before the first capture is opened.
    view.parser().readySoon();
    ctx.setContext('runViewOpened', true);
    RunViewPanel.panels.set(info.runId, view);
    RunViewPanel.last = view;
    return view;
  }

  /** The open panel of a run, if any. */
  static get(runId: string): RunViewPanel | undefined {
    return RunViewPanel.panels.get(runId);
  }

  /**
   * A run started here gets its id only once it started: from then on "Open Run View" on it finds this panel,
   * and its tab is titled by it (tabs of runs of one recipe would otherwise read alike).
   */
  aliasRunId(runId: string): void {
    if (this.disposed || RunViewPanel.panels.has(runId)) return;
    RunViewPanel.panels.set(runId, this);
    // The stand-in id stays a key of this panel (and goes with it); the page and the tab say the real one.
    this.aliases.push(this.shown.runId);
    this.shown = { ...this.shown, runId, provisional: false };
    this.panel.title = titleOf(this.shown);
  }

  /** The most recently opened panel, for "TPU: Open Run View". */
  static get current(): RunViewPanel | undefined {
    return RunViewPanel.last && !RunViewPanel.last.disposed ? RunViewPanel.last : undefined;
  }

  /** The run's status as last shown (a panel is reused by Run Again only once its run has ended). */
  private state: RunStatus = 'starting';

  private constructor(
    private readonly ctx: Ctx,
    readonly panel: vscode.WebviewPanel,
    private shown: RunViewInfo,
  ) {
    panel.iconPath = vscode.Uri.joinPath(ctx.extContext.extensionUri, 'media', 'tpu.svg');
    panel.webview.html = runViewHtml(panel.webview, ctx.extContext.extensionUri, shown.title);
    panel.webview.onDidReceiveMessage((m: WebviewToHost) => void this.onMessage(m).catch((e: unknown) => ctx.log.error(`run view: ${describeError(e)}`)));
    panel.onDidDispose(() => this.dispose());
    this.post({ type: 'runState', runId: shown.runId, state: 'starting', workers: shown.workers, ...slices(shown) });
  }

  get info(): RunViewInfo {
    return this.shown;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Shows another run from the start: a fresh page (the old one's logs, charts and profiles go with it). */
  private restart(info: RunViewInfo): void {
    for (const id of [this.shown.runId, ...this.aliases]) if (RunViewPanel.panels.get(id) === this) RunViewPanel.panels.delete(id);
    this.aliases.length = 0;
    // The new run's chips are watched when it starts (watchChips).
    this.chips?.dispose();
    this.chips = undefined;
    this.analyses.cancel();
    this.analyses = this.newAnalyses();
    this.captures.clear();
    this.keyOwner.clear();
    this.pending = new Map();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.ready = false;
    this.shown = info;
    this.state = 'starting';
    this.panel.title = titleOf(info);
    // A new nonce makes new HTML, so the webview loads again and says `ready` again.
    this.panel.webview.html = runViewHtml(this.panel.webview, this.ctx.extContext.extensionUri, info.title);
    this.post({ type: 'runState', runId: info.runId, state: 'starting', workers: info.workers, ...slices(info) });
    RunViewPanel.panels.set(info.runId, this);
    RunViewPanel.last = this;
  }

  appendLines(worker: number, lines: string[]): void {
    if (this.disposed || lines.length === 0) return;
    const buf = this.pending.get(worker);
    if (buf) buf.push(...lines);
    else this.pending.set(worker, [...lines]);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private newAnalyses(): CaptureAnalyses {
    return new CaptureAnalyses((file, background) => this.parser().analyze(file, background), { onEvent: (e) => this.onAnalysis(e) });
  }

  setStatus(state: RunStatus, summary?: string): void {
    this.state = state;
    this.chips?.onStatus(state);
    this.flush();
    this.post({ type: 'runState', runId: this.info.runId, state, summary, workers: this.info.workers, ...slices(this.info) });
  }

  setWorkerStatus(worker: number, state: WorkerStatus, exitCode?: number | null): void {
    this.flush();
    this.post({ type: 'workerStatus', worker, state, exitCode });
  }

  setMetrics(records: MetricRecord[]): void {
    this.chips?.onMetrics(records);
    this.post({ type: 'metrics', records });
  }

  /** The Chips tab: every worker's chips read from libtpu while this panel is open (once per panel). */
  watchChips(source: RunSource): void {
    if (this.disposed || this.chips) return;
    this.chips = new ChipsWatch(source, (m) => this.post(m), {
      idleNoteSeconds: chipIdleNoteSeconds(),
      log: (m) => this.ctx.log.info(`run view ${this.info.runId}: ${m}`),
    });
  }

  /**
   * Adds what a local run folder holds: metrics.jsonl, xla_metrics.txt (→ health) and profile captures.
   * `worker` tags the metrics and health when the folder is one worker's.
   */
  addLocalFolder(dir: string, worker = 0): void {
    const out = outputDir(dir);
    const records = readMetricsJsonl(path.join(out, 'metrics.jsonl')).map((r) => ({ ...r, worker: r.worker ?? worker }));
    if (records.length) this.setMetrics(records);
    const report = path.join(out, 'xla_metrics.txt');
    if (existsSync(report)) {
      this.post({ type: 'health', worker, findings: healthFindings(parseXlaMetricsReport(readFileSync(report, 'utf8')), records) });
    }
    for (const c of findCaptures(dir)) {
      this.addCapture(c.file, `w${worker} · ${c.run} · ${c.host}`, worker);
    }
  }

  addCapture(file: string, label = path.basename(file), worker?: number): void {
    const id = `c${this.captures.size + 1}`;
    if ([...this.captures.values()].some((c) => c.file === file)) return;
    const mb = (statSync(file).size / 1e6).toFixed(1);
    this.listCapture({ file, capture: { id, label: `${label} (${mb} MB)`, worker, location: file } });
  }

  /** A capture on a worker, known by `identity` (its worker, path, size and mtime there); `fetch` copies it here. */
  addRemoteCapture(label: string, worker: number, identity: CaptureIdentity, fetch: (signal: AbortSignal) => Promise<string>): void {
    if ([...this.captures.values()].some((c) => c.capture.location === identity.path && c.capture.worker === worker)) return;
    const id = `c${this.captures.size + 1}`;
    this.listCapture({ remote: { identity, fetch }, capture: { id, label: `${label} (${(identity.bytes / 1e6).toFixed(1)} MB)`, worker, location: identity.path } });
  }

  private listCapture(c: CaptureEntry): void {
    this.captures.set(c.capture.id, c);
    this.postCaptures();
    try {
      this.analyses.prefetch(this.job(c));
    } catch (e) {
      this.ctx.log.warn(`run view: cannot prefetch ${c.capture.label}: ${describeError(e)}`);
    }
  }

  private postCaptures(): void {
    this.post({ type: 'profiles', captures: [...this.captures.values()].map((c) => c.capture) });
  }

  /** What the analyses know the capture by: for a local file, its size and mtime now (it may have been rewritten). */
  private job(c: CaptureEntry): CaptureJob {
    let job: CaptureJob;
    if (c.remote) job = { key: captureKey(c.remote.identity), bytes: c.remote.identity.bytes, file: (signal) => this.fileOf(c, signal) };
    else {
      const file = c.file!;
      const st = statSync(file);
      job = { key: captureKey({ where: 'local', path: file, bytes: st.size, mtimeMs: st.mtimeMs }), bytes: st.size, file: () => Promise.resolve(file) };
    }
    this.keyOwner.set(job.key, c.capture.id);
    return job;
  }

  /** The analyses' key of each capture, back to its id (for the log and the list's ready marks). */
  private readonly keyOwner = new Map<string, string>();

  /** The capture's local file, fetching it from its worker the first time (one fetch, whoever asks). */
  private fileOf(c: CaptureEntry, signal?: AbortSignal): Promise<string> {
    if (c.file) return Promise.resolve(c.file);
    c.fetching ??= c.remote!.fetch(signal ?? new AbortController().signal).then(
      (f) => (c.file = f),
      (e: unknown) => { c.fetching = undefined; throw e; },
    );
    return c.fetching;
  }

  private async localFile(id: string): Promise<string | undefined> {
    const c = this.captures.get(id);
    return c ? this.fileOf(c) : undefined;
  }

  private onAnalysis(e: AnalysisEvent): void {
    const c = this.captures.get(this.keyOwner.get(e.key) ?? '');
    const name = c?.capture.label ?? e.key;
    if (e.kind === 'analyzed') {
      this.ctx.log.info(`run view: profile ${name} analyzed in ${e.ms.toFixed(0)} ms (${e.background ? 'prefetch' : 'on open'})`);
      if (c && e.background) {
        c.capture.ready = true;
        this.postCaptures();
      }
    } else if (e.kind === 'evicted') {
      if (c) {
        c.capture.ready = false;
        this.postCaptures();
      }
    } else if (e.kind === 'failed') {
      this.ctx.log.warn(`run view: profile ${name} could not be analyzed${e.background ? ' (prefetch)' : ''}: ${describeError(e.error)}`);
    } else {
      this.ctx.log.info(`run view: profile ${name} opened (${e.prefetched ? 'prefetched: no parse on open' : 'parsed on open'})`);
    }
  }

  private parser(): ProfileParser {
    RunViewPanel.parser ??= new ProfileParser(path.join(this.ctx.extContext.extensionPath, 'dist', 'profile-worker.js'));
    return RunViewPanel.parser;
  }

  private async onMessage(m: WebviewToHost): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.ready = true;
        for (const q of this.queue.splice(0)) void this.panel.webview.postMessage(q);
        break;
      case 'openProfile': {
        try {
          const c = this.captures.get(m.id);
          if (!c) return;
          const { summary, prefetched } = await this.analyses.open(this.job(c));
          this.post({ type: 'profile', id: m.id, summary, prefetched });
        } catch (e) {
          this.post({ type: 'profileError', id: m.id, message: describeError(e) });
        }
        break;
      }
      case 'compareProfiles': {
        // Every host's capture, read again without its timeline on the parser's worker (the analysis puts them side
        // by side); a host that cannot be fetched or read is named, not fatal.
        const files: string[] = [];
        const errors: string[] = [];
        for (const id of m.ids) {
          try {
            const file = await this.localFile(id);
            if (file) files.push(file);
          } catch (e) {
            errors.push(`${this.captures.get(id)?.capture.label ?? id}: ${describeError(e)}`);
          }
        }
        try {
          const hosts = await this.parser().compare(files);
          this.post({ type: 'profileHosts', ...hosts, errors: [...errors, ...hosts.errors] });
        } catch (e) {
          this.post({ type: 'profileHosts', hosts: [], slowest: null, ops: [], errors: [...errors, describeError(e)] });
        }
        break;
      }
      case 'exportTrace': {
        const file = await this.localFile(m.id);
        if (!file) return;
        const target = await vscode.window.showSaveDialog({ defaultUri: vscode.Uri.file(path.join(path.dirname(file), `${captureHost(path.basename(file))}.trace.json`)), filters: { 'Chrome trace JSON': ['json'] } });
        if (!target) return;
        const n = await this.parser().exportChromeTrace(file, target.fsPath);
        const open = await vscode.window.showInformationMessage(`Wrote ${n} trace events to ${path.basename(target.fsPath)}. Open it in Perfetto (ui.perfetto.dev) or chrome://tracing.`, 'Open Perfetto');
        if (open) await vscode.env.openExternal(vscode.Uri.parse('https://ui.perfetto.dev'));
        break;
      }
      case 'browse': {
        const picked = await vscode.window.showOpenDialog({ canSelectFiles: true, canSelectFolders: true, canSelectMany: false, title: 'Open a profile (.xplane.pb, .pt.trace.json) or a run folder', filters: { 'Profile capture': ['pb', 'json'] } });
        const uri = picked?.[0];
        if (!uri) return;
        if (statSync(uri.fsPath).isDirectory()) this.addLocalFolder(uri.fsPath);
        else this.addCapture(uri.fsPath);
        break;
      }
      case 'copy':
        await vscode.env.clipboard.writeText(m.text);
        break;
      case 'saveLogs': {
        const target = await vscode.window.showSaveDialog({ defaultUri: vscode.Uri.file(`${this.info.runId}.log`), filters: { Logs: ['log', 'txt'] } });
        if (target) await vscode.workspace.fs.writeFile(target, Buffer.from(`${m.text}\n`, 'utf8'));
        break;
      }
      case 'cancelRun':
        break;
    }
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batches = this.pending;
    this.pending = new Map();
    for (const [worker, lines] of batches) this.post({ type: 'logLines', worker, lines });
  }

  private post(msg: HostToWebview): void {
    if (this.disposed) return;
    if (!this.ready) this.queue.push(msg);
    else void this.panel.webview.postMessage(msg);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.chips?.dispose();
    this.analyses.cancel();
    if (this.timer) clearTimeout(this.timer);
    for (const id of [this.info.runId, ...this.aliases]) if (RunViewPanel.panels.get(id) === this) RunViewPanel.panels.delete(id);
    this.panel.dispose();
  }
}

/** A tab's title: the run's id once it has one (a run started here has none until it started on every worker). */
function titleOf(info: RunViewInfo): string {
  return info.provisional ? `Run: ${info.title}` : `Run ${info.runId}`;
}

/** "TPU: Open Run View": the latest run's panel, else an empty one to open a profile or run folder into. */
export function openRunView(ctx: Ctx): void {
  const current = RunViewPanel.current;
  if (current) {
    current.panel.reveal(undefined, false);
    return;
  }
  RunViewPanel.show(ctx, { runId: 'local', title: 'profiles and run folders', provisional: true }, false, vscode.ViewColumn.Active).setStatus('succeeded', 'open a profile or a run folder from the Profiles tab');
}
