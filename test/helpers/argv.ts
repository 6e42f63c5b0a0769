import * as fs from 'node:fs';

/**
 * The processes on this machine whose argv (/proc/<pid>/cmdline) holds any of `needles`, as `pid: argv` lines:
 * secrets must reach a remote program through a file or stdin, never its command line, where every user of the
 * machine can read them.
 */
export function argvHolding(...needles: string[]): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let cmdline = '';
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    } catch {
      continue; // exited while we looked
    }
    if (needles.some((n) => cmdline.includes(n))) found.push(`${pid}: ${cmdline.replace(/\0/g, ' ')}`);
  }
  return found;
}
