import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isIgnored, parseIgnore } from './ignore';

/** Folders never worth sending to a TPU VM, even outside a git repository. */
const ALWAYS_SKIPPED = new Set(['.git', 'node_modules', '.venv', 'venv', '__pycache__', '.pytest_cache', 'dist', 'out', 'outputs', '.tpw', '.tpw-sync', 'test-artifacts']);

export interface WorkspaceFile {
  /** POSIX path relative to the workspace root. */
  rel: string;
  abs: string;
  size: number;
  mtimeMs: number;
  mode: number;
}

export interface WorkspaceListing {
  files: WorkspaceFile[];
  /** Paths left out because they point outside the workspace (symlinks) or are not regular files. */
  skipped: string[];
}

/**
 * Lists what to sync. In a git work tree this is `git ls-files` (tracked + untracked, minus .gitignore), so
 * the user's ignore rules hold; elsewhere a walk that skips the usual heavy folders. Nothing outside the root
 * is ever listed: symlinks that leave it are reported in `skipped`. A root `.tpuignore` (gitignore syntax)
 * leaves out more, tracked files included.
 */
export function listWorkspaceFiles(root: string): WorkspaceListing {
  const absRoot = fs.realpathSync(root);
  const rels = gitListing(absRoot) ?? walk(absRoot);
  let tpuIgnore = '';
  try {
    tpuIgnore = fs.readFileSync(path.join(absRoot, '.tpuignore'), 'utf8');
  } catch {
    // no .tpuignore: only .gitignore applies
  }
  const rules = parseIgnore(tpuIgnore);
  const files: WorkspaceFile[] = [];
  const skipped: string[] = [];
  for (const rel of rels) {
    if (rel.split('/').some((seg) => ALWAYS_SKIPPED.has(seg))) continue;
    if (isIgnored(rules, rel)) continue;
    const abs = path.join(absRoot, rel);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch {
      continue; // deleted since git listed it
    }
    if (st.isSymbolicLink()) {
      let real: string;
      try {
        real = fs.realpathSync(abs);
      } catch {
        skipped.push(rel);
        continue;
      }
      if (real !== absRoot && !real.startsWith(absRoot + path.sep)) {
        skipped.push(rel);
        continue;
      }
      st = fs.statSync(abs);
    }
    if (!st.isFile()) {
      if (!st.isDirectory()) skipped.push(rel);
      continue;
    }
    files.push({ rel, abs, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode & 0o777 });
  }
  files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { files, skipped };
}

function gitListing(root: string): string[] | undefined {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 256 * 1024 * 1024,
    });
    return out.toString('utf8').split('\0').filter((s) => s.length > 0);
  } catch {
    return undefined;
  }
}

function walk(root: string): string[] {
  const out: string[] = [];
  const visit = (dir: string, prefix: string): void => {
    for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
      if (ALWAYS_SKIPPED.has(ent.name)) continue;
      const rel = prefix ? `${prefix}/${ent.name}` : ent.name;
      if (ent.isDirectory()) visit(path.join(dir, ent.name), rel);
      else out.push(rel);
    }
  };
  visit(root, '');
  return out;
}

/**
 * What a sync says about the paths it leaves out (a symlink out of the workspace, a socket, a broken link), so
 * that a program missing one of them on the workers is not a surprise; undefined when there are none.
 */
export function skippedNotice(listing: WorkspaceListing, root: string): string | undefined {
  const n = listing.skipped.length;
  if (n === 0) return undefined;
  const shown = listing.skipped.slice(0, 5).join(', ');
  return `Not synced from ${root}: ${n} path${n === 1 ? '' : 's'} that lead${n === 1 ? 's' : ''} outside it (symlinks) or ${n === 1 ? 'is' : 'are'} not a regular file: ${shown}${n > 5 ? `, and ${n - 5} more` : ''}.`;
}
