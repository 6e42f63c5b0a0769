#!/usr/bin/env node
// Regenerates language-server/src/flags/xla-removed.json from XLA's git history: every flag that
// xla/debug_options_flags.cc once registered and no longer registers at the pinned revision (xla-source.json), with
// the commit that removed it and, where XLA moved it, the flag to use instead; and the DebugOptions fields of
// xla/xla.proto that were never flags (XLA_FLAGS refuses them, though recipes write them), with the commit that
// added the field. Replacements come from the history (the one flag the removing commit added, when the commit
// says it renamed or replaced it, followed through later removals to a flag the pin has), or, where the history
// alone cannot say, from xla-removed-notes.json (our words, each checked against the commit). XLA's help text is
// never copied.
//
//   node language-server/scripts/gen-xla-removed.mjs MIRROR     a git clone of openxla/xla holding the pinned commit
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const PIN = JSON.parse(readFileSync(path.join(here, 'xla-source.json'), 'utf8'));
const NOTES = JSON.parse(readFileSync(path.join(here, 'xla-removed-notes.json'), 'utf8'));
const OUT = path.join(here, '..', 'src', 'flags', 'xla-removed.json');
const FLAGS_FILE = 'xla/debug_options_flags.cc';
const PROTO_FILE = 'xla/xla.proto';
// How debug_options_flags.cc registers a flag: tsl::Flag("xla_name", ...) (tensorflow::Flag before the move);
// at the pin this finds exactly the flags gen-xla-flags.mjs catalogs (test/lsp/flags.test.ts checks that).
const REGISTERED = /Flag\(\s*"(xla_[a-z0-9_]+)"/g;
const RENAMING = /renam|replac|consolidat|unif|instead|in favou?r|\buse\b|change|migrat/i;

const git = (mirror, args) => execFileSync('git', ['-C', mirror, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });

function registered(mirror, commit) {
  try {
    return new Set([...git(mirror, ['show', `${commit}:${FLAGS_FILE}`]).matchAll(REGISTERED)].map((m) => m[1]));
  } catch {
    return new Set();
  }
}

/** Similarity of two flag names in [0, 1]: shared words (split on `_`) over all words. */
function likeness(a, b) {
  const wa = new Set(a.split('_'));
  const wb = new Set(b.split('_'));
  const shared = [...wa].filter((w) => wb.has(w)).length;
  return shared / new Set([...wa, ...wb]).size;
}

/** The DebugOptions message's own fields (not those of its nested messages and enums): name → number. */
function debugOptionFields(proto) {
  const start = proto.indexOf('message DebugOptions {');
  const out = new Map();
  let depth = 0;
  for (const line of proto.slice(start).split('\n')) {
    const opens = (line.match(/{/g) ?? []).length;
    const closes = (line.match(/}/g) ?? []).length;
    const m = depth === 1 ? /^\s*(?:optional\s+|repeated\s+)?[\w.]+\s+(xla_\w+)\s*=\s*(\d+)/.exec(line) : null;
    if (m) out.set(m[1], Number(m[2]));
    depth += opens - closes;
    if (depth === 0 && opens + closes > 0) break;
  }
  return out;
}

function main(mirror) {
  if (!mirror) throw new Error('usage: gen-xla-removed.mjs MIRROR (a git clone of openxla/xla holding the pinned commit)');
  const log = git(mirror, ['log', '--reverse', '--format=%H%x09%cI%x09%s', PIN.commit, '--', FLAGS_FILE])
    .trim()
    .split('\n')
    .map((l) => l.split('\t'));
  let prev = new Set();
  const removed = new Map();
  for (const [commit, date, subject] of log) {
    const cur = registered(mirror, commit);
    const added = [...cur].filter((f) => !prev.has(f));
    for (const f of added) removed.delete(f);
    for (const f of prev) if (!cur.has(f)) removed.set(f, { commit, date, subject, added });
    prev = cur;
  }
  const atPin = prev;
  const fields = debugOptionFields(git(mirror, ['show', `${PIN.commit}:${PROTO_FILE}`]));

  // The flag the removing commit added in its place, when the commit renamed or replaced it.
  const movedTo = (name, r) => {
    const best = r.added.map((a) => [a, likeness(name, a)]).sort((x, y) => y[1] - x[1])[0];
    if (!best) return undefined;
    if (r.added.length === 1 && (RENAMING.test(r.subject) || best[1] >= 0.5)) return best[0];
    // Several flags added at once: a rename shows in the names (xla_gpu_cuda_graph_level -> xla_gpu_graph_level).
    return best[1] >= (RENAMING.test(r.subject) ? 0.6 : 0.75) ? best[0] : undefined;
  };
  const replacementOf = (name, seen = new Set()) => {
    if (seen.has(name)) return undefined;
    seen.add(name);
    const note = NOTES[name];
    const r = removed.get(name);
    const next = note && 'replacement' in note ? (note.replacement ?? undefined) : r && movedTo(name, r);
    if (!next) return undefined;
    return atPin.has(next) ? next : replacementOf(next, seen);
  };

  const out = { removed: {}, notFlags: {} };
  for (const [name, r] of [...removed].sort(([a], [b]) => a.localeCompare(b))) {
    const entry = { commit: r.commit.slice(0, 12), date: r.date.slice(0, 10) };
    const use = replacementOf(name);
    if (use) entry.replacement = use;
    if (NOTES[name]?.value !== undefined) entry.value = NOTES[name].value;
    if (NOTES[name]?.note) entry.note = NOTES[name].note;
    if (fields.has(name)) entry.stillAField = true;
    out.removed[name] = entry;
  }
  for (const [name, number] of [...fields].sort(([a], [b]) => a.localeCompare(b))) {
    if (atPin.has(name) || removed.has(name)) continue;
    // The last commit that changed how often the field's declaration appears is the one that (re)added it.
    const [commit, date] = git(mirror, ['log', '-1', '--format=%H%x09%cI', `-S${name} =`, PIN.commit, '--', PROTO_FILE]).trim().split('\t');
    const entry = { field: number, commit: commit.slice(0, 12), date: date.slice(0, 10) };
    if (NOTES[name]?.note) entry.note = NOTES[name].note;
    if (NOTES[name]?.replacement) entry.replacement = NOTES[name].replacement;
    out.notFlags[name] = entry;
  }
  const doc = {
    _comment: `Generated by language-server/scripts/gen-xla-removed.mjs from the history of ${PIN.repo} up to the pin (xla-source.json); notes in our words from xla-removed-notes.json.`,
    repo: PIN.repo,
    pin: PIN.commit,
    ...out,
  };
  writeFileSync(OUT, JSON.stringify(doc, null, 1) + '\n');
  console.log(`wrote ${Object.keys(out.removed).length} removed flags and ${Object.keys(out.notFlags).length} fields that are no flags to ${path.relative(process.cwd(), OUT)}`);
}

try {
  main(process.argv[2]);
} catch (e) {
  console.error(`gen-xla-removed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(2);
}
