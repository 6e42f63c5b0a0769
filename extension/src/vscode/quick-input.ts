import * as vscode from 'vscode';
import type { StepOutcome } from '../core/explorer/wizard-flow';

/**
 * One step of a multi-step input, as a promise: the user accepts (→ 'next' after `onAccept` stored the
 * answer), presses the Back button (→ 'back') or dismisses it (→ 'cancel'). Built on createQuickPick /
 * createInputBox because showQuickPick has no Back button. The widget is disposed when the step ends.
 */

export interface StepHeader {
  title: string;
  step: number;
  totalSteps: number;
  canGoBack: boolean;
}

export interface PickStep<T extends vscode.QuickPickItem> extends StepHeader {
  placeholder?: string;
  /** Items, or a promise of them (the pick shows a busy bar meanwhile). */
  items: readonly T[] | Promise<readonly T[]>;
  /** Preselected item (e.g. the recommended runtime, or the previous answer after Back). */
  active?: (item: T) => boolean;
  canSelectMany?: boolean;
  /** Extra title-bar buttons (e.g. "Copy gcloud command"); the handler runs without ending the step. */
  buttons?: { button: vscode.QuickInputButton; run: () => void | Thenable<void> }[];
  onAccept: (selected: readonly T[]) => void;
}

export interface InputStep extends StepHeader {
  prompt: string;
  value: string;
  placeholder?: string;
  /** Checked as the user types; the reason is shown under the box and blocks Enter. */
  validate: (value: string) => string | undefined | Promise<string | undefined>;
  onAccept: (value: string) => void;
}

function header(input: vscode.QuickInput, h: StepHeader): void {
  input.title = h.title;
  input.step = h.step;
  input.totalSteps = h.totalSteps;
}

export function pickStep<T extends vscode.QuickPickItem>(s: PickStep<T>): Promise<StepOutcome> {
  const pick = vscode.window.createQuickPick<T>();
  header(pick, s);
  pick.placeholder = s.placeholder;
  pick.canSelectMany = s.canSelectMany ?? false;
  pick.matchOnDescription = true;
  pick.ignoreFocusOut = true;
  pick.buttons = [...(s.canGoBack ? [vscode.QuickInputButtons.Back] : []), ...(s.buttons ?? []).map((b) => b.button)];
  const disposables: vscode.Disposable[] = [pick];
  return new Promise<StepOutcome>((resolve) => {
    let done = false;
    const finish = (o: StepOutcome) => {
      if (done) return;
      done = true;
      resolve(o);
      for (const d of disposables) d.dispose();
    };
    disposables.push(
      pick.onDidTriggerButton((b) => {
        if (b === vscode.QuickInputButtons.Back) return finish('back');
        void s.buttons?.find((x) => x.button === b)?.run();
      }),
      pick.onDidAccept(() => {
        const chosen = pick.canSelectMany ? pick.selectedItems : pick.activeItems.slice(0, 1);
        if (!pick.canSelectMany && chosen.length === 0) return;
        s.onAccept(chosen);
        finish('next');
      }),
      pick.onDidHide(() => finish('cancel')),
    );
    pick.busy = true;
    pick.show();
    Promise.resolve(s.items).then(
      (items) => {
        if (done) return;
        pick.items = items;
        const preselected = s.active ? items.filter(s.active) : [];
        if (pick.canSelectMany) pick.selectedItems = preselected;
        else if (preselected.length > 0) pick.activeItems = [preselected[0]];
        pick.busy = false;
      },
      (e: unknown) => {
        if (done) return;
        pick.busy = false;
        // Keep the step open so that Back still works; the reason shows in the placeholder.
        pick.placeholder = `Could not load the list: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
      },
    );
  });
}

export function inputStep(s: InputStep): Promise<StepOutcome> {
  const box = vscode.window.createInputBox();
  header(box, s);
  box.prompt = s.prompt;
  box.value = s.value;
  box.placeholder = s.placeholder;
  box.ignoreFocusOut = true;
  box.buttons = s.canGoBack ? [vscode.QuickInputButtons.Back] : [];
  const disposables: vscode.Disposable[] = [box];
  return new Promise<StepOutcome>((resolve) => {
    let done = false;
    const finish = (o: StepOutcome) => {
      if (done) return;
      done = true;
      resolve(o);
      for (const d of disposables) d.dispose();
    };
    let checked = 0;
    const check = async (value: string): Promise<string | undefined> => {
      const n = ++checked;
      const message = await s.validate(value);
      // Only the latest keystroke's answer counts.
      if (n === checked && !done) box.validationMessage = message;
      return message;
    };
    disposables.push(
      box.onDidTriggerButton((b) => {
        if (b === vscode.QuickInputButtons.Back) finish('back');
      }),
      box.onDidChangeValue((v) => void check(v)),
      box.onDidAccept(async () => {
        const value = box.value;
        box.enabled = false;
        const message = await check(value);
        box.enabled = true;
        if (message !== undefined) return;
        s.onAccept(value);
        finish('next');
      }),
      box.onDidHide(() => finish('cancel')),
    );
    box.show();
    void check(box.value);
  });
}
