/**
 * The Python that "Debug on TPU" and "Attach Debugger" put on a worker (in ~/.tpw/debugpy, core/debug/debugpy.ts).
 *
 * Why not `debugpy.listen()`: it starts debugpy's adapter, which accepts any connection to its loopback port and
 * then runs whatever the client asks; every local user of the VM (and, on the emulator, of this machine) could
 * attach and run code as the run's user. Instead pydevd, debugpy's debugger, is itself the adapter (what
 * `in_process_debug_adapter=True` does), on a loopback port it answers only after a `pydevdAuthorize` request
 * with a token of 32 random bytes that never leaves the process; and the debugger reaches it through a unix
 * socket in a 0700 folder, relayed by a thread of the process that presents the token for it. Only the run's
 * user can open that socket (sshd does, for the client's `direct-streamlocal` channel).
 *
 * One cost of pydevd as the adapter: subprocesses of a debugged program are not debugged (debugpy's adapter
 * is what follows them).
 */

/** Starts the listener in a run started with TPW_DEBUGPY (= the worker ids that wait for the debugger, or `all`). */
export const SITECUSTOMIZE = String.raw`# Written by TPU Workbench ("Debug on TPU"); acts only when TPW_DEBUGPY is set.
import os


def _tpw_debugpy() -> None:
    workers = os.environ.pop("TPW_DEBUGPY", None)
    if not workers:
        return
    me = os.environ.get("TPU_WORKER_ID", "0")
    if workers != "all" and me not in workers.split(","):
        return
    # The recipe's own files are never frozen modules: pydevd's warning about the standard library's would
    # only add four lines to every debugged run's log.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import tpw_debugpy_listener

    tpw_debugpy_listener.start(os.environ.get("TPW_RUN_DIR", ""), me, True)


_tpw_debugpy()
`;

/** The listener: pydevd behind a token, and the unix socket relay that presents it. */
export const LISTENER = String.raw`"""TPU Workbench's debug listener: this Python process debuggable by its owner only (see worker-python.ts)."""

import atexit
import contextlib
import json
import os
import secrets
import socket
import sys
import tempfile
import threading

_socket_path = None


def _read_message(raw):
    """One Debug Adapter Protocol message's body (after its headers and a blank line); None at the end."""
    length = None
    while True:
        line = raw.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        return None
    body = b""
    while len(body) < length:
        chunk = raw.read(length - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def _frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def _daemon(target, *args):
    t = threading.Thread(target=target, args=args, daemon=True, name="tpw-debug-relay")
    # pydevd neither traces nor lists its own threads: these are part of the debugger, not of the program.
    t.is_pydev_daemon_thread = True
    t.start()


def _relay(client, port, token):
    """One debugger connection: authorizes with pydevd, passing on anything said before the answer, then relays."""
    try:
        up = socket.create_connection(("127.0.0.1", port))
        auth = {
            "seq": 0,
            "type": "request",
            "command": "pydevdAuthorize",
            "arguments": {"debugServerAccessToken": token},
        }
        up.sendall(_frame(json.dumps(auth).encode()))
        raw = up.makefile("rb", buffering=0)
        while True:
            body = _read_message(raw)
            if body is None:
                raise OSError("pydevd closed the connection")
            msg = json.loads(body)
            if msg.get("type") == "response" and msg.get("command") == "pydevdAuthorize":
                if not msg.get("success"):
                    raise OSError("pydevd refused the token")
                break
            client.sendall(_frame(body))
    except OSError as e:
        print(f"tpw: debugger connection refused: {e}", file=sys.stderr, flush=True)
        client.close()
        return
    _daemon(_pump, client, up)
    _pump(up, client)


def _accept(server, port, token):
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            return
        _daemon(_relay, client, port, token)


def _start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def start(run_dir, worker, wait):
    """Listens; records "pid start-time socket" in the run folder's debugpy file; with wait, blocks for the debugger."""
    global _socket_path
    if _socket_path:
        return _socket_path
    import debugpy.server.api  # debugpy's own pydevd, speaking the Debug Adapter Protocol
    import pydevd

    if pydevd.get_global_debugger() is not None:
        # The program started a debugger of its own (debugpy.listen()): one process has one.
        print("tpw: a debugger already runs in this process; not starting another", file=sys.stderr, flush=True)
        raise RuntimeError("a debugger already runs in this process")
    token = secrets.token_hex(32)
    debugpy_dir = os.path.dirname(os.path.dirname(os.path.abspath(debugpy.server.api.__file__)))
    _host, port = pydevd._enable_attach(
        ("127.0.0.1", 0),
        dont_trace_start_patterns=(debugpy_dir,),
        dont_trace_end_patterns=("debugpy_launcher.py",),
        patch_multiprocessing=False,
        access_token=token,
    )
    # /tmp, not $TMPDIR or the run folder: a unix socket's path must stay under 108 bytes.
    folder = tempfile.mkdtemp(prefix="tpw-debugpy-", dir="/tmp")
    path = os.path.join(folder, "dap")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(4)

    def _remove():
        for name, rm in ((path, os.unlink), (folder, os.rmdir)):
            with contextlib.suppress(OSError):
                rm(name)

    atexit.register(_remove)
    _daemon(_accept, server, port, token)
    pid = os.getpid()
    if run_dir:
        record = os.path.join(run_dir, "debugpy")
        with open(record + ".tmp", "w") as f:
            f.write(f"{pid} {_start_time(pid)} {path}\n")
        os.replace(record + ".tmp", record)
    _socket_path = path
    what = "waiting for the debugger" if wait else "ready for the debugger"
    print(f"tpw: debugpy {what} on worker {worker} (socket {path}, its owner's only)", file=sys.stderr, flush=True)
    if wait:
        pydevd._wait_for_attach()
    return path
`;

/**
 * Injects the listener into a running Python (argv: pid, the folder of the listener, the run folder, the worker
 * index) through pydevd's own attach-to-process (gdb), as `python -m debugpy --pid` does; it, not the
 * debugpy CLI, so that what runs in the target is the listener above, not `debugpy.listen()`.
 */
export const INJECTOR = String.raw`"""TPU Workbench: makes a running Python process listen for its owner's debugger (see worker-python.ts)."""

import os
import sys

import debugpy.server.api
import pydevd

pid, listener_dir, run_dir, worker = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
debugpy_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(debugpy.server.api.__file__))))


def word(s):
    # The injected line may hold no quote and no newline (pydevd hands it to gdb inside quotes).
    return f"bytes([{','.join(str(b) for b in s.encode())}]).decode()"


code = ";".join(
    [
        "import sys",
        f"sys.path[0:0] = [{word(listener_dir)}, {word(debugpy_parent)}]",
        "import tpw_debugpy_listener",
        f"tpw_debugpy_listener.start({word(run_dir)}, {word(worker)}, False)",
    ]
)
sys.path.append(os.path.join(os.path.dirname(pydevd.__file__), "pydevd_attach_to_process"))
import add_code_to_python_process  # noqa: E402

add_code_to_python_process.run_python_code(pid, code, connect_debugger_tracing=True, show_debug_info=0)
`;
