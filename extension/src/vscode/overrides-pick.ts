/**
 * The input of "Run on TPU with Overrides…": a QuickPick where the user types hydra overrides. The language
 * server completes the last token and checks every token with the same code as overrides in recipes, so the
 * messages (did-you-mean) are the ones a recipe would show; a line with an error cannot be run.
 */
import * as vscode from 'vscode';
import type { CompleteOverridesResult, OverrideLineItem } from '../../../protocol/language-server-requests';
import type { LanguageService } from './language-client';

const TITLE = 'Run on TPU with Overrides';

interface Item extends vscode.QuickPickItem {
  /** A completion: the line it makes. Absent for the run and error rows. */
  completion?: OverrideLineItem;
  run?: boolean;
}

/** The fragment of the last token that completion replaces: the value after `=`, else the key without +/~. */
function fragment(line: string): string {
  if (/\s$/.test(line)) return '';
  const token = line.split(/\s+/).pop() ?? '';
  const eq = token.indexOf('=');
  return (eq >= 0 ? token.slice(eq + 1) : token.replace(/^(\+\+|\+|~)/, '')).replace(/^["']/, '').toLowerCase();
}

/** Letters of `frag` in order in `label`: the suggest widget's leniency, without its ranking. */
function matches(label: string, frag: string): boolean {
  let i = 0;
  for (const ch of label.toLowerCase()) if (ch === frag[i]) i++;
  return i === frag.length;
}

function itemsFor(value: string, res: CompleteOverridesResult | undefined): { items: Item[]; title: string; blocked: boolean } {
  const errors = res?.problems.filter((p) => p.severity === 'error') ?? [];
  const warnings = res?.problems.filter((p) => p.severity === 'warning') ?? [];
  const frag = fragment(value);
  // Offering what is already typed would make Enter a no-op instead of a run.
  const completions: Item[] = (res?.items ?? [])
    .filter((c) => c.line !== value && matches(c.label, frag))
    .map((c) => ({ label: c.label, description: c.detail, completion: c, alwaysShow: true }));
  const overrides = res?.overrides ?? value.split(/\s+/).filter(Boolean);
  const first = errors[0] ?? warnings[0];
  const title = first ? `${TITLE}: ${first.message}` : res?.checked === false || !res ? `${TITLE} (not checked: no trainer config found)` : TITLE;
  const head: Item = errors.length
    ? { label: `$(error) ${errors[0].message}`, description: errors.length > 1 ? `and ${errors.length - 1} more` : undefined, alwaysShow: true }
    : { label: `$(play) Run${overrides.length ? ` with ${overrides.join(' ')}` : ' with the recipe\'s own overrides'}`, run: true, alwaysShow: true };
  // While the last token is being typed (it is wrong so far), completing it is what Enter should do.
  const items = errors.length && completions.length ? [...completions, head] : [head, ...completions];
  return { items, title, blocked: errors.length > 0 };
}

/** Asks for overrides; resolves to them (one argv entry each) when the user runs, undefined on Escape. */
export function askOverrides(language: LanguageService, initial = ''): Promise<string[] | undefined> {
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = TITLE;
  qp.placeholder = 'max_steps=50 model=tiny-llama optimizer.lr=3e-4 (Enter completes the last word or runs)';
  qp.matchOnDescription = false;
  qp.ignoreFocusOut = true;
  let seq = 0;
  let latest: { value: string; res: CompleteOverridesResult | undefined } | undefined;

  const update = async (value: string): Promise<{ value: string; res: CompleteOverridesResult | undefined }> => {
    const mine = ++seq;
    qp.busy = true;
    const res = await language.completeOverrides({ line: value, cursor: value.length });
    // An answer for an older value must not replace a newer one (typing is faster than the server).
    if (mine === seq) {
      const v = itemsFor(value, res);
      qp.items = v.items;
      qp.title = v.title;
      qp.busy = false;
      latest = { value, res };
    }
    return { value, res };
  };

  return new Promise((resolve) => {
    let done = false;
    const finish = (r: string[] | undefined): void => {
      if (done) return;
      done = true;
      resolve(r);
      qp.dispose();
    };
    qp.onDidChangeValue((v) => void update(v));
    qp.onDidHide(() => finish(undefined));
    qp.onDidAccept(async () => {
      const picked = qp.selectedItems[0] ?? qp.activeItems[0];
      if (picked?.completion) {
        qp.value = picked.completion.line;
        await update(qp.value);
        return;
      }
      if (picked && !picked.run) return; // the error row: fix the line first
      const value = qp.value;
      // The answer shown may be for a line typed before the last keystroke: check exactly what will run.
      const cur = latest?.value === value ? latest : await update(value);
      if (itemsFor(value, cur.res).blocked) return;
      finish(cur.res?.overrides ?? value.split(/\s+/).filter(Boolean));
    });
    qp.value = initial;
    void update(initial);
    qp.show();
  });
}
