"""`retrieval serve`: one long-lived process per root answering `query` and `status` over a Unix socket.

    <store>/serve/        0700, owned by the user
      sock                0600 Unix stream socket (no TCP listener, ever)
      lock                flock held while the server lives: one server per root
      log                 what a detached server prints

Each request runs the CLI's own code in this process (runner.run_cli) after `Warm.freshen()`, so the
answer is byte for byte what a cold `retrieval` prints, from an index at least as fresh. Requests
are served one at a time; a bad one gets an error reply. The index is written only through
service.refresh, so a server killed at any point leaves the store as a killed `index` does; its
socket file stays behind and the next server (holding the lock) replaces it.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import stat
import struct
import sys
import time
import traceback

from ..output import shown_path
from . import client, serving
from .client import (COMMANDS, DEFAULT_IDLE_TIMEOUT, environment, send, serve_dir, shared_environment, socket_path,
                     store_dir)
from .runner import run_cli

QUIET_BEFORE_REFRESH = 0.3  # after the last file event, refresh ahead of the next query
POLL_INTERVAL = 5.0  # without inotify: how often an idle server checks the stats itself
HOUSEKEEPING = 2.0  # how often the server checks that its root, store and socket still exist
REQUEST_TIMEOUT = 10.0  # a client must send its whole request within this
MAX_STDIN = 64 << 20
MAX_INCOMING = 128  # connections whose request is still arriving; beyond it the oldest is dropped


class AlreadyRunning(RuntimeError):
    PREFIX = "a server is already running"  # (how `serve --detach` tells it in the log)


def prepare_serve_dir(store: str) -> str:
    """<store>/serve, a 0700 directory of ours (never a link)."""
    from ..store import layout

    layout.ensure_store(store)
    path = serve_dir(store)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:  # a read-only checkout: the error says how to keep the index elsewhere
        raise layout.unwritable("serve", store, exc) from exc
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise layout.StoreError(f"refusing to use {path}: not a directory of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def _open_ours(path: str, flags: int) -> int:
    """A file of the serve directory, created 0600 if missing, never through a link: a repository
    can commit `.retrieval/serve/log` or `lock` as a link to any file of the user's, which the log
    was then appended to (and made 0600) and the lock created."""
    try:
        return os.open(path, flags | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        if os.path.islink(path):
            from ..store import layout

            raise layout.StoreError(f"refusing to use {path}: it is a symbolic link (remove it)") from None
        raise


def _lock(directory: str):
    """The per-root server lock (released by the kernel when the process dies, however it dies)."""
    import fcntl

    fd = _open_ours(os.path.join(directory, "lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _running_pid(directory: str) -> str:
    try:
        with open(os.path.join(directory, "info.json"), encoding="utf-8") as fh:
            return str(json.load(fh).get("pid", "?"))
    except (OSError, ValueError, AttributeError):
        return "?"


def _write_info(directory: str, info: dict) -> None:
    """info.json replaced whole: a reader sees the previous server's or this one's, never half."""
    path = os.path.join(directory, "info.json")
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(_open_ours(temp, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as fh:
            json.dump(info, fh)
        os.replace(temp, path)
    except BaseException:
        try:  # (a full disk left one empty temp file per attempt to start)
            os.unlink(temp)
        except OSError:
            pass
        raise


def _is_server(pid: int) -> bool:
    """Whether pid still runs a `retrieval serve` (not a process that took over a dead server's pid).
    Where the command line cannot be read, the recorded pid is trusted."""
    if not os.path.isdir("/proc/self"):
        return True
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:  # gone, or another user's
        return False
    return any(b"serve" in arg for arg in argv)


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED), None where the platform lacks it."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _bind(path: str) -> socket.socket:
    """A listening socket at path. Bound and listening under a temporary name first, then renamed
    into place: a client that sees the path can connect (bound but not yet listening, it was
    refused, and ran its command itself without the warm indexes), and a killed server's socket
    is replaced in one step, not removed first."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}")
    old = os.umask(0o177)  # created 0600: no moment where another user could connect
    here = os.open(".", os.O_RDONLY)
    try:
        try:
            os.unlink(temporary)  # a name left by a killed process whose pid we now have
        except FileNotFoundError:
            pass
        if len(temporary.encode("utf-8", "surrogateescape")) < 100:
            sock.bind(temporary)
        else:  # a deep store: bind by the name relative to its directory (sun_path is short)
            os.chdir(os.path.dirname(temporary))
            sock.bind(os.path.basename(temporary))
        os.chmod(temporary, 0o600)
        sock.listen(64)
        os.rename(temporary, path)  # we hold the lock: the socket replaced is nobody else's
    except BaseException:
        sock.close()
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    finally:
        os.fchdir(here)
        os.close(here)
        os.umask(old)
    return sock


