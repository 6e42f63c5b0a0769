import * as path from 'node:path';

/**
 * What VS Code does with a `contributes.problemMatchers` entry over a task's output, for the matchers
 * package.json declares for `tpu` tasks (`$tpu-*`): lines are matched one at a time; a multi-line matcher's
 * patterns must match consecutive lines, and a line that breaks the sequence is tried again as its first line.
 * Kept to the properties those matchers use, so a test can hold the real regexes against real trainer output.
 */

export interface ProblemPattern {
  regexp: string;
  file?: number;
  line?: number;
  column?: number;
  message?: number;
  severity?: number;
}

export interface ProblemMatcherContribution {
  name: string;
  owner: string;
  source?: string;
  severity?: 'error' | 'warning' | 'info';
  fileLocation?: string | [string, string?];
  pattern: ProblemPattern | ProblemPattern[];
}

export interface MatchedProblem {
  matcher: string;
  file: string;
  line: number;
  message: string;
  severity: 'error' | 'warning' | 'info';
}

/** `${workspaceFolder}` stands for `workspaceRoot`; a relative file is resolved against the location's folder. */
function resolveFile(m: ProblemMatcherContribution, file: string, workspaceRoot: string): string {
  const loc = Array.isArray(m.fileLocation) ? m.fileLocation : [m.fileLocation ?? 'relative', '${workspaceFolder}'];
  if (loc[0] === 'absolute' || path.isAbsolute(file)) return file;
  const base = (loc[1] ?? '${workspaceFolder}').replace('${workspaceFolder}', workspaceRoot);
  return path.join(base, file);
}

export function matchProblems(lines: readonly string[], matchers: readonly ProblemMatcherContribution[], workspaceRoot: string): MatchedProblem[] {
  const out: MatchedProblem[] = [];
  for (const m of matchers) {
    const patterns = (Array.isArray(m.pattern) ? m.pattern : [m.pattern]).map((p) => ({ ...p, re: new RegExp(p.regexp) }));
    let step = 0;
    let data: Partial<Record<'file' | 'line' | 'message', string>> = {};
    for (const text of lines) {
      for (;;) {
        const p = patterns[step];
        const hit = p.re.exec(text);
        if (!hit) {
          if (step === 0) break;
          step = 0; // the sequence broke: this line may start a new one
          data = {};
          continue;
        }
        if (p.file !== undefined) data.file = hit[p.file];
        if (p.line !== undefined) data.line = hit[p.line];
        if (p.message !== undefined) data.message = hit[p.message];
        step++;
        if (step === patterns.length) {
          if (data.file !== undefined && data.message !== undefined) {
            out.push({ matcher: m.name, file: resolveFile(m, data.file, workspaceRoot), line: Number(data.line ?? 1), message: data.message, severity: m.severity ?? 'error' });
          }
          step = 0;
          data = {};
        }
        break;
      }
    }
  }
  return out;
}
