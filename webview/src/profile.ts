/**
 * The Profiles tab: capture list, step-time breakdown, op profile (by hlo_category or by module), the trace
 * timeline, Chrome trace export, and the health panel built from the torch_xla metrics report.
 */
import type { HealthFinding, OpRow, ProfileCapture, ProfileHostsMessage, ProfileSummary, StepBreakdown } from '../../protocol/run-view-messages';
import { hostsSection } from './profile-hosts';
import { button, el, fmtNum, fmtUs } from './dom';
import { Timeline } from './timeline';

export interface ProfileViewHost {
  open(id: string): void;
  exportTrace(id: string): void;
  browse(): void;
  compare(ids: string[]): void;
}

const PARTS: { key: keyof StepBreakdown; label: string }[] = [
  { key: 'compileUs', label: 'compile' },
  { key: 'executeUs', label: 'execute' },
  { key: 'transferUs', label: 'transfer' },
  { key: 'hostUs', label: 'host (tracing)' },
  { key: 'otherUs', label: 'other' },
];

export function table(head: string[], rows: (string | number)[][], caption: string): HTMLTableElement {
  const t = el('table');
  const cap = el('caption');
  cap.textContent = caption;
  const thead = el('thead');
  const tr = el('tr');
  for (const h of head) {
    const th = el('th');
    th.scope = 'col';
    th.textContent = h;
    tr.append(th);
  }
  thead.append(tr);
  const tbody = el('tbody');
  for (const r of rows) {
    const row = el('tr');
    for (const c of r) {
      const td = el('td');
      td.textContent = String(c);
      if (typeof c === 'number' || /^[\d.,]+( ?[µm]?s|%|[kMGT])?$/.test(String(c))) td.className = 'num';
      row.append(td);
    }
    tbody.append(row);
  }
  t.append(cap, thead, tbody);
  return t;
}

export class ProfileView {
  readonly root = el('div', 'profiles');
  private readonly list = el('div', 'captures');
  private readonly status = el('p', 'status');
  private readonly health = el('section', 'health');
  private readonly body = el('div', 'profile-body');
  readonly timeline = new Timeline();
  private current: string | undefined;
  private byModule = false;
  private summary: ProfileSummary | undefined;

  constructor(private readonly host: ProfileViewHost) {
    this.status.setAttribute('role', 'status');
    const bar = el('div', 'toolbar');
    bar.append(this.list, button('Open profile file…', () => this.host.browse(), 'Open a local .xplane.pb or a run folder'));
    const h = el('h2');
    h.textContent = 'Health';
    this.health.append(h);
    this.health.hidden = true;
    this.root.append(bar, this.health, this.status, this.body);
  }

  setCaptures(captures: ProfileCapture[]): void {
    this.list.replaceChildren();
    if (!captures.length) {
      const p = el('span', 'muted');
      p.textContent = 'No profile captures yet (set profile_step= in the recipe).';
      this.list.append(p);
    }
    for (const c of captures) {
      const b = button(c.ready ? `${c.label} ✓` : c.label, () => this.request(c.id), c.ready ? `Open ${c.location} (analyzed already: opens at once)` : `Open ${c.location}`);
      b.dataset.id = c.id;
      b.dataset.ready = String(c.ready === true);
      b.setAttribute('aria-pressed', String(c.id === this.current));
      this.list.append(b);
    }
    if (captures.length > 1) {
      const ids = captures.map((c) => c.id);
      const b = button(`Compare hosts (${captures.length})`, () => {
        this.current = undefined;
        this.list.querySelectorAll('button').forEach((x) => x.setAttribute('aria-pressed', 'false'));
        this.status.className = 'status';
        this.status.textContent = `Opening ${captures.length} captures side by side…`;
        this.body.replaceChildren();
        this.host.compare(ids);
      }, 'Every capture of the list side by side: step time per host, the slowest named, ops combined');
      b.className = 'compare';
      this.list.append(b);
    }
  }

  setHosts(m: ProfileHostsMessage): void {
    this.status.className = 'status';
    this.status.textContent = `${m.hosts.length} hosts${m.slowest ? `; slowest: ${m.slowest}` : ''}.`;
    this.body.replaceChildren(hostsSection(m));
  }

