/**
 * A reader that closed its end (`tpw runs | head -1`) has all it wanted: end quietly with 0, as `cat`, `ls`
 * and most Unix tools run from a shell with SIGPIPE ignored do, so `set -o pipefail` scripts do not see a
 * failure. A detached run goes on (only watching ends). Other stream errors are still reported.
 */
export function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}
