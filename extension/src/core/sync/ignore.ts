/**
 * `.tpuignore`: gitignore syntax for "in git, but not for the TPU" (datasets, checkpoints, notebooks). Only the
 * workspace root's file is read. Supported: comments, blank lines, `!` negation (last match wins), a trailing
 * `/` (directories only), a leading or inner `/` (anchored to the root), `*`, `?`, `[...]` and `**`.
 * A pattern that matches a directory excludes everything below it, as in git.
 */

interface Rule {
  re: RegExp;
  negate: boolean;
  dirOnly: boolean;
}

function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` = any number of folders (zero included); a trailing `**` = everything below.
        if (glob[i + 2] === '/') {
          out += '(?:.*/)?';
          i += 2;
        } else {
          out += '.*';
          i += 1;
        }
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) out += '\\[';
      else {
        let set = glob.slice(i + 1, end);
        if (set.startsWith('!')) set = '^' + set.slice(1);
        out += `[${set.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < glob.length) {
      out += glob[++i].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return out;
}

export function parseIgnore(text: string): Rule[] {
  const rules: Rule[] = [];
  for (let line of text.split('\n')) {
    line = line.replace(/\r$/, '');
    if (line.trim() === '' || line.startsWith('#')) continue;
    line = line.replace(/(?<!\\)\s+$/, '');
    let negate = false;
    if (line.startsWith('!')) {
      negate = true;
      line = line.slice(1);
    } else if (line.startsWith('\\!') || line.startsWith('\\#')) line = line.slice(1);
    let dirOnly = false;
    if (line.endsWith('/')) {
      dirOnly = true;
      line = line.slice(0, -1);
    }
    if (line === '') continue;
    const anchored = line.includes('/');
    const body = globToRegex(line.replace(/^\//, ''));
    rules.push({ re: new RegExp(`^${anchored ? '' : '(?:.*/)?'}${body}$`), negate, dirOnly });
  }
  return rules;
}

/** True if `rel` (POSIX, relative to the root, a file) is excluded by the rules. */
export function isIgnored(rules: readonly Rule[], rel: string): boolean {
  if (rules.length === 0) return false;
  const parts = rel.split('/');
  // Directories first: git never looks inside an excluded directory, so a later `!file` cannot re-include it.
  for (let i = 1; i < parts.length; i++) {
    if (verdict(rules, parts.slice(0, i).join('/'), true)) return true;
  }
  return verdict(rules, rel, false);
}

function verdict(rules: readonly Rule[], p: string, isDir: boolean): boolean {
  let ignored = false;
  for (const r of rules) {
    if (r.dirOnly && !isDir) continue;
    if (r.re.test(p)) ignored = !r.negate;
  }
  return ignored;
}
