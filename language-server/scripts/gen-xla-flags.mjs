#!/usr/bin/env node
// Regenerates the generic part of the flag catalog (language-server/src/flags/xla-generic.json) from XLA's own
// sources at the revision pinned in xla-source.json. Facts (names, types, defaults, values) come from
// xla-flag-source.mjs; the one-line meaning is ours: xla-flag-notes.json for the flags people use most, else
// describeFlag()'s sentence built from the flag's name. XLA's help text is never copied.
//
//   node language-server/scripts/gen-xla-flags.mjs                      regenerate from the pinned sources (cached)
//   node language-server/scripts/gen-xla-flags.mjs --from-git MIRROR    first copy the pinned sources out of a git mirror
//   node language-server/scripts/gen-xla-flags.mjs --pin MIRROR [REV]   move the pin to REV (default HEAD) of a mirror
//   node language-server/scripts/gen-xla-flags.mjs CC PROTO [--source LABEL] [--out FILE]   any two files (tests)
//
// Add --out FILE to write elsewhere (the test compares a fresh run with the committed file this way).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeFlag } from './describe-flag.mjs';
import { readFlagFacts } from './xla-flag-source.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const PIN_FILE = path.join(here, 'xla-source.json');
const SOURCES = ['xla/debug_options_flags.cc', 'xla/xla.proto'];

/** Where the pinned sources are kept on this machine (outside the repository). */
export function sourceDir(commit) {
  const root = process.env.TPW_XLA_SOURCE_CACHE ?? path.join(os.homedir(), '.cache', 'tpu-workbench', 'xla-src');
  return path.join(root, commit);
}

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

function gitShow(mirror, rev, file) {
  return execFileSync('git', ['-C', mirror, 'show', `${rev}:${file}`], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** Copies the pinned files out of a git mirror into the cache, checking them against the pin. */
function cacheFromGit(mirror, pin) {
  for (const file of SOURCES) {
    const text = gitShow(mirror, pin.commit, file);
    if (sha256(text) !== pin.files[file]) throw new Error(`${file} at ${pin.commit} in ${mirror} does not match the pin's sha256`);
    const out = path.join(sourceDir(pin.commit), file);
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, text);
  }
}

/** Moves the pin to `rev` of a mirror: records commit, date and checksums, and fills the cache. */
function repin(mirror, rev) {
  const [commit, date] = execFileSync('git', ['-C', mirror, 'log', '-1', '--format=%H%n%cI', rev], { encoding: 'utf8' }).trim().split('\n');
  const old = JSON.parse(readFileSync(PIN_FILE, 'utf8'));
  const files = Object.fromEntries(SOURCES.map((f) => [f, sha256(gitShow(mirror, commit, f))]));
  const pin = { ...old, commit, date, files };
  writeFileSync(PIN_FILE, JSON.stringify(pin, null, 2) + '\n');
  cacheFromGit(mirror, pin);
  return pin;
}

/** Reads the pinned sources from the cache; a clear message when they are missing or not the pinned bytes. */
export function readPinnedSources(pin) {
  const texts = SOURCES.map((file) => {
    const at = path.join(sourceDir(pin.commit), file);
    if (!existsSync(at)) throw new Error(`${at} is missing: run gen-xla-flags.mjs --from-git MIRROR (a git mirror of ${pin.repo} holding ${pin.commit})`);
    const text = readFileSync(at, 'utf8');
    if (sha256(text) !== pin.files[file]) throw new Error(`${at} is not ${pin.repo}@${pin.commit}:${file} (sha256 differs)`);
    return text;
  });
  return { cc: texts[0], proto: texts[1] };
}

/** The catalog entries for a set of facts, in the shape src/flags/catalog.ts reads. */
export function catalogEntries(facts, label) {
  const notes = JSON.parse(readFileSync(path.join(here, 'xla-flag-notes.json'), 'utf8'));
  return facts.map((f) => {
    const entry = { name: f.name, type: f.type };
    if (f.list) entry.list = true;
    if (f.values) entry.values = f.values;
    if (f.default !== undefined) entry.default = f.default;
    entry.scope = 'xla';
    entry.platform = f.name.startsWith('xla_gpu_') ? 'gpu' : f.name.startsWith('xla_cpu_') ? 'cpu' : 'any';
    entry.doc = typeof notes[f.name] === 'string' ? notes[f.name] : describeFlag(f.name, f.type);
    entry.source = label;
    return entry;
  });
}

function main(argv) {
  const args = [...argv];
  const take = (flag) => {
    const at = args.indexOf(flag);
    return at >= 0 ? args.splice(at, 2)[1] : undefined;
  };
  const outArg = take('--out');
  const labelArg = take('--source');
  const fromGit = take('--from-git');
  const pinAt = args.indexOf('--pin');
  let cc;
  let proto;
  let label;
  if (pinAt >= 0 || fromGit || args.length === 0) {
    let pin = JSON.parse(readFileSync(PIN_FILE, 'utf8'));
    if (pinAt >= 0) {
      const [, mirror, rev = 'HEAD'] = args.splice(pinAt, 3);
      if (!mirror) throw new Error('--pin needs a git mirror of openxla/xla');
      pin = repin(mirror, rev);
    } else if (fromGit) cacheFromGit(fromGit, pin);
    ({ cc, proto } = readPinnedSources(pin));
    label = `${pin.repo}@${pin.commit.slice(0, 12)} (${pin.date.slice(0, 10)}) xla/debug_options_flags.cc + xla/xla.proto`;
  } else {
    const [ccFile, protoFile] = args;
    if (!ccFile || !protoFile) throw new Error('usage: gen-xla-flags.mjs [--from-git MIRROR | --pin MIRROR [REV] | CC PROTO] [--source LABEL] [--out FILE]');
    cc = readFileSync(ccFile, 'utf8');
    proto = readFileSync(protoFile, 'utf8');
    label = 'openxla/xla xla/debug_options_flags.cc + xla/xla.proto';
  }
  const flags = catalogEntries(readFlagFacts(cc, proto), labelArg ?? label);
  const outFile = outArg ? path.resolve(outArg) : path.join(here, '..', 'src', 'flags', 'xla-generic.json');
  writeFileSync(outFile, JSON.stringify(flags, null, 1) + '\n');
  const byType = flags.reduce((acc, f) => ({ ...acc, [f.type]: (acc[f.type] ?? 0) + 1 }), {});
  console.log(`wrote ${flags.length} flags to ${path.relative(process.cwd(), outFile)}`, byType);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(`gen-xla-flags: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
}
