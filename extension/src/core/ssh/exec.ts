import { StringDecoder } from 'node:string_decoder';
import type { ClientChannel } from 'ssh2';
import { channelEnd, type SshConnection } from './connection';
import type { OutputStream } from './types';

/** How a remote command ended. */
export interface ExecExit {
  /** Exit status; null when the program died on a signal or the server sent no status. */
  code: number | null;
  /** Signal name (ssh2 reports e.g. "SIGTERM"), when the program died on one. */
  signal?: string;
  /** The channel closed without any exit status or signal: the connection dropped or the server gave up. */
  lost: boolean;
}

export interface ExecOutput extends ExecExit {
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** Written to the command's stdin, then EOF. Used for the env file, so secrets never appear in argv. */
  stdin?: string | Buffer;
  /** Closing the channel on abort; the remote side sees its stdin/stdout go away (not a kill: see run/). */
  signal?: AbortSignal;
}

/**
 * Splits a byte stream into lines: `\n` ends a line, a `\r` before it is dropped, a partial last line waits
 * for the next chunk, and a UTF-8 character cut between chunks is reassembled (StringDecoder) rather than
 * turned into two replacement characters.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  push(chunk: Buffer | string): string[] {
    const text = this.partial + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    return parts.map(stripCr);
  }

  /** What is left once the stream ended: a last line without a newline, if any. */
  flush(): string[] {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    return rest.length > 0 ? [stripCr(rest)] : [];
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** Resolves when the channel is closed, with the exit status the server sent (if it sent one). */
function exitOf(channel: ClientChannel): Promise<ExecExit> {
  return channelEnd(channel);
}

function feedStdin(channel: ClientChannel, stdin: string | Buffer | undefined): void {
  // Always send EOF: a remote `cat` (or a shell reading its script) must not wait for input that never comes.
  if (stdin !== undefined && stdin.length > 0) channel.end(stdin);
  else channel.end();
}

function wireAbort(channel: ClientChannel, signal: AbortSignal | undefined): void {
  if (!signal) return;
  const onAbort = () => channel.close();
  if (signal.aborted) onAbort();
  else {
    signal.addEventListener('abort', onAbort, { once: true });
    channel.once('close', () => signal.removeEventListener('abort', onAbort));
  }
}

/** Runs a command and collects its whole output (for short commands: probes, mkdir, kill). */
export async function execCollect(conn: SshConnection, command: string, opts: ExecOptions = {}): Promise<ExecOutput> {
  const r = await execCollectRaw(conn, command, opts);
  return { ...r, stdout: r.stdout.toString('utf8') };
}

/** Like execCollect, with stdout as bytes (logs, archives: exactly what the remote wrote). */
export async function execCollectRaw(conn: SshConnection, command: string, opts: ExecOptions = {}): Promise<ExecExit & { stdout: Buffer; stderr: string }> {
  const channel = await conn.exec(command);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  channel.on('data', (b: Buffer) => out.push(b));
  channel.stderr.on('data', (b: Buffer) => err.push(b));
  const exit = exitOf(channel);
  wireAbort(channel, opts.signal);
  feedStdin(channel, opts.stdin);
  const e = await exit;
  return { ...e, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') };
}

export interface StreamingExec {
  /** Settles when the channel closes (after the last line was delivered). */
  exit: Promise<ExecExit>;
  /** Closes the channel from our side. */
  close(): void;
}

/**
 * Starts a command and delivers its output line by line as it arrives. Resolves as soon as the server has
 * accepted the command (the remote program is starting), so callers can tell "started" from "finished".
 */
export async function execStream(
  conn: SshConnection,
  command: string,
  onLine: (stream: OutputStream, line: string) => void,
  opts: ExecOptions = {},
): Promise<StreamingExec> {
  const channel = await conn.exec(command);
  const splitters: Record<OutputStream, LineSplitter> = { stdout: new LineSplitter(), stderr: new LineSplitter() };
  const emit = (stream: OutputStream, lines: string[]) => {
    for (const line of lines) {
      try {
        onLine(stream, line);
      } catch {
        // A listener's bug must not tear down the remote program's output stream.
      }
    }
  };
  channel.on('data', (b: Buffer) => emit('stdout', splitters.stdout.push(b)));
  channel.stderr.on('data', (b: Buffer) => emit('stderr', splitters.stderr.push(b)));
  const exit = exitOf(channel).then((e) => {
    emit('stdout', splitters.stdout.flush());
    emit('stderr', splitters.stderr.flush());
    return e;
  });
  wireAbort(channel, opts.signal);
  feedStdin(channel, opts.stdin);
  return { exit, close: () => channel.close() };
}
