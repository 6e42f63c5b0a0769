/**
 * `tpw profile FILE|DIR [--json] [--top N]`: a capture's overview, steps and op table in a terminal or CI, from
 * the same core code as the run view. A directory is every `*.xplane.pb` under it (one per host of a run, or
 * the sessions of a log directory): each host's overview and step time side by side, the slowest named, and
 * the op table of all of them combined.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { TpwError } from '../core/errors';
import { analyzeProfileFile, type ProfileSummary } from '../core/profiles/analyze';
import { analyzeProfileFileParallel } from '../core/profiles/parallel';
import { INLINE_MAX_BYTES } from '../core/profiles/parse';
import { ProfileFormatError } from '../core/profiles/xplane';
import { requireArg, UsageError, type CommandContext } from './context';
import { combineHosts, type HostProfile } from '../core/profiles/hosts';
import { NO_STEPS_NOTE, STEP_SOURCE, sumUnattributed, unattributedNote } from '../../../protocol/profile-notes';

/** The captures named by `target`: the file itself, or every *.xplane.pb under the directory, sorted. */
export function capturesOf(target: string): string[] {
  if (!existsSync(target)) throw new TpwError('NOT_FOUND', `There is no file or directory ${target}.`);
  if (!statSync(target).isDirectory()) return [target];
  const found = readdirSync(target, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.xplane.pb'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  if (!found.length) throw new TpwError('NOT_FOUND', `The directory ${target} holds no *.xplane.pb capture.`);
  return found;
}

/**
 * One capture, on this thread when small (no worker start-up), on several when big, the cores allow
 * (defaultThreads) and the worker bundle is there. Without timeline columns: the command shows none, and on a
 * 200 MB capture they were a third of the process's memory.
 */
async function analyze(file: string): Promise<ProfileSummary> {
  try {
    const worker = path.join(__dirname, 'profile-worker.js');
    const opts = { timeline: false };
    if (statSync(file).size > INLINE_MAX_BYTES && existsSync(worker)) return await analyzeProfileFileParallel(file, worker, opts);
    return analyzeProfileFile(file, opts);
  } catch (e) {
    if (e instanceof ProfileFormatError) throw new TpwError('INVALID_ARGUMENT', e.message.startsWith(file) ? e.message : `${file}: ${e.message}`);
    throw e;
  }
}

const us = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} s` : x >= 1e3 ? `${(x / 1e3).toFixed(2)} ms` : `${x.toFixed(1)} µs`);
const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number): string => (s.length >= n ? s : ' '.repeat(n - s.length) + s);

/** What the command reads of its context (profile-main.ts calls it without the rest of the CLI). */
export type ProfileContext = Pick<CommandContext, 'values' | 'positionals' | 'out' | 'err'>;

export async function profileCommand(ctx: ProfileContext): Promise<number> {
  if (ctx.positionals.length > 1) throw new UsageError(`unexpected argument "${ctx.positionals[1]}"`);
  const target = ctx.positionals[0];
  const files = capturesOf(requireArg(target, 'FILE or DIR (a .xplane.pb capture, or a directory of them)'));
  const topRaw = ctx.values.top;
  const top = topRaw === undefined ? 20 : Number(topRaw);
  if (!Number.isInteger(top) || top < 0) throw new UsageError(`--top must be a whole number, not "${String(topRaw)}"`);
  const hosts: HostProfile[] = [];
  for (const file of files) hosts.push({ file, summary: await analyze(file) });
  const all = combineHosts(hosts);
  const ops = top === 0 ? all.ops : all.ops.slice(0, top);
  if (ctx.values.json) {
    ctx.out(JSON.stringify({
      device: all.device,
      steps: all.steps,
      ops: ops.map((o) => ({
        program: o.program, name: o.name, category: o.category, count: o.count,
        self_us: o.selfUs, total_us: o.totalUs, flops: o.flops, bytes: o.bytes, bound_by: o.boundBy || null,
      })),
      ...(hosts.length > 1 ? { hosts: all.hosts } : {}),
    }, null, 1));
    return 0;
  }
  const d = all.device;
  ctx.out(`${d.device_count} × ${d.device_type || d.hardware} on ${d.host_count} host${d.host_count === 1 ? '' : 's'}; devices busy ${d.busy_percent.toFixed(1)}% of their active time.`);
  if (hosts.length > 1) {
    ctx.out('');
    ctx.out(`${pad('HOST', 28)} ${lpad('STEPS', 5)} ${lpad('AVG STEP', 10)} ${lpad('IDLE', 6)}`);
    for (const h of all.hosts) ctx.out(`${pad(h.host, 28)} ${lpad(String(h.steps), 5)} ${lpad(h.avg_step_us ? us(h.avg_step_us) : '-', 10)} ${lpad(`${h.idle_percent.toFixed(1)}%`, 6)}`);
    if (all.slowest) ctx.out(`Slowest host: ${all.slowest}.`);
  }
  ctx.out('');
  if (all.steps.length) {
    const avg = all.steps.reduce((a, s) => a + s.total_us, 0) / all.steps.length;
    ctx.out(`${all.steps.length} steps (from ${STEP_SOURCE[all.step_source]}), average ${us(avg)}.`);
  } else {
    ctx.out(NO_STEPS_NOTE);
  }
  ctx.out('');
  if (!ops.length) {
    const planes = hosts.flatMap((h) => h.summary.planes).filter((p) => p.events > 0);
    const note = unattributedNote(sumUnattributed(hosts.map((h) => h.summary)), us);
    ctx.out(note || `No XLA ops ran on a device in ${files.length === 1 ? 'this capture' : 'these captures'}. It holds ${planes.length} planes with events: ${planes.slice(0, 8).map((p) => `${p.name} (${p.events})`).join(', ')}${planes.length > 8 ? ', …' : ''}.`);
    return 0;
  }
  ctx.out(`${pad('OP', 36)} ${pad('CATEGORY', 18)} ${lpad('COUNT', 7)} ${lpad('SELF', 11)} ${lpad('TOTAL', 11)} ${lpad('BOUND', 7)}`);
  for (const o of ops) {
    ctx.out(`${pad(o.name.length > 36 ? `${o.name.slice(0, 35)}…` : o.name, 36)} ${pad(o.category, 18)} ${lpad(String(o.count), 7)} ${lpad(us(o.selfUs), 11)} ${lpad(us(o.totalUs), 11)} ${lpad(o.boundBy || '-', 7)}`);
  }
  if (ops.length < all.ops.length) ctx.out(`… ${all.ops.length - ops.length} more (--top 0 shows all).`);
  const note = unattributedNote(sumUnattributed(hosts.map((h) => h.summary)), us);
  if (note) ctx.out(`\n${note}`);
  return 0;
}
