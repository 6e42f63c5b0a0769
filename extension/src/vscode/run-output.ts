import * as vscode from 'vscode';

/**
 * Where runs' output goes in VS Code besides the run view, when `tpuWorkbench.run.outputChannel` asks for it (the
 * run view shows every line already: a second copy in the Output panel is opt-in). Then: "TPU Run" for a run when no other run is writing there (the common case,
 * one run at a time, one stable channel, as before), and a channel of its own, "TPU Run: <recipe> on <vm>", for
 * a run that is watched while another one is (a second VM, or several runs reattached after a restart) — so
 * concurrent runs never interleave in one channel or take it from each other. Like VS Code's task terminals,
 * a free "TPU Run" is reused by the next run; finished runs' own channels stay readable until a few newer ones
 * replace them.
 */

/** Output is flushed to the channel in batches: a chatty trainer on 64 workers would otherwise send thousands of IPC messages a second. */
const FLUSH_MS = 100;
/** How many finished runs keep their own channel (beyond "TPU Run") before the oldest is closed. */
const KEEP_FINISHED = 4;
export const PRIMARY_CHANNEL = 'TPU Run';

/** One run's output: lines collected and appended in batches, into the channel the run was given, if any. */
export class RunOutput {
  private lines: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  live = true;
  runId: string | undefined;
  readonly openedAt = Date.now();
  /** What "Show output" shows when there is no channel: the run's view. */
  reveal: () => void = () => undefined;

  constructor(
    readonly channel: vscode.OutputChannel | undefined,
    readonly label: string,
    /** False for "TPU Run" itself: only a run's own channel is closed when it is pruned. */
    readonly ownsChannel: boolean,
  ) {}

  push(line: string): void {
    if (!this.channel) return;
    this.lines.push(line);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** A line after everything pushed so far (summaries, notices). */
  appendLine(line: string): void {
    this.flush();
    this.channel?.appendLine(line);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    this.channel?.appendLine(this.lines.join('\n'));
    this.lines = [];
  }

  show(): void {
    if (this.channel) this.channel.show(true);
    else this.reveal();
  }

  /** The run ended (or is no longer watched): what is buffered goes out; the channel stays to be read. */
  end(): void {
    this.flush();
    this.live = false;
  }
}

export class RunChannels implements vscode.Disposable {
  private primaryChannel: vscode.OutputChannel | undefined;
  /** Newest last; live ones and recently finished ones. */
  private outputs: RunOutput[] = [];

  /** "TPU Run", made the first time a run writes there. */
  private get primary(): vscode.OutputChannel {
    this.primaryChannel ??= vscode.window.createOutputChannel(PRIMARY_CHANNEL);
    return this.primaryChannel;
  }

  /**
   * Where a run that starts being watched now writes: "TPU Run" (cleared if it is being reused) or a channel of
   * its own when `channel` (the setting) is on; nowhere but its run view when it is off.
   */
  open(label: string, runId?: string, channel = true): RunOutput {
    if (!channel) {
      const out = new RunOutput(undefined, label, false);
      out.runId = runId;
      this.outputs.push(out);
      this.outputs = this.outputs.filter((o) => o.live || o.channel);
      return out;
    }
    const primaryBusy = this.outputs.some((o) => o.live && o.channel && !o.ownsChannel);
    let out: RunOutput;
    if (!primaryBusy) {
      this.primary.clear();
      out = new RunOutput(this.primary, label, false);
      // The previous user of "TPU Run" is no longer shown there: forget it for the picker.
      this.outputs = this.outputs.filter((o) => o.ownsChannel || (o.live && !o.channel));
    } else {
      out = new RunOutput(vscode.window.createOutputChannel(this.uniqueName(`${PRIMARY_CHANNEL}: ${label}`)), label, true);
    }
    out.runId = runId;
    this.outputs.push(out);
    this.prune();
    return out;
  }

  /** The live output of a run being watched, if any. */
  live(runId: string): RunOutput | undefined {
    return this.outputs.find((o) => o.live && o.runId === runId);
  }

  /**
   * "Show Run Output": the one run there is at once; with several (running, or finished in their own channel),
   * a pick, running ones first.
   */
  async show(): Promise<void> {
    const candidates = [...this.outputs].sort((a, b) => Number(b.live) - Number(a.live) || b.openedAt - a.openedAt);
    if (candidates.length <= 1) {
      if (candidates[0]) candidates[0].show();
      else void vscode.commands.executeCommand('tpuWorkbench.openRunView');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      candidates.map((o) => ({
        label: `$(${o.live ? 'sync~spin' : 'output'}) ${o.label}`,
        description: [o.live ? 'running' : 'finished', o.runId].filter(Boolean).join(' · '),
        detail: o.channel ? `Output channel "${o.channel.name}"` : 'Run view',
        output: o,
      })),
      { title: 'Show Run Output', placeHolder: 'Which run’s output to show' },
    );
    picked?.output.show();
  }

  private uniqueName(base: string): string {
    const taken = new Set(this.outputs.map((o) => o.channel?.name));
    if (!taken.has(base)) return base;
    for (let i = 2; ; i++) if (!taken.has(`${base} (${i})`)) return `${base} (${i})`;
  }

  /** Closes the oldest finished runs' own channels beyond KEEP_FINISHED. */
  private prune(): void {
    const finished = this.outputs.filter((o) => !o.live && o.ownsChannel);
    const drop = new Set(finished.slice(0, Math.max(0, finished.length - KEEP_FINISHED)));
    for (const o of drop) o.channel?.dispose();
    this.outputs = this.outputs.filter((o) => !drop.has(o));
  }

  dispose(): void {
    for (const o of this.outputs) {
      o.end();
      if (o.ownsChannel) o.channel?.dispose();
    }
    this.outputs = [];
    this.primaryChannel?.dispose();
  }
}
