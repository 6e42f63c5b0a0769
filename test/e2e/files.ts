import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Files under `dir` whose base name `match` accepts. Links to folders are not followed (no loops), and folders
 * that cannot be read are passed over (code-server's log folders come and go while it runs).
 */
export function findFiles(dir: string, match: (name: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (match(e.name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}
