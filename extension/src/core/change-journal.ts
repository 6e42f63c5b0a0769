import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A note, in <TPW_HOME>/explorer/, that some process on this machine just created, deleted, started or stopped a
 * TPU VM or queued resource: `tpw vm delete` in a terminal tells the TPU VMs view in every open window at once,
 * as the run registry tells the Runs view about runs, instead of the view finding out at its next poll. Changes
 * made elsewhere (the Cloud console, another machine) still show on the view's own refreshes.
 */

const FILE = 'last-change.json';

export interface ChangeNote {
  /** What was called (e.g. "deleteNode"). */
  what: string;
  pid: number;
  at: string;
}

export function changeJournalDir(home: string): string {
  return path.join(home, 'explorer');
}

/** Writes the note (atomically: a watcher never reads half of it). Never throws: a note is a courtesy. */
export function recordChange(home: string, what: string): void {
  try {
    const dir = changeJournalDir(home);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${FILE}.${process.pid}`);
    const note: ChangeNote = { what, pid: process.pid, at: new Date().toISOString() };
    fs.writeFileSync(tmp, JSON.stringify(note), { mode: 0o600 });
    fs.renameSync(tmp, path.join(dir, FILE));
  } catch {
    // a read-only or full TPW_HOME must not fail the operation itself
  }
}

export function readChange(home: string): ChangeNote | undefined {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(changeJournalDir(home), FILE), 'utf8')) as Partial<ChangeNote>;
    return typeof v.what === 'string' && typeof v.pid === 'number' && typeof v.at === 'string' ? (v as ChangeNote) : undefined;
  } catch {
    return undefined;
  }
}

/** Methods of the TPU and Compute Engine clients that change what the explorer shows. */
const CHANGES = /^(create|delete|start|stop)[A-Z]/;

/**
 * `target` with every changing method wrapped to note the change when it is called (the resource usually exists,
 * in a transitional state, by the time a watcher lists) and when it settles, whether it succeeded or not.
 */
export function journaled<T extends object>(target: T, note: (what: string) => void): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string' || !CHANGES.test(prop)) return v;
      const fn = v as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => {
        note(prop);
        const r = fn.apply(t, args);
        void Promise.resolve(r).then(() => note(prop), () => note(prop));
        return r;
      };
    },
  });
}

export interface ChangeWatch {
  close(): void;
}

/**
 * Calls `onChange` when another process notes a change (its own notes are skipped: the caller refreshes after its
 * own operations already). Several notes in a burst give one call.
 */
export function watchChanges(home: string, onChange: (note: ChangeNote) => void, debounceMs = 150): ChangeWatch {
  const dir = changeJournalDir(home);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  let timer: NodeJS.Timeout | undefined;
  const watcher = fs.watch(dir, (_event, name) => {
    if (name !== FILE) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const note = readChange(home);
      if (note && note.pid !== process.pid) onChange(note);
    }, debounceMs);
  });
  watcher.on('error', () => undefined);
  return {
    close: () => {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
