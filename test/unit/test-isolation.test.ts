/**
 * Test files run side by side (scripts/test-suite.sh), so none may put emulated workers or sshd on loopback
 * addresses another file could use at the same time: each takes its addresses from testAddressPrefix
 * (test/helpers/loopback.ts), which hands every test process a second octet of its own. This finds the literal
 * 127.0.N prefixes and 127.0.N.M addresses (N ≥ 1) that would share 127.0.*.* with other files and the demo.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { testAddressPrefix } from '../helpers/loopback';

const ROOT = path.resolve(__dirname, '..');
// known-hosts.test.ts only formats and matches host strings; nothing listens on them.
const PURE_STRINGS = new Set(['unit/known-hosts.test.ts', 'unit/test-isolation.test.ts']);

function testSources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : testSources(p);
    return /\.(test|e2e)\.ts$|^[a-z-]+\.ts$/.test(e.name) ? [p] : [];
  });
}

test('no test file listens on a fixed 127.0.N address that another could use at the same time', () => {
  const offenders: string[] = [];
  for (const file of testSources(ROOT)) {
    const rel = path.relative(ROOT, file);
    if (PURE_STRINGS.has(rel) || rel === 'helpers/loopback.ts') continue;
    fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      if (/['"`[]127\.0\.[1-9]\d*(\.\d*)?['"`\]]/.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, [], 'use testAddressPrefix(N) from test/helpers/loopback.ts');
});

test('testAddressPrefix gives this process a second octet of its own, outside 127.0.*', () => {
  const a = testAddressPrefix(14);
  assert.match(a, /^127\.(\d+)\.14$/);
  const octet = Number(a.split('.')[1]);
  assert.ok(octet >= 20 && octet <= 250, a);
  assert.equal(testAddressPrefix(3), `127.${octet}.3`, 'one octet per process');
  assert.throws(() => testAddressPrefix(0), /not 1–254/);
});