class _Incoming:
    """A connection whose request is still arriving. Its bytes are taken as they come (the socket
    is non-blocking), so one slow or stalled client never delays another's answer."""

    def __init__(self, conn: socket.socket, deadline: float):
        self.conn, self.deadline = conn, deadline
        self.data = bytearray()

    def read(self) -> tuple[dict, bytes] | None:
        """The whole request (header, stdin) once it is here, else None. ValueError: malformed;
        ConnectionError: closed before the end."""
        try:
            chunk = self.conn.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return None
        if not chunk:
            raise ConnectionError("the connection closed early")
        self.data += chunk
        return parse_request(self.data)


def parse_request(data: bytes) -> tuple[dict, bytes] | None:
    """(header, stdin) from the bytes of a request when they are all there, None while some are
    missing; ValueError when they can never make a request (the framing of client.receive)."""
    if len(data) < 4:
        return None
    size = client.header_size(bytes(data[:4]))
    if len(data) < 4 + size:
        return None
    header, (length,) = client.parse_header(bytes(data[4:4 + size]), ("stdin_len",), MAX_STDIN)
    end = 4 + size + length
    if len(data) < end:
        return None
    return header, bytes(data[4 + size:end])


class Server:
    def __init__(self, root: str, idle_timeout: float = DEFAULT_IDLE_TIMEOUT, allowed_uid: int | None = None,
                 log=None):
        self.root = os.path.abspath(root)
        self.store = os.path.abspath(store_dir(self.root))
        self.idle_timeout = idle_timeout
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self.log = log or sys.stderr
        self.version = client.code_version()  # first: the code this process is about to load
        self.environment = environment()
        self.stopping = False
        self.sock: socket.socket | None = None
        self.sock_ino = None
        self.warm = None
        self.lock_fd = None
        self.dir = ""

    def say(self, message: str) -> None:
        print(f"serve: {message}", file=self.log, flush=True)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Take the root's lock, open its indexes, then listen. AlreadyRunning if a server has it."""
        from ..discover import require_root
        from .warm import Warm

        require_root(self.root)
        self.dir = prepare_serve_dir(self.store)
        self.lock_fd = _lock(self.dir)
        if self.lock_fd is None:
            raise AlreadyRunning(f"{AlreadyRunning.PREFIX} for {self.root} (pid {_running_pid(self.dir)}); "
                                 f"`retrieval serve --stop --root {self.root}` stops it")
        try:
            # Our pid before opening the indexes (seconds): `serve --stop` meanwhile must signal this
            # process, not the previous server's pid, which another process may have taken since.
            self._publish({"pid": os.getpid(), "root": self.root, "version": self.version, "starting": True})
            self.warm = Warm(self.root)
            self.warm.open()
            self.sock = _bind(socket_path(self.store))
            self.sock_ino = os.stat(socket_path(self.store)).st_ino
            info = {"pid": os.getpid(), "root": self.root, "version": self.version,
                    "started": time.time(), "idle_timeout": self.idle_timeout,
                    "watcher": type(self.warm.watcher).__name__, "settings": client.settings_tag(self.environment)}
            self._publish(info)
            serving.STORE, serving.INFO = self.store, info
        except BaseException:
            self.close()
            raise
        self.say(f"serving {self.root} (pid {os.getpid()}; {self.warm.watcher.described})")

    def _publish(self, info: dict) -> None:
        try:
            _write_info(self.dir, info)
        except OSError as exc:  # a full disk: said as every command says it, not as an errno
            from ..store import layout

            raise layout.unwritable("serve", self.store, exc) from exc

    def close(self) -> None:
        serving.STORE, serving.INFO = None, {}
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            try:  # only our own socket: a successor may have replaced it
                if os.stat(socket_path(self.store)).st_ino == self.sock_ino:
                    os.unlink(socket_path(self.store))
            except OSError:
                pass
        if self.warm is not None:
            self.warm.close()
            self.warm = None
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def _intact(self) -> bool:
        """Root, store and our socket are still there (a `clean` or a removed tree ends the server)."""
        try:
            return os.path.isdir(self.root) and os.stat(socket_path(self.store)).st_ino == self.sock_ino
        except OSError:
            return False

    def _serves(self, argv: list[str], cwd: str) -> bool:
        """Whether the command's root, found from the caller's directory as the command would find
        it, is this server's."""
        from ..roots import find_root, same_directory

        given = client.root_argument(argv)
        try:
            found = find_root(os.path.join(cwd, given) if given is not None else None, start=cwd)
        except OSError:
            return False
        return same_directory(found.path, self.root)

    def serve_forever(self) -> str:
        """Answer requests until stopped, idle or orphaned; the reason it ended."""
        selector = selectors.DefaultSelector()
        selector.register(self.sock, selectors.EVENT_READ, "accept")
        watch_fd = self.warm.watcher.fileno()
        if watch_fd is not None:
            selector.register(watch_fd, selectors.EVENT_READ, "watch")
        incoming: dict[socket.socket, _Incoming] = {}
        last_request = last_event = last_check = last_poll = time.monotonic()
        try:
            while not self.stopping:
                now = time.monotonic()
                timeout = HOUSEKEEPING
                if self.warm.dirty or self.warm.behind:
                    timeout = max(0.0, min(timeout, last_event + QUIET_BEFORE_REFRESH - now))
                if incoming:
                    timeout = max(0.0, min(timeout, min(i.deadline for i in incoming.values()) - now))
                for key, _ in selector.select(timeout):
                    if key.data == "watch":
                        self.warm.note_events()
                        last_event = time.monotonic()
                    elif key.data == "accept":
                        self._accept(selector, incoming)
                    else:
                        if self._receive(selector, incoming, key.data):
                            last_request = time.monotonic()
                        if self.stopping:
                            break
                now = time.monotonic()
                for pending in [i for i in incoming.values() if i.deadline <= now]:
                    self._drop(selector, incoming, pending)  # it sent no whole request in time
                if ((self.warm.dirty or self.warm.behind) and now - last_event >= QUIET_BEFORE_REFRESH) or \
                        (watch_fd is None and now - last_poll >= POLL_INTERVAL):
                    last_poll = now
                    if not self._intact():  # the store removed: never rebuild it (all of it) on the way out
                        return "its root, store or socket went away"
                    self._freshen()  # ahead of the next query: it then finds the index ready
                if now - last_check >= HOUSEKEEPING:
                    last_check = now
                    if not self._intact():
                        return "its root, store or socket went away"
                    if client.code_version() != self.version:
                        # Every client now runs other code and answers itself: kept up, this server
                        # only looked alive (`status`, `serve --detach`) and held off its idle exit.
                        return "its code changed on disk"
                if self.idle_timeout and now - last_request >= self.idle_timeout:
                    return f"idle for {self.idle_timeout:g}s"
            return "stopped"
        finally:
            for pending in list(incoming.values()):
                self._drop(selector, incoming, pending)
            selector.close()

    def _accept(self, selector, incoming: dict) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        uid = peer_uid(conn)
        if uid is not None and uid != self.allowed_uid:
            self.say(f"refused a connection from uid {uid}")
            with conn:
                try:
                    conn.settimeout(REQUEST_TIMEOUT)
                    send(conn, {"ok": False, "error": "refused: another user"})
                except OSError:
                    pass
            return
        if len(incoming) >= MAX_INCOMING:
            self._drop(selector, incoming, min(incoming.values(), key=lambda i: i.deadline))
        conn.setblocking(False)
        pending = _Incoming(conn, time.monotonic() + REQUEST_TIMEOUT)
        incoming[conn] = pending
        selector.register(conn, selectors.EVENT_READ, pending)

    @staticmethod
    def _drop(selector, incoming: dict, pending: _Incoming) -> None:
        incoming.pop(pending.conn, None)
        try:
            selector.unregister(pending.conn)
        except (KeyError, ValueError):
            pass
        pending.conn.close()

    def _receive(self, selector, incoming: dict, pending: _Incoming) -> bool:
        """Take what pending's client sent; once its request is whole, answer it. Whether it was."""
        try:
            request = pending.read()
        except (OSError, ConnectionError):
            self._drop(selector, incoming, pending)  # the client went away
            return False
        except ValueError as exc:
            request = exc
        if request is None:
            return False
        incoming.pop(pending.conn, None)
        selector.unregister(pending.conn)
        pending.conn.setblocking(True)
        self.handle(pending.conn, request)
        return True

    def _freshen(self) -> None:
        try:
            self.warm.freshen(embedding=False)
        except Exception:  # noqa: BLE001 - the next query checks again; the server goes on
            self.warm.dirty = False
            self.say("refresh failed:\n" + traceback.format_exc())

    # -- one request -------------------------------------------------------------------------

    def handle(self, conn: socket.socket, request: tuple[dict, bytes] | ValueError) -> None:
        """Answer one whole request (or say why it is malformed) and close the connection."""
        with conn:
            try:
                conn.settimeout(REQUEST_TIMEOUT)
                if isinstance(request, ValueError):
                    send(conn, {"ok": False, "error": f"malformed request: {request}"})
                    return
                if _gone(conn):  # it gave up waiting for us to start (busy with another): not run
                    return
                send_reply = self.answer(*request, started=lambda: send(conn, {"ok": True, "started": True}))
                # The answer too within a deadline: a client that stops reading (stopped with
                # Ctrl-Z, hung) held up every other one while a large answer filled the socket.
                # The whole of it, not each send (Python's sendall): a dropped client runs cold.
                conn.settimeout(REQUEST_TIMEOUT)
                send_reply(conn)
            except (OSError, ConnectionError):
                pass  # the client went away; nothing to tell it
            except Exception:  # noqa: BLE001 - a request never stops the server
                self.say("request failed:\n" + traceback.format_exc())
                try:
                    send(conn, {"ok": False, "error": "internal error"})
                except OSError:
                    pass

    def answer(self, header: dict, stdin: bytes, started=lambda: None):
        op = header.get("op")
        if op == "ping":
            return lambda conn: send(conn, {"ok": True, "info": serving.INFO})
        if op == "stop":
            self.stopping = True
            return lambda conn: send(conn, {"ok": True})
        if op != "run":
            return _error(f"unknown op {op!r}")
        argv, cwd = header.get("argv"), header.get("cwd")
        if header.get("version") != self.version:
            return _error("another code version")
        env = header.get("env")
        if not isinstance(env, dict) or shared_environment(env) != shared_environment(self.environment):
            return _error("another environment")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv) and argv[0] in COMMANDS):
            return _error("argv must be a query or status command line")
        if not isinstance(cwd, str) or not os.path.isdir(cwd):
            return _error("no such working directory")
        if not self._serves(argv, cwd):
            # The client then runs the command itself: a server never opens (or builds) another
            # root's indexes, which it would neither watch nor keep fresh.
            return _error("a command for another root")
        if not self._intact():
            self.stopping = True
            return _error("the root or store went away")
        encodings = header.get("encodings") if isinstance(header.get("encodings"), dict) else None
        started()  # the client waits for the answer from here on, however long the command takes
        words = argv[: argv.index("--")] if "--" in argv else argv
        if "--stale-ok" not in words:  # the option exists to skip the check (and any refresh) first
            from .warm import command_retrievers

            self.warm.freshen(command_retrievers(words, env))
        order: list = []  # the client writes the two streams in the order the command did
        code, out, err = run_cli(argv, cwd, stdin, encodings, caller_env=env, order=order)
        return lambda conn: send(conn, {"ok": True, "code": code, "stdout_len": len(out), "stderr_len": len(err),
                                        "order": order}, out, err)


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (a request read whole, then nothing more is ever sent)."""
    timeout = conn.gettimeout()
    conn.setblocking(False)  # with a timeout set, recv waits for data first, whatever its flags
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    finally:
        conn.settimeout(timeout)


def _error(message: str):
    return lambda conn: send(conn, {"ok": False, "error": message})


class _Stopped(BaseException):
    """A stop signal. Neither SystemExit nor KeyboardInterrupt: the command a request is running
    would take either as its own ending (exit 0 with no output, or 130) and the server would go on.
    This one leaves the command and the request (the client, given no answer, runs the command
    itself) and ends the server."""


def run(root: str, idle_timeout: float = DEFAULT_IDLE_TIMEOUT, log=None) -> str:
    """Serve root in the foreground until stopped; the reason it ended. AlreadyRunning if taken.
    SIGTERM and SIGHUP end it (the reason says which); SIGINT too, raised on as KeyboardInterrupt."""
    server = Server(root, idle_timeout, log=log)

    def stop(signum, frame):
        raise _Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        try:
            server.start()
            reason = server.serve_forever()
        except _Stopped as exc:
            reason = f"stopped by {signal.Signals(exc.args[0]).name}"
            if exc.args[0] == signal.SIGINT:
                server.say(f"exiting: {reason}")
                raise KeyboardInterrupt from None
        server.say(f"exiting: {reason}")
        return reason
    finally:
        server.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


# The server runs this package, the one the launching command runs, and nothing from the served
# root: `-m` there imported a `retrieval` (or `click`) package the repository itself holds, and a
# second installed copy failed the client's code-version check (every query then ran in process).
_LAUNCH = ("import os, sys; ours = sys.argv.pop(1); "
           "sys.path[:] = [ours] + [p for p in sys.path if p not in ('', '.', os.getcwd())]; "
           "from retrieval.server.serve import main; sys.exit(main())")


def _package_parent() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


WAITING_NOTE = 1.0  # seconds before a detached start's wait is said (`waiting`)


def start_detached(root: str, idle_timeout: float = DEFAULT_IDLE_TIMEOUT, waiting=None) -> dict:
    """Start a server in the background and wait until it answers: its ping info. `waiting(log)`
    is called once if that takes over WAITING_NOTE seconds (a first build said nothing for 19 s)."""
    import subprocess

    from ..discover import require_root

    root = os.path.abspath(root)
    require_root(root, shown_path(root))  # before the store is made: it would create the root
    store = store_dir(root)
    running = client.probe(store, busy=True)  # (one busy with a long command: it started a second, refused)
    if running is not None and not running.get("busy") and running.get("version") != client.code_version():
        # This install's before an upgrade exits at its next look at its code: said to be serving,
        # it left none running. Another install's goes on (said, with a note that it does not serve
        # this shell).
        running = _outlived(store, running["pid"], HOUSEKEEPING + 1.0)
    if running is not None:  # "make sure it runs" is done: not an error
        return dict(running, already=True)
    directory = prepare_serve_dir(store)
    log_path = os.path.join(directory, "log")
    # The server runs in the root: a relative index directory would be another one there (a second
    # store inside the project, and this command waiting for a server that never appears here).
    env = client.with_absolute_paths(dict(os.environ))
    said = time.monotonic() + WAITING_NOTE
    for attempt in range(2):
        with open(_open_ours(log_path, os.O_WRONLY | os.O_APPEND), "ab") as log:
            os.fchmod(log.fileno(), 0o600)
            ours = log.tell()  # the log is appended to: earlier servers' lines are not this one's
            proc = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, _package_parent(), "--root", root, "--idle-timeout", str(idle_timeout)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd=root, env=env,
            )
        while proc.poll() is None:
            info = client.probe(store)
            if info is not None and info.get("pid") == proc.pid:
                return info
            if waiting is not None and time.monotonic() > said:
                waiting(log_path)
                waiting = None
            time.sleep(0.05)
        won = _winner(store, directory, root)
        if won is not None:  # started at once by another caller too: theirs runs, which was asked
            return dict(won, already=True)
        with open(log_path, encoding="utf-8", errors="replace") as fh:
            fh.seek(ours)
            lines = [line for line in fh.read().splitlines() if line.strip()]
        if attempt == 0 and any(line.startswith(f"error: {AlreadyRunning.PREFIX}") for line in lines):
            # The lock was held by a server on its way out (its socket removed: it exits within
            # HOUSEKEEPING seconds) and is free now: its last words were said as this start's error.
            continue
        last = lines[-1].removeprefix("error: ") if lines else f"the server exited with status {proc.returncode}"
        raise RuntimeError(last)
    raise AssertionError("unreachable")


def _outlived(store: str, pid: int, wait: float) -> dict | None:
    """The ping info of the server answering for store once pid has gone, or pid's if it is still
    there after `wait` seconds; None when none answers."""
    deadline = time.monotonic() + wait
    while True:
        info = client.probe(store)
        if info is None or info.get("pid") != pid or time.monotonic() > deadline:
            return info
        time.sleep(0.1)


# How long `serve --detach` waits for a server that holds the lock to answer (one starting at the
# same moment opens its indexes first).
WINNER_WAIT = 60.0


def _winner(store: str, directory: str, root: str, wait: float = WINNER_WAIT) -> dict | None:
    """The ping info of the server another `serve --detach` started at the same moment, once it
    answers; None when no other process holds the server lock (ours failed for its own reason).
    RuntimeError when the holder does not answer: a server suspended with Ctrl-Z had the command
    wait for ever."""
    deadline = time.monotonic() + wait
    while True:
        info = client.probe(store)
        if info is not None:
            return info
        fd = _lock(directory)
        if fd is not None:  # nobody holds it: no server is starting
            os.close(fd)
            return client.probe(store)
        pid = _running_pid(directory)
        stopped = client.suspended(pid)
        if stopped or time.monotonic() > deadline:
            state = "is stopped (Ctrl-Z?)" if stopped else "does not answer"
            raise RuntimeError(f"the server of {shown_path(root)} (pid {pid}) {state}: `kill -CONT {pid}`, or "
                               "`retrieval serve --stop`")
        time.sleep(0.05)


STOP_REPLY = 1.0  # seconds a stop request waits for the server's reply before it signals


def stop(root: str, timeout: float = 10.0) -> str | None:
    """Make root's server exit and wait until it has; its pid, or None when none was running."""
    store = store_dir(root)
    directory = serve_dir(store)
    if not os.path.isdir(directory):
        return None
    lock = _lock(directory)
    if lock is not None:  # nobody holds it: no server (a killed one's socket may linger)
        os.close(lock)
        return None
    pid = _running_pid(directory)
    try:
        if client.suspended(pid):  # it would not read the request: the signal, at once
            raise OSError("suspended")
        # A server busy with a command reads no request until it ends (a first embedding build:
        # minutes): not answered within a second, it gets the signal, which it takes as at once.
        client.call(store, {"op": "stop"}, reply_timeout=min(timeout, STOP_REPLY))
    except (OSError, ValueError):
        # No answer (a server of an older protocol, or a wedged one): the pid it recorded.
        if pid.isdigit() and _is_server(int(pid)):
            try:
                os.kill(int(pid), signal.SIGTERM)
                os.kill(int(pid), signal.SIGCONT)  # a suspended server (Ctrl-Z) takes it once resumed
            except OSError:
                pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lock = _lock(directory)
        if lock is not None:
            os.close(lock)
            return pid
        time.sleep(0.05)
    raise RuntimeError(f"the server of {shown_path(os.path.abspath(root))} (pid {pid}) did not stop")


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="retrieval serve")
    parser.add_argument("--root", default=".")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT)
    args = parser.parse_args(argv)
    from ..store.layout import StoreError

    try:
        run(args.root, args.idle_timeout)
    except (AlreadyRunning, StoreError) as exc:  # (its last line is what `serve --detach` says)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