  request(id: string): void {
    this.current = id;
    this.list.querySelectorAll('button').forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.id === id)));
    this.status.textContent = 'Fetching and parsing the profile…';
    this.status.className = 'status';
    this.body.replaceChildren();
    this.host.open(id);
  }

  setError(id: string, message: string): void {
    this.current = id;
    this.status.textContent = `Could not open the profile: ${message}`;
    this.status.className = 'status error';
    this.body.replaceChildren();
  }

  /** A worker's findings from `source`, in place of that source's earlier ones for the worker. */
  setHealth(findings: HealthFinding[], worker?: number, source: 'xla-metrics' | 'chips' = 'xla-metrics'): void {
    this.health.hidden = false;
    const list = el('ul');
    list.dataset.worker = String(worker ?? 0);
    list.dataset.source = source;
    for (const f of findings) {
      const li = el('li', `finding ${f.severity}`);
      const title = el('strong');
      title.textContent = `${f.severity === 'warning' ? '⚠ ' : f.severity === 'ok' ? '✓ ' : 'ℹ '}${worker !== undefined ? `w${worker}: ` : ''}${f.title}`;
      const detail = el('div');
      detail.textContent = f.detail;
      li.append(title, detail);
      list.append(li);
    }
    this.health.querySelector(`ul[data-worker="${worker ?? 0}"][data-source="${source}"]`)?.remove();
    this.health.append(list);
  }

  /** `prefetched`: analyzed before the click (kept on the body for tests: the click started no parse). */
  setProfile(id: string, s: ProfileSummary, prefetched = false): void {
    this.current = id;
    this.body.dataset.prefetched = String(prefetched);
    this.summary = s;
    this.status.className = 'status';
    this.status.textContent = `${s.hosts.join(', ') || 'capture'}: ${s.planes.length} planes, ${fmtNum(s.eventCount)} events over ${fmtUs(s.spanUs)}, ${s.steps.length} steps.`;
    this.body.replaceChildren();
    for (const w of s.warnings) {
      const p = el('p', 'warning');
      p.textContent = w;
      this.body.append(p);
    }
    const exportBtn = button('Export Chrome trace JSON…', () => this.host.exportTrace(id), 'Save the whole capture as Chrome trace JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing');
    this.body.append(exportBtn, this.overviewSection(s), this.stepsSection(s), this.opsSection(), this.timelineSection(s));
  }

  private overviewSection(s: ProfileSummary): HTMLElement {
    const sec = el('section', 'overview');
    const h = el('h2');
    h.textContent = 'Overview';
    const o = s.overview;
    const p = el('p');
    p.textContent = o.deviceCount
      ? `${o.deviceCount} × ${o.deviceType || o.hardware} on ${o.hostCount} host${o.hostCount === 1 ? '' : 's'}: devices ran ops ${fmtUs(o.busyUs)} of ${fmtUs(o.activeUs)} active (${o.idlePercent.toFixed(1)}% idle).`
      + (o.peakTflops ? ` Peak ${o.peakTflops} TFLOP/s, ${o.hbmGBs.toFixed(0)} GB/s HBM per chip.` : '')
      : `No device planes: a host-only capture (${s.planes.map((pl) => pl.name).join(', ')}).`;
    sec.append(h, p);
    return sec;
  }

  /** What the capture holds, when it has no steps or no ops to show: its busiest planes and lines. */
  private holds(s: ProfileSummary): string {
    const planes = s.planes.filter((pl) => pl.events > 0).sort((a, b) => b.events - a.events);
    return planes.length
      ? `It holds ${fmtNum(s.eventCount)} events: ${planes.slice(0, 6).map((pl) => `${pl.name} (${fmtNum(pl.events)})`).join(', ')}${planes.length > 6 ? ', …' : ''}.`
      : 'It holds no events.';
  }

  private stepsSection(s: ProfileSummary): HTMLElement {
    const steps: StepBreakdown[] = s.steps;
    const sec = el('section', 'steps');
    const h = el('h2');
    h.textContent = s.overview.stepSource === 'none' ? 'Step time' : `Step time (${s.notes.steps})`;
    sec.append(h);
    if (!steps.length) {
      const p = el('p', 'muted');
      p.textContent = `${s.notes.steps} ${s.ops.length ? `${s.ops.length} ops ran; see the op profile.` : this.holds(s)}`;
      sec.append(p);
      return sec;
    }
    const max = Math.max(...steps.map((s) => s.totalUs));
    const bars = el('div', 'bars');
    bars.setAttribute('aria-hidden', 'true');
    for (const st of steps) {
      const bar = el('div', 'bar');
      bar.style.width = `${(st.totalUs / max) * 100}%`;
      for (const p of PARTS) {
        const seg = el('span', `seg ${p.label.split(' ')[0]}`);
        seg.style.flexGrow = String(st[p.key]);
        seg.title = `${p.label}: ${fmtUs(st[p.key])}`;
        bar.append(seg);
      }
      bars.append(bar);
    }
    const legend = el('div', 'legend');
    for (const p of PARTS) {
      const s = el('span', `key ${p.label.split(' ')[0]}`);
      s.textContent = p.label;
      legend.append(s);
    }
    sec.append(legend, bars, table(['step', 'total', ...PARTS.map((p) => p.label)], steps.map((st) => [st.index, fmtUs(st.totalUs), ...PARTS.map((p) => fmtUs(st[p.key]))]), 'Per-step breakdown'));
    return sec;
  }

  private opsSection(): HTMLElement {
    const sec = el('section', 'ops');
    const h = el('h2');
    h.textContent = 'Op profile (self time)';
    const toggle = button(this.byModule ? 'Group by category' : 'Group by module', () => {
      this.byModule = !this.byModule;
      sec.replaceWith(this.opsSection());
    });
    sec.append(h, toggle);
    const ops = this.summary?.ops ?? [];
    if (!ops.length && this.summary) {
      const p = el('p', 'muted');
      p.textContent = this.summary.notes.unattributed || `No XLA ops ran on a device in this capture. ${this.holds(this.summary)}`;
      sec.append(p);
      return sec;
    }
    const total = ops.reduce((a, o) => a + o.selfUs, 0) || 1;
    const groups = new Map<string, OpRow[]>();
    for (const o of ops) {
      const k = (this.byModule ? o.module : o.category) || '(none)';
      groups.set(k, [...(groups.get(k) ?? []), o]);
    }
    const sorted = [...groups.entries()].map(([k, rows]) => ({ k, rows, self: rows.reduce((a, o) => a + o.selfUs, 0) })).sort((a, b) => b.self - a.self);
    for (const g of sorted) {
      const d = el('details');
      const sum = el('summary');
      sum.textContent = `${g.k} — ${fmtUs(g.self)} (${((g.self / total) * 100).toFixed(1)}%), ${g.rows.length} ops`;
      const rows = g.rows.slice(0, 200).map((o) => [
        o.name, o.count, fmtUs(o.selfUs), fmtUs(o.totalUs), `${((o.selfUs / total) * 100).toFixed(2)}%`,
        o.flops ? fmtNum(o.flops) : '–', o.bytes ? fmtNum(o.bytes) : '–', o.intensity ? o.intensity.toFixed(2) : '–', o.boundBy || '–',
      ]);
      d.append(sum, table(['op', 'count', 'self', 'total', '% of self', 'FLOPs', 'bytes', 'FLOP/byte', 'bound by'], rows, `Ops in ${g.k}`));
      sec.append(d);
    }
    if (sorted[0]) (sec.querySelector('details') as HTMLDetailsElement).open = true;
    const note = this.summary?.notes.unattributed ?? '';
    if (note) {
      const p = el('p', 'muted');
      p.textContent = note;
      sec.append(p);
    }
    return sec;
  }

  private timelineSection(s: ProfileSummary): HTMLElement {
    const sec = el('section', 'trace');
    const h = el('h2');
    h.textContent = 'Timeline';
    sec.append(h, this.timeline.root);
    this.timeline.set(s);
    return sec;
  }
}
