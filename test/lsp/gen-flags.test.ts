/**
 * The catalog generator (language-server/scripts/gen-xla-flags.mjs): on a small synthetic input written in the
 * shapes XLA's debug_options_flags.cc and xla.proto use (setter kinds → types, defaults from the defaults
 * function or the proto zero value, enums and repeated enums from the proto, spellings a hand-written parser
 * compares against, help text never copied); and on the pinned XLA revision itself: a fresh run reproduces the
 * committed xla-generic.json byte for byte, and every flag name the source defines is in the catalog.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { FLAGS } from '../../language-server/src/flags/catalog';
import generic from '../../language-server/src/flags/xla-generic.json';
import { repoRoot } from './harness';

const CC = `
DebugOptions DefaultDebugOptionsIgnoringFlags() {
  DebugOptions opts;
  opts.set_xla_a_level(3);
  opts.set_xla_b_enable_thing(true);
  opts.set_xla_gpu_mode(DebugOptions::MODE_FAST);
  opts.set_xla_ratio(0.5f);
  return opts;
}
void MakeDebugOptionsFlags(std::vector<tsl::Flag>* flag_list, DebugOptions* debug_options) {
  auto setter_for_xla_gpu_mode = [debug_options](const std::string& value) {
    DebugOptions::Mode mode;
    if (!DebugOptions::Mode_Parse(value, &mode)) return false;
    debug_options->set_xla_gpu_mode(mode);
    return true;
  };
  auto detection = [](const std::string& value) -> std::optional<DebugOptions::Detection> {
    if (value == "none") return DebugOptions::DETECTION_NONE;
    if (value == "fail") return DebugOptions::DETECTION_FAIL;
    return std::nullopt;
  };
  auto setter_for_xla_detect = [debug_options, detection](const std::string& value) {
    if (auto mode = detection(value)) { debug_options->set_xla_detect(*mode); return true; }
    return false;
  };
  auto mode_setter_for = [debug_options](void (DebugOptions::*member_setter)(DebugOptions::Pipeline)) {
    return [debug_options, member_setter](absl::string_view value) {
      std::string lower = absl::AsciiStrToLower(value);
      if (lower == "off") { (debug_options->*member_setter)(DebugOptions::PIPELINE_OFF); return true; }
      if (lower == "on") { (debug_options->*member_setter)(DebugOptions::PIPELINE_ON); return true; }
      return false;
    };
  };
  flag_list->push_back(tsl::Flag("xla_a_level", int32_setter_for(&DebugOptions::set_xla_a_level), debug_options->xla_a_level(), "Some (help) text, with commas."));
  flag_list->push_back(tsl::Flag(
      "xla_b_enable_thing",
      bool_setter_for(&DebugOptions::set_xla_b_enable_thing),
      debug_options->xla_b_enable_thing(), "Help text that must not be copied."));
  flag_list->push_back(tsl::Flag("xla_gpu_mode", setter_for_xla_gpu_mode, "MODE_FAST", "help"));
  flag_list->push_back(tsl::Flag("xla_ratio", float_setter_for(&DebugOptions::set_xla_ratio), debug_options->xla_ratio(), "help"));
  flag_list->push_back(tsl::Flag("xla_dump_to", string_setter_for(&DebugOptions::set_xla_dump_to), debug_options->xla_dump_to(), "help"));
  flag_list->push_back(tsl::Flag("xla_kinds", SetterForRepeatedEnum<DebugOptions::Kind>("xla_kinds", /*enum_prefix=*/"KIND_", &DebugOptions::Kind_Parse, debug_options->mutable_xla_kinds()), "", "help"));
  flag_list->push_back(tsl::Flag("xla_off_by_default", bool_setter_for(&DebugOptions::set_xla_off_by_default), debug_options->xla_off_by_default(), "help"));
  flag_list->push_back(tsl::Flag("xla_gone", noop_flag_setter<bool>, false, "[Deprecated]"));
  flag_list->push_back(tsl::Flag(
      "xla_inline_int",
      [debug_options](int64_t value) {
        debug_options->set_xla_inline_int(value);
        return true;
      },
      /*default_value_for_display=*/7, "help"));
  flag_list->push_back(tsl::Flag("xla_detect", setter_for_xla_detect, DebugOptions::Detection_Name(debug_options->xla_detect()), "help"));
  flag_list->push_back(tsl::Flag("xla_pipeline", mode_setter_for(&DebugOptions::set_xla_pipeline), absl::StrCat(debug_options->xla_pipeline()), "help"));
  flag_list->push_back(tsl::Flag("xla_filter", string_setter_for(&DebugOptions::set_xla_filter), "(none)", "help"));
}`;
const PROTO = `
message DebugOptions {
  enum Mode { MODE_SLOW = 0; MODE_FAST = 1; }
  enum Kind { KIND_A = 0; KIND_B = 1; }
  int32 xla_a_level = 1;
  bool xla_b_enable_thing = 2;
  Mode xla_gpu_mode = 3;
  repeated Kind xla_kinds = 4;
  bool xla_off_by_default = 5;
  enum Detection { DETECTION_NONE = 0; DETECTION_FAIL = 1; }
  optional Detection xla_detect = 6;
  enum Pipeline { PIPELINE_OFF = 0; PIPELINE_ON = 1; }
  optional Pipeline xla_pipeline = 7;
  optional int64 xla_inline_int = 8;
}`;

test('gen-xla-flags.mjs: types, defaults, enums, lists; meanings in our words', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gen-'));
  try {
    fs.writeFileSync(path.join(dir, 'flags.cc'), CC);
    fs.writeFileSync(path.join(dir, 'xla.proto'), PROTO);
    const out = path.join(dir, 'out.json');
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'language-server/scripts/gen-xla-flags.mjs'), path.join(dir, 'flags.cc'), path.join(dir, 'xla.proto'), '--out', out, '--source', 'fixture'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const flags = JSON.parse(fs.readFileSync(out, 'utf8')) as { name: string; type: string; default?: unknown; values?: string[]; list?: boolean; platform: string; doc: string; source: string }[];
    const by = new Map(flags.map((f) => [f.name, f]));
    assert.equal(flags.length, 12);
    assert.deepEqual([by.get('xla_a_level')?.type, by.get('xla_a_level')?.default], ['int', 3]);
    assert.deepEqual([by.get('xla_b_enable_thing')?.type, by.get('xla_b_enable_thing')?.default], ['bool', true]);
    assert.deepEqual([by.get('xla_gpu_mode')?.type, by.get('xla_gpu_mode')?.values, by.get('xla_gpu_mode')?.default, by.get('xla_gpu_mode')?.platform], ['enum', ['MODE_SLOW', 'MODE_FAST'], 'MODE_FAST', 'gpu']);
    assert.deepEqual([by.get('xla_ratio')?.type, by.get('xla_ratio')?.default], ['float', 0.5]);
    assert.equal(by.get('xla_dump_to')?.type, 'string');
    assert.deepEqual([by.get('xla_kinds')?.type, by.get('xla_kinds')?.list, by.get('xla_kinds')?.values], ['string', true, ['A', 'B']], 'the enum prefix is dropped, as users write it');
    assert.equal(by.get('xla_off_by_default')?.default, false, 'unset in the defaults function: the proto zero value');
    assert.deepEqual([by.get('xla_gone')?.type, by.get('xla_gone')?.default], ['bool', false], 'a no-op setter keeps its declared type');
    assert.deepEqual([by.get('xla_inline_int')?.type, by.get('xla_inline_int')?.default], ['int', 7], 'an inline lambda: its parameter type; a commented default');
    assert.deepEqual([by.get('xla_detect')?.type, by.get('xla_detect')?.values, by.get('xla_detect')?.default], ['enum', ['none', 'fail'], 'none'], 'the spellings a helper parser compares against; the zero value in that spelling');
    assert.deepEqual([by.get('xla_pipeline')?.type, by.get('xla_pipeline')?.values], ['enum', ['off', 'on']], 'a parser factory applied to a field');
    assert.equal(by.get('xla_filter')?.default, undefined, 'a bracketed display placeholder is not a default');
    for (const f of flags) {
      assert.equal(f.source, 'fixture');
      assert.ok(!/help|commas|copied/i.test(f.doc), `${f.name}: the help text is not copied (${f.doc})`);
    }
    assert.equal(by.get('xla_dump_to')?.doc, JSON.parse(fs.readFileSync(path.join(repoRoot, 'language-server/scripts/xla-flag-notes.json'), 'utf8')).xla_dump_to);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

interface Pin {
  repo: string;
  commit: string;
  date: string;
  files: Record<string, string>;
}
const pin = JSON.parse(fs.readFileSync(path.join(repoRoot, 'language-server/scripts/xla-source.json'), 'utf8')) as Pin;
const pinnedDir = path.join(process.env.TPW_XLA_SOURCE_CACHE ?? path.join(os.homedir(), '.cache', 'tpu-workbench', 'xla-src'), pin.commit);
const pinnedCc = path.join(pinnedDir, 'xla/debug_options_flags.cc');
// The XLA sources are inputs kept outside the repository (gen-xla-flags.mjs --from-git MIRROR fills the cache).
const noSource = fs.existsSync(pinnedCc) ? false : `the pinned XLA sources are not cached at ${pinnedDir}`;

test('the pin names a full commit, its date and a checksum for each source file', () => {
  assert.equal(pin.repo, 'openxla/xla');
  assert.match(pin.commit, /^[0-9a-f]{40}$/);
  assert.ok(!Number.isNaN(Date.parse(pin.date)), pin.date);
  assert.deepEqual(Object.keys(pin.files).sort(), ['xla/debug_options_flags.cc', 'xla/xla.proto']);
  for (const sum of Object.values(pin.files)) assert.match(sum, /^[0-9a-f]{64}$/);
});

test('regenerating from the pinned XLA revision reproduces the committed xla-generic.json', { skip: noSource }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gen-'));
  try {
    const out = path.join(dir, 'xla-generic.json');
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'language-server/scripts/gen-xla-flags.mjs'), '--out', out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const committed = fs.readFileSync(path.join(repoRoot, 'language-server/src/flags/xla-generic.json'), 'utf8');
    assert.ok(fs.readFileSync(out, 'utf8') === committed, 'xla-generic.json differs from a fresh run: regenerate it with gen-xla-flags.mjs, never edit it by hand');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('every flag name the pinned debug_options_flags.cc defines is in the catalog; xla-generic.json holds only those', { skip: noSource }, () => {
  const cc = fs.readFileSync(pinnedCc, 'utf8');
  // Counted independently of the generator: the quoted name right after each `tsl::Flag(`.
  const defined = new Set([...cc.matchAll(/tsl::Flag\(\s*"([^"]+)"/g)].map((m) => m[1]));
  assert.equal([...cc.matchAll(/tsl::Flag\(/g)].length, defined.size, 'every registration has a literal, unique name');
  assert.ok(defined.size > 300, `a real debug_options_flags.cc defines hundreds of flags (got ${defined.size})`);
  const catalogued = new Set(FLAGS.map((f) => f.name));
  const missing = [...defined].filter((n) => !catalogued.has(n));
  assert.deepEqual(missing, [], 'flags the source defines but the catalog lacks');
  assert.deepEqual(generic.map((f) => f.name).filter((n) => !defined.has(n)), [], 'xla-generic.json entries the pinned source does not define');
  for (const f of generic) assert.ok(f.source.includes(pin.commit.slice(0, 12)), `${f.name}: its source names the pinned commit`);
});
