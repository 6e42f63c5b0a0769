import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';

/**
 * A real, resizable pseudo-terminal for a worker's pty sessions (`ssh -t host CMD`, shells, VS Code terminals).
 *
 * Node has no pty without a native module, so a small Python program owns it: it forks the command on the
 * pty's slave side (a new session, the pty its controlling terminal, the client's size set before exec),
 * copies bytes between its own stdin/stdout and the master, and reads "ROWS COLS" lines on fd 3 and applies
 * them with TIOCSWINSZ on the master — the kernel then sends SIGWINCH to the terminal's foreground process
 * group, exactly as when sshd resizes. It exits with the command's status (or dies of its signal) and passes
 * on the signals it gets to the command's process group, since the command's session is not its own.
 *
 * Chosen over util-linux `script` (which the emulator used): `script` cannot be resized, and resizing behind
 * its back means finding the slave through /proc after the child started (a race with the first
 * window-change) and running `stty -F` per change; its flags and exit-status handling also differ between
 * versions. python3 is on every TPU VM image and on the emulator's PATH (the trainer's venv comes first).
 */
const RELAY = String.raw`
import errno, fcntl, os, select, signal, struct, sys, termios
rows, cols, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
pid, master = os.forkpty()
if pid == 0:
    try:
        os.close(3)  # the resize pipe is the relay's; a program keeping it would hold the session open
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        os.environ['SSH_TTY'] = os.ttyname(0)
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, ('%s: %s\r\n' % (argv[0], e.strerror)).encode())
    os._exit(127)

def forward(sig, _frame):
    targets = {pid}
    try:
        targets.add(os.tcgetpgrp(master))
    except OSError:
        pass
    for target in targets:
        try:
            os.killpg(target, sig)
        except OSError:
            pass
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, forward)

def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]

os.set_blocking(master, False)
inputs, pending, control, status = [0, 3], b'', b'', None
while True:
    readable = [master] + inputs
    writable = [master] if pending else []
    r, w, _ = select.select(readable, writable, [], 0.1 if status is not None else 1.0)
    if master in r:
        try:
            data = os.read(master, 65536)
        except OSError as e:
            data = b'' if e.errno == errno.EIO else None
        if data == b'':
            break
        if data:
            write_all(1, data)
    if status is not None and not r:
        break  # the command exited and its terminal went quiet (a background job may hold it open)
    if master in w:
        try:
            pending = pending[os.write(master, pending):]
        except BlockingIOError:
            pass
    if 0 in r:
        data = os.read(0, 65536)
        if data:
            pending += data
        else:
            inputs.remove(0)  # sshd leaves a pty's input open when the client sends EOF
    if 3 in r:
        data = os.read(3, 4096)
        if not data:
            inputs.remove(3)
        control += data
        while b'\n' in control:
            line, control = control.split(b'\n', 1)
            r2, c2 = (int(x) for x in line.split())
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', r2, c2, 0, 0))
    if status is None:
        done, status_word = os.waitpid(pid, os.WNOHANG)
        if done:
            status = status_word
if status is None:
    status = os.waitpid(pid, 0)[1]
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
`;

/** The argv that runs `command` on a fresh pty of the given size; spawn it with a fourth pipe (fd 3) for resizes. */
export function ptyArgv(command: string[], rows: number, cols: number): string[] {
  return ['python3', '-c', RELAY, String(rows > 0 ? rows : 24), String(cols > 0 ? cols : 80), ...command];
}

/** Resizes the pty of a child started with ptyArgv. */
export function resizePty(child: ChildProcess, rows: number, cols: number): void {
  const control = child.stdio[3] as Writable | null | undefined;
  if (!control || control.destroyed || rows <= 0 || cols <= 0) return;
  control.write(`${Math.floor(rows)} ${Math.floor(cols)}\n`);
}
