/**
 * The hosts of a run side by side (Profiles tab, "Compare hosts"): each host's step count, average step and
 * idle share, the slowest host named, and the op table of all hosts combined.
 */
import type { ProfileHostsMessage } from '../../protocol/run-view-messages';
import { el, fmtUs } from './dom';
import { table } from './profile';

export function hostsSection(m: ProfileHostsMessage): HTMLElement {
  const sec = el('section', 'hosts');
  const h = el('h2');
  h.textContent = `Hosts side by side (${m.hosts.length})`;
  sec.append(h);
  for (const e of m.errors) {
    const p = el('p', 'warning');
    p.textContent = e;
    sec.append(p);
  }
  const p = el('p');
  p.textContent = m.slowest
    ? `Slowest host: ${m.slowest} (the longest average step; the others wait for it at each collective).`
    : 'No host has steps to compare; the busy time and idle share below compare them.';
  const rows = m.hosts.map((x) => [
    x.host === m.slowest ? `${x.host} (slowest)` : x.host, x.steps, x.avgStepUs ? fmtUs(x.avgStepUs) : '–', fmtUs(x.busyUs), `${x.idlePercent.toFixed(1)}%`,
  ]);
  sec.append(p, table(['host', 'steps', 'average step', 'devices busy', 'idle'], rows, 'Per-host step time'));
  const total = m.ops.reduce((a, o) => a + o.selfUs, 0) || 1;
  const ops = table(
    ['op', 'program', 'category', 'count', 'self', '% of self'],
    m.ops.slice(0, 50).map((o) => [o.name, o.module || o.program || '–', o.category, o.count, fmtUs(o.selfUs), `${((o.selfUs / total) * 100).toFixed(2)}%`]),
    'Ops of all hosts combined',
  );
  sec.append(ops);
  return sec;
}
