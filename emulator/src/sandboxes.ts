import * as fs from 'node:fs';
import * as path from 'node:path';
import { lastSegment, tpuNodeKey } from './names';

/**
 * The workers' sandboxes (`<dir>/workers/<key>/w<i>`, names.ts) that the state does not know, after
 * `--reset-state` or a state restored from before their VM was made: they hold someone's runs and checkpoints, so
 * they are moved to `workers-orphaned/`, never deleted. A Cloud TPU node's sandbox from before keys held the
 * zone (`workers/<node>`) is first moved to its key.
 */
export function setOrphanSandboxesAside(dir: string, nodeNames: string[], instanceKeys: string[], log: (msg: string) => void): void {
  const root = path.join(dir, 'workers');
  for (const name of nodeNames) {
    const before = path.join(root, lastSegment(name));
    const now = path.join(root, tpuNodeKey(name));
    if (fs.existsSync(before) && !fs.existsSync(now)) {
      fs.mkdirSync(path.dirname(now), { recursive: true, mode: 0o700 });
      fs.renameSync(before, now);
    }
  }
  const keys = [...nodeNames.map(tpuNodeKey), ...instanceKeys];
  const aside = path.join(dir, 'workers-orphaned');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  // Down the tree: a folder that is a key is kept, one on the way to keys is walked, anything else is an orphan.
  const walk = (rel: string) => {
    let entries: string[];
    try {
      entries = fs.readdirSync(path.join(root, rel));
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e}` : e;
      if (keys.includes(r)) continue;
      // tpu/<project>/<zone>/<name>, compute/<project>/<zone>/<name>: walked down to a VM's own folder, so an
      // orphan is one VM's sandbox under its own name.
      const depth = r.split('/').length;
      if (keys.some((k) => k.startsWith(`${r}/`)) || (/^(tpu|compute)(\/|$)/.test(r) && depth < 4)) {
        walk(r);
        continue;
      }
      // What a deleted VM's sandbox leaves: the folders it was in, empty.
      if (isEmptyTree(path.join(root, r))) {
        fs.rmSync(path.join(root, r), { recursive: true, force: true });
        continue;
      }
      fs.mkdirSync(aside, { recursive: true, mode: 0o700 });
      const to = path.join(aside, `${r.replace(/\//g, '_')}-${stamp}`);
      fs.renameSync(path.join(root, r), to);
      log(`the state has no node "${r}": its sandbox is kept in ${to}`);
    }
  };
  walk('');
}

function isEmptyTree(dir: string): boolean {
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return false;
  return fs.readdirSync(dir).every((e) => isEmptyTree(path.join(dir, e)));
}
