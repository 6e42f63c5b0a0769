import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import type { Priority, WorkloadInputs } from '../../extension/src/core/gke/manifest';
import { gkeTpuType } from '../../extension/src/core/gke/tpu-types';

/**
 * xpk 1.16.0's own manifests (test/fixtures/gke/xpk/render.sh made them): each case's xpk arguments, read back as
 * our renderer's inputs, and xpk's YAML parsed.
 */
export const XPK_DIR = path.join(__dirname, '../fixtures/gke/xpk');

export interface XpkCase {
  name: string;
  args: string[];
  inputs: WorkloadInputs;
  manifest: Record<string, unknown>;
}

export function xpkCases(): XpkCase[] {
  return fs
    .readdirSync(XPK_DIR)
    .filter((f) => f.endsWith('.args'))
    .sort()
    .map((f) => {
      const name = f.slice(0, -'.args'.length);
      const args = fs.readFileSync(path.join(XPK_DIR, f), 'utf8').replace(/\n$/, '').split('\n');
      return { name, args, inputs: inputsOf(args), manifest: parse(fs.readFileSync(path.join(XPK_DIR, `${name}.yaml`), 'utf8')) as Record<string, unknown> };
    });
}

/** The xpk flags render.sh uses, as WorkloadInputs. */
function inputsOf(args: string[]): WorkloadInputs {
  const v = new Map<string, string[]>();
  let debug = false;
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === '--enable-debug-logs') {
      debug = true;
      continue;
    }
    v.set(flag, [...(v.get(flag) ?? []), args[++i]]);
  }
  const one = (flag: string): string | undefined => v.get(flag)?.[0];
  return {
    workload: one('--workload')!,
    tpu: gkeTpuType(one('--tpu-type')!),
    numSlices: Number(one('--num-slices') ?? 1),
    image: one('--docker-image')!,
    command: one('--command')!,
    env: (v.get('--env') ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as const),
    ...(one('--priority') ? { priority: one('--priority') as Priority } : {}),
    ...(one('--max-restarts') ? { maxRestarts: Number(one('--max-restarts')) } : {}),
    ...(one('--ttl-seconds-after-finished') ? { ttlSecondsAfterFinished: Number(one('--ttl-seconds-after-finished')) } : {}),
    ...(one('--restart-on-exit-codes') ? { restartOnExitCodes: one('--restart-on-exit-codes')!.split(',').map(Number) } : {}),
    ...(debug ? { enableDebugLogs: true } : {}),
  };
}

/** Every path where `a` and `b` differ (`spec.replicatedJobs[0].replicas: 2 != 1`), for field-by-field asserts. */
export function diffPaths(a: unknown, b: unknown, at = ''): string[] {
  if (Array.isArray(a) && Array.isArray(b)) {
    const out: string[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) out.push(...diffPaths(a[i], b[i], `${at}[${i}]`));
    return out;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((k) => diffPaths(a[k], b[k], at ? `${at}.${k}` : k));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${at}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
