/**
 * The catalog generator (language-server/scripts/gen-xla-flags.mjs) on a small synthetic input written in the
 * shapes XLA's debug_options_flags.cc and xla.proto use: setter kinds → types, defaults from the defaults
 * function or the proto zero value, enums and repeated enums from the proto, help text never copied.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
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
    assert.equal(flags.length, 7);
    assert.deepEqual([by.get('xla_a_level')?.type, by.get('xla_a_level')?.default], ['int', 3]);
    assert.deepEqual([by.get('xla_b_enable_thing')?.type, by.get('xla_b_enable_thing')?.default], ['bool', true]);
    assert.deepEqual([by.get('xla_gpu_mode')?.type, by.get('xla_gpu_mode')?.values, by.get('xla_gpu_mode')?.default, by.get('xla_gpu_mode')?.platform], ['enum', ['MODE_SLOW', 'MODE_FAST'], 'MODE_FAST', 'gpu']);
    assert.deepEqual([by.get('xla_ratio')?.type, by.get('xla_ratio')?.default], ['float', 0.5]);
    assert.equal(by.get('xla_dump_to')?.type, 'string');
    assert.deepEqual([by.get('xla_kinds')?.type, by.get('xla_kinds')?.list, by.get('xla_kinds')?.values], ['string', true, ['A', 'B']], 'the enum prefix is dropped, as users write it');
    assert.equal(by.get('xla_off_by_default')?.default, false, 'unset in the defaults function: the proto zero value');
    for (const f of flags) {
      assert.equal(f.source, 'fixture');
      assert.ok(!/help|commas|copied/i.test(f.doc), `${f.name}: the help text is not copied (${f.doc})`);
    }
    assert.equal(by.get('xla_dump_to')?.doc, JSON.parse(fs.readFileSync(path.join(repoRoot, 'language-server/scripts/xla-flag-notes.json'), 'utf8')).xla_dump_to);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
