/**
 * The order of a multi-step input and its Back button, without any UI. Steps can depend on earlier answers
 * (the queued-resource tier is asked only for a queued create), so "next" is computed from the answers so
 * far and "back" returns to the step actually shown before, not to the previous one in the list.
 */
export type StepOutcome = 'next' | 'back' | 'cancel';

export class WizardFlow<Id extends string, S> {
  constructor(
    private readonly order: readonly Id[],
    /** Whether a step is asked, given the answers so far (default: always). */
    private readonly applies: (id: Id, answers: S) => boolean = () => true,
  ) {}

  /** The first step that applies. */
  first(answers: S): Id | undefined {
    return this.order.find((id) => this.applies(id, answers));
  }

  /** The step after `current` that applies, or undefined when `current` was the last. */
  next(current: Id, answers: S): Id | undefined {
    const i = this.order.indexOf(current);
    return this.order.slice(i + 1).find((id) => this.applies(id, answers));
  }

  /** 1-based position of `current` among the steps that apply now, and their count: for "(3/8)" in titles. */
  position(current: Id, answers: S): { step: number; total: number } {
    const shown = this.order.filter((id) => id === current || this.applies(id, answers));
    return { step: shown.indexOf(current) + 1, total: shown.length };
  }

  /**
   * Runs the steps: each returns 'next', 'back' or 'cancel'. Back from the first step stays there. Resolves
   * true when the last step said 'next', false on cancel. `startAt`: open at that step (answers already given,
   * e.g. Retry after a failed create), with Back going through the steps before it.
   */
  async run(answers: S, show: (id: Id, canGoBack: boolean) => Promise<StepOutcome>, startAt?: Id): Promise<boolean> {
    const first = this.first(answers);
    if (first === undefined) return true;
    const history: Id[] = [first];
    if (startAt !== undefined && this.applies(startAt, answers)) {
      for (let id = this.next(first, answers); id !== undefined && history[history.length - 1] !== startAt; id = this.next(id, answers)) history.push(id);
    }
    for (;;) {
      const current = history[history.length - 1];
      const outcome = await show(current, history.length > 1);
      if (outcome === 'cancel') return false;
      if (outcome === 'back') {
        if (history.length > 1) history.pop();
        continue;
      }
      const following = this.next(current, answers);
      if (following === undefined) return true;
      history.push(following);
    }
  }
}
