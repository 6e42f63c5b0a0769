import type { CommandContext } from './context';

/**
 * Ctrl-C while a command runs something on the workers: the first one aborts the returned signal (the caller
 * stops what it started, on every worker) and says so; a second exits at once with 130. `dispose` removes the
 * handler, so Ctrl-C after the command has its default meaning again.
 */
export function stopOnInterrupt(ctx: CommandContext, stopping: string): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    ctx.err(`${stopping}… (Ctrl-C again to exit now)`);
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  return { signal: abort.signal, dispose: () => process.off('SIGINT', onSigint) };
}
