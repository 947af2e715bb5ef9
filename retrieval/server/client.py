"""Talk to a running `retrieval serve`: standard library only, and little of it.

A `query` or `status` run first looks for the server of its root and, when one answers, prints its
reply and exits: no click, no ranking, no store is imported. Any trouble (no socket, a dead server,
another code version, a different environment) returns None and the caller runs the command itself.

Wire format, both ways: a 4-byte big-endian length, a header (a dict in `marshal` format: built in,
so the client imports neither json nor its regular expressions), then raw bytes whose lengths the
header gives. Only the user's own processes can connect (see serve.py), and both ends run the same
interpreter and code (the version check), so marshal's format is shared.
"""
from __future__ import annotations

import _socket
import marshal
import os
import stat  # loaded by os already
import sys

from .. import __version__
from ..settings import env_flag
from ..streams import MAX_QUERY_BYTES, discard_stdout, read_stdin_query

SERVE_DIRNAME = "serve"  # inside the store: 0700, holds the socket, the lock and the log
SOCKET_NAME = "sock"
# Environment that changes what a command does must match the server's (else: not used).
ENV_PREFIX = "RETRIEVAL_"
ENV_IGNORED = {"RETRIEVAL_NO_SERVER", "RETRIEVAL_TESTS_NO_NETWORK", "RETRIEVAL_JOBS", "RETRIEVAL_PROGRESS_LINES"}
# Environment a command reads for itself alone (a default of its options): the server applies the
# caller's for that one call instead of refusing a caller whose value differs from its own.
# (RETRIEVAL_NO_SERVER too: a server started from a shell that had it said to its callers' `status`
# that it served none of them.)
ENV_PER_CALL = {"RETRIEVAL_RETRIEVER", "NO_COLOR", "FORCE_COLOR", "TERM", "RETRIEVAL_NO_SERVER"}
# Not ours, but they decide what a command does: git's per-user ignore file is found through them
# (`~/.config/git/ignore`, core.excludesFile in `~/.gitconfig`, or in the files GIT_CONFIG_GLOBAL and
# GIT_CONFIG_SYSTEM name; retrieval.discover reads the same), and `~` is the home a root is refused
# at; and where models, their caches and Java are found (`--embed-model NAME` in a Hugging Face
# cache, the embedding cache under XDG_CACHE_HOME, pi-serini's JVM). A caller whose differ runs the
# command itself.
ENV_SHARED = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
              "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME",
              "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "JAVA_HOME")
COMMANDS = ("query", "status")
# `query`'s options that take no value (a test keeps this equal to the command's): knowing them, the
# client can tell `query - --json` (the query on stdin) from `query words --path -`.
QUERY_FLAGS = frozenset({"--json", "--jsonl", "--stale-ok", "--files", "-l", "--files-with-matches", "-0", "--null",
                         "--vimgrep", "-F", "--fixed-strings", "-i", "--ignore-case", "--help", "-h"})
MAX_HEADER = 1 << 20
REPLY_TIMEOUT = 600.0
# How long a client waits for the server to start on its command: requests run one at a time, and
# one behind a slow one (a first embedding build) waited up to REPLY_TIMEOUT; it now runs itself.
STARTED_TIMEOUT = 3.0
# A reply slower than this has the client say which writer its server waits for, as the command
# itself says it after as long (retrieval.store.lock.WAIT_NOTE_AFTER, not imported: see above).
SLOW_REPLY = 0.5
# Seconds without a request before the server exits (0: never). Here, not in serve.py: the CLI
# shows it in `serve --help`, and every command then imported the server (sockets, traceback).
DEFAULT_IDLE_TIMEOUT = 1800.0


def store_dir(root: str) -> str:
    """Where root's store is; the same rule as retrieval.store.layout.store_dir (a test keeps them
    equal), repeated here so the client imports nothing of the store."""
    root = os.path.abspath(root)
    moved = os.environ.get("RETRIEVAL_INDEX_DIR")
    if moved:
        if not os.path.isabs(moved):  # refused by the command itself, which says why
            raise ValueError(f"RETRIEVAL_INDEX_DIR={moved} is a relative path: it must be absolute (or unset it)")
        from ..store.naming import store_name

        return os.path.join(os.path.abspath(moved), store_name(root))
    return os.path.join(root, ".retrieval")


def serve_dir(store: str) -> str:
    return os.path.join(store, SERVE_DIRNAME)


def socket_path(store: str) -> str:
    return os.path.join(serve_dir(store), SOCKET_NAME)


def our_socket(path: str) -> bool:
    """Whether path is a socket of this user's, not a link: a repository can commit
    `.retrieval/serve/sock` as a link to another user's socket, which was then sent every query
    (its words, the directory, the settings) and had its reply printed as the answer."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


def code_version() -> str:
    """The interpreter, the version, and the size and mtime of every module of the package: an
    edited or upgraded install never talks to a server still running the old code."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folded = 0
    archive = package
    while archive and not os.path.exists(archive):  # inside a zipapp: the archive's own stamp
        archive = os.path.dirname(archive) if os.path.dirname(archive) != archive else ""
    if archive and os.path.isfile(archive):
        st = os.stat(archive)
        for value in (len(archive), st.st_size, st.st_mtime_ns):
            folded = (folded * 1_000_003 ^ value) & 0xFFFF_FFFF_FFFF_FFFF
    stack = [package]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                st = entry.stat()
                for value in (len(entry.path), st.st_size, st.st_mtime_ns):
                    folded = (folded * 1_000_003 ^ value) & 0xFFFF_FFFF_FFFF_FFFF
            elif entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                stack.append(entry.path)
    return f"{__version__}+{folded:016x}-py{sys.hexversion:x}"


# Paths that mean a place wherever the process stands: compared (and handed to a detached server,
# which runs in the root) made absolute from the caller's working directory.
ENV_PATHS = ("RETRIEVAL_INDEX_DIR", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")


def with_absolute_paths(env: dict) -> dict:
    """`env` with its ENV_PATHS made absolute from here (a copy)."""
    return {k: os.path.abspath(v) if k in ENV_PATHS and v else v for k, v in env.items()}


def environment() -> dict:
    return with_absolute_paths({k: v for k, v in os.environ.items()
                                if (k.startswith(ENV_PREFIX) and k not in ENV_IGNORED) or k in ENV_PER_CALL
                                or k in ENV_SHARED})


def shared_environment(env: dict) -> dict:
    """What of `environment()` must match between a caller and the server."""
    return {k: v for k, v in env.items() if k not in ENV_PER_CALL}


def settings_tag(env: dict) -> str:
    """A digest of `env`'s shared_environment: a server's ping says its own (values stay unsaid:
    the ping's info is written to a file too), so a caller can tell it would not be served."""
    from ..blake import blake2b

    return blake2b(marshal.dumps(sorted(shared_environment(env).items())), digest_size=8).hexdigest()


NOT_HERE = ("that server runs other code, RETRIEVAL_* settings, HOME or XDG_CONFIG_HOME than this shell: "
            "queries from here run without it")


def serves_here(info: dict, *, asked: bool = True) -> bool:
    """Whether a running server (its ping `info`) would answer this process's commands: the same
    code and the same shared settings, as the server checks each request, and (`asked`) no
    RETRIEVAL_NO_SERVER here (the commands would not ask it)."""
    return ((not asked or not env_flag("RETRIEVAL_NO_SERVER", False)) and info.get("version") == code_version()
            and info.get("settings") == settings_tag(environment()))


def not_here() -> str:
    """Why a running server answers none of this shell's commands (serves_here is False)."""
    if env_flag("RETRIEVAL_NO_SERVER", False):
        return "RETRIEVAL_NO_SERVER is set here: queries from here run without it"
    return NOT_HERE


# -- framing -----------------------------------------------------------------------------------


def send(sock, header: dict, *payloads: bytes) -> None:
    data = marshal.dumps(header)
    sock.sendall(len(data).to_bytes(4, "big") + data + b"".join(payloads))


def _read_exact(sock, n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the connection closed early")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def header_size(prefix: bytes) -> int:
    """The header's length from a message's first 4 bytes; ValueError when over MAX_HEADER."""
    size = int.from_bytes(prefix, "big")
    if size > MAX_HEADER:
        raise ValueError("the header is too long")
    return size


# marshal's codes for what a header holds (FLAG_REF, 0x80, masked off): no payload, a fixed one
# (an int, a float, a back reference), a string after a 4-byte or a 1-byte size, a long after its
# count of 15-bit digits, a container after its count of items; a dict's items end at '0'.
_FIXED = {ord(code): size for code, size in (("N", 0), ("T", 0), ("F", 0), (".", 0), ("i", 4), ("g", 8), ("r", 4))}
_SIZED = {ord(code): width for code, width in (("s", 4), ("t", 4), ("u", 4), ("a", 4), ("A", 4), ("z", 1), ("Z", 1))}
_COUNTED = {ord(code): width for code, width in (("(", 4), ("[", 4), ("<", 4), (">", 4), (")", 1))}


def _bounded(data: bytes) -> bool:
    """Whether `data` is marshal of a header's types with every size and count within the bytes
    left. marshal.loads makes a list's slots before reading its items: 80 bytes saying a list of
    1.7 billion held a server for 39 s at 13 GB."""
    pos, end = 0, len(data)
    levels: list = [1]  # objects left to read at each level (None: a dict's, until its '0')
    while levels:
        if levels[-1] == 0:
            levels.pop()
            continue
        if pos >= end:
            return False
        code = data[pos] & 0x7F
        pos += 1
        if levels[-1] is None:
            if code == ord("0"):
                levels.pop()
                continue
        else:
            levels[-1] -= 1
        if code in _FIXED:
            pos += _FIXED[code]
        elif code in _SIZED:
            width = _SIZED[code]
            pos += width + int.from_bytes(data[pos:pos + width], "little")
        elif code == ord("l"):
            pos += 4 + 2 * abs(int.from_bytes(data[pos:pos + 4], "little", signed=True))
        elif code in _COUNTED:
            width = _COUNTED[code]
            count = int.from_bytes(data[pos:pos + width], "little")
            pos += width
            if count > end - pos:  # each item takes a byte at least
                return False
            levels.append(count)
        elif code == ord("{"):
            levels.append(None)
        else:
            return False  # code objects and the rest: no header holds them
        if pos > end:
            return False
    return True


def parse_header(data: bytes, length_fields: tuple[str, ...], limit: int) -> tuple[dict, list[int]]:
    """(header, the payload length each field gives); ValueError on a malformed header."""
    if not _bounded(data):
        raise ValueError("not a header")
    try:
        header = marshal.loads(data)
    except (EOFError, TypeError, ValueError) as exc:
        raise ValueError(f"not a header: {exc}") from None
    if not isinstance(header, dict):
        raise ValueError("the header is not a dict")
    lengths = [header.get(f, 0) for f in length_fields]
    if not all(type(n) is int and 0 <= n <= limit for n in lengths):
        raise ValueError("bad payload lengths")
    return header, lengths


def receive(sock, *length_fields: str, limit: int = 1 << 30) -> tuple[dict, list[bytes]]:
    """(header, [payload for each length field]); ValueError on a malformed message."""
    size = header_size(_read_exact(sock, 4))
    header, lengths = parse_header(_read_exact(sock, size), length_fields, limit)
    return header, [_read_exact(sock, n) for n in lengths]


# -- connecting --------------------------------------------------------------------------------


def connect(path: str, timeout: float = 2.0):
    if not hasattr(_socket, "AF_UNIX"):  # Windows, seeing the socket of a server in WSL: not ours to use
        raise OSError(f"no Unix sockets here to reach {path}")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)  # _socket: the socket module imports enum
    sock.settimeout(timeout)
    try:
        if len(path.encode("utf-8", "surrogateescape")) < 100:
            sock.connect(path)
        else:
            # sun_path holds about 107 bytes: reach a deep socket by its name relative to its directory.
            here = os.open(".", os.O_RDONLY)
            try:
                os.chdir(os.path.dirname(path))
                sock.connect(os.path.basename(path))
            finally:
                os.fchdir(here)
                os.close(here)
    except BaseException:
        sock.close()
        raise
    return sock


def call(store: str, header: dict, *payloads: bytes, timeout: float = 2.0, reply_timeout: float = REPLY_TIMEOUT,
         started_timeout: float | None = None, slow=None):
    """Send one request to store's server; its (header, [stdout, stderr]). OSError/ValueError on trouble.
    With `started_timeout`, the server must say it started on a command within that many seconds;
    `slow()` is called once when its reply then takes longer than a writer's wait note does."""
    sock = connect(socket_path(store), timeout)
    try:
        send(sock, header, *payloads)
        if started_timeout is not None:
            sock.settimeout(started_timeout)
            first = receive(sock, "stdout_len", "stderr_len")
            if not first[0].get("started"):
                return first  # refused (another version, another root): said at once
        if slow is not None:
            sock.settimeout(SLOW_REPLY)
            try:
                sock.recv(1, _socket.MSG_PEEK)  # nothing read: the reply is received whole below
            except TimeoutError:
                slow()
        sock.settimeout(reply_timeout)
        return receive(sock, "stdout_len", "stderr_len")
    finally:
        sock.close()


def writes(order, out_len: int, err_len: int) -> list[tuple[int, int, int]]:
    """(fd, start, end) of each run of a served command's output, in the order the command wrote
    them (the server's `order`: [fd, bytes] per run), so that `2>&1` reads as the command run here
    does: its notes before its results. An order that does not add up to the lengths: stdout, then
    stderr."""
    taken = {1: 0, 2: 0}
    runs = []
    try:
        for fd, n in order:
            if fd not in taken or not isinstance(n, int) or n <= 0:
                break
            runs.append((fd, taken[fd], taken[fd] + n))
            taken[fd] += n
        else:
            if taken == {1: out_len, 2: err_len}:
                return runs
    except (TypeError, ValueError):
        pass
    return [(1, 0, out_len), (2, 0, err_len)]


def suspended(pid) -> bool:
    """Whether pid (a number, or the text a server recorded: `?` is none) is a process stopped by a
    signal (Ctrl-Z, SIGSTOP): Linux's /proc; elsewhere never said."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] in (b"T", b"t")
    except (OSError, ValueError, IndexError):
        return False


def _recorded_pid(store: str) -> int | None:
    """The pid store's server recorded in its info.json, read without json (see the docstring)."""
    try:
        with open(os.path.join(serve_dir(store), "info.json"), "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return None
    at = data.find(b'"pid": ')
    digits = data[at + 7 : at + 20].split(b",")[0].split(b"}")[0].strip() if at >= 0 else b""
    return int(digits) if digits.isdigit() else None


def stopped_server(store: str) -> int | None:
    """The pid of store's server when it is suspended: it accepts a connection and reads nothing,
    so every command waited seconds for it."""
    pid = _recorded_pid(store)
    return pid if pid is not None and suspended(pid) else None


def probe(store: str, *, reply_timeout: float = 5.0, busy: bool = False) -> dict | None:
    """The server's description ({pid, root, version, ...}) when one answers for store, else None.
    `busy`: a server that does not answer in time, its socket ours and the pid it recorded alive,
    is described as {pid, busy: True} (it answers one request at a time: `status` beside a long
    query waited 8 s and then said no server ran)."""
    from . import serving  # this very process may be the server (it must not call itself)

    if serving.STORE is not None and os.path.abspath(store) == serving.STORE:
        return dict(serving.INFO)
    if not our_socket(socket_path(store)) or stopped_server(store) is not None:
        return None
    if busy and store in _BUSY:  # it did not start this process's own command in time
        return _busy(store)
    try:
        header, _ = call(store, {"op": "ping"}, reply_timeout=reply_timeout)
    except TimeoutError:
        return _busy(store) if busy else None
    except (OSError, ValueError):
        return None
    return header.get("info") if header.get("ok") else None


_BUSY: set[str] = set()  # stores whose server did not start a command of this process in time


def _busy(store: str) -> dict | None:
    pid = _recorded_pid(store)
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # alive, another user's (its socket would not be ours)
    except OSError:
        return None
    return {"pid": pid, "busy": True}


def option_argument(argv: list[str], option: str) -> str | None:
    """The value an argument list gives `option` (`--root DIR` or `--root=DIR`): the last one, as
    click takes it; none among the words after `--`."""
    given = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == option and i + 1 < len(argv):
            given = argv[i + 1]
        elif arg.startswith(option + "="):
            given = arg[len(option) + 1:]
    return given


def root_argument(argv: list[str]) -> str | None:
    """The --root an argument list names (the first one sent a query for another root to this
    root's server, which then indexed that root in its own process)."""
    return option_argument(argv, "--root")


def _root_of(argv: list[str]) -> str | None:
    """The --root an argument list names, else the directory whose store the command would use
    (see retrieval.roots), or its repository root."""
    given = root_argument(argv)
    if given is not None:
        return given
    here = os.getcwd()
    repository = None
    while True:
        # As retrieval.roots.find_root: the nearest store, not above the repository we are in
        # unless it is a repository's too.
        is_repository = os.path.exists(os.path.join(here, ".git"))
        if (repository is None or is_repository) and os.path.isdir(store_dir(here)):
            return here
        if is_repository and repository is None:
            repository = here
        parent = os.path.dirname(here)
        if parent == here:
            return repository
        here = parent


def query_from_stdin(argv: list[str]) -> bool:
    """Whether a `query` command line reads its query from stdin: its only word is `-`."""
    words: list[str] = []
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--":
            words.extend(rest)
        elif arg == "-" or not arg.startswith("-"):
            words.append(arg)
        elif arg[1] != "-" and len(arg) > 2:  # short options together (`-ie PATTERN`, `-k5`)
            if _cluster_takes_next(arg):
                next(rest, None)
        elif arg not in QUERY_FLAGS and "=" not in arg:
            next(rest, None)  # an option's value (`--path -` is a glob, not stdin)
    return words == ["-"]


def _cluster_takes_next(arg: str) -> bool:
    """Whether short options written together take the next word as a value, as click reads them:
    flags up to the first option with a value, which takes the rest of the word (`-k5`, `-ei`) or,
    when it ends the word (`-ie`, `-Fie`), the next one."""
    for n, letter in enumerate(arg[1:], start=1):
        if "-" + letter not in QUERY_FLAGS:
            return n == len(arg) - 1
    return False


def try_run(argv: list[str]) -> int | None:
    """Run a `query`/`status` command line on root's server: write its output, return its exit
    status. None (nothing written) when no usable server answered."""
    if argv and argv[0] == "search":  # (the command line's alias of query: served as query is)
        argv = ["query", *argv[1:]]
    # Read as every RETRIEVAL_* yes/no setting is: `maybe` is named on stderr, not taken as yes.
    if not argv or argv[0] not in COMMANDS or env_flag("RETRIEVAL_NO_SERVER", False):
        return None
    stdin = None
    reply: dict = {}
    try:
        root = _root_of(argv)
        store = store_dir(root) if root is not None else ""
        stopped = stopped_server(store) if root is not None else None
        if stopped is not None and argv[0] == "query" and sys.stderr is not None:  # `status` shows it
            sys.stderr.write(f"note: the server of this root (pid {stopped}) is stopped (Ctrl-Z?); answering "
                             f"without it (`kill -CONT {stopped}`, or `retrieval serve --stop`)\n")
        if root is not None and stopped is None and our_socket(socket_path(store)):
            if argv[0] == "query" and query_from_stdin(argv):
                stdin = read_stdin_query()
                if len(stdin) > MAX_QUERY_BYTES:
                    raise ValueError("the query is too long")  # the command itself says so
            header = {"op": "run", "argv": argv, "cwd": os.getcwd(), "version": code_version(),
                      "env": environment(), "encodings": _encodings(), "stdin_len": len(stdin or b"")}
            said: list[bytes] = []
            slow = (lambda: said.append(_say_writer(store))) if argv[0] == "query" else None
            try:
                reply, (out, err) = call(store, header, stdin or b"", started_timeout=STARTED_TIMEOUT, slow=slow)
            except TimeoutError:
                _BUSY.add(store)  # answered here; `status` says so without pinging it again (see probe)
                raise
            if said and said[0]:  # the command's own note of that wait, in its stderr: said once
                err = err.replace(said[0], b"", 1)
    except (OSError, ValueError, UnicodeError):
        reply = {}
    if not reply.get("ok") or not isinstance(reply.get("code"), int):
        if stdin is not None:  # the query was read from stdin: leave it there for the caller
            sys.stdin = _replay(stdin)
        return None
    try:
        streams = {1: (sys.stdout, out), 2: (sys.stderr, err)}
        for fd, start, end in writes(reply.get("order"), len(out), len(err)):
            stream, data = streams[fd]
            if stream is None:  # closed when the command started
                continue
            try:
                stream.flush()
                stream.buffer.write(data[start:end])
                stream.buffer.flush()
            except OSError:
                if fd == 1:
                    raise
                streams[2] = (None, err)  # notes that cannot be written are dropped, never the results
    except BrokenPipeError:  # `| head -1`, as the command itself ends: quietly
        discard_stdout()
        return 0
    except OSError as exc:  # a full disk behind stdout
        discard_stdout()
        if sys.stderr is not None:
            sys.stderr.write(f"error: cannot write the output: {exc.strerror or exc}\n")
        return 1
    return reply["code"]


def _say_writer(store: str) -> bytes:
    """While a query's server waits for another process writing the index (a first build, which a
    query waits out), say so as the command itself does: the server's notes come with its answer,
    and a query behind a build of minutes was silent all along."""
    from ..store.lock import wait_note, writer

    lock = os.path.join(store, "lock")  # layout.lock_path (the client imports nothing of the layout)
    found = writer(lock)
    if found is None or sys.stderr is None:
        return b""
    pid = found[0]
    if pid is not None and pid == _recorded_pid(store):
        return b""  # the server's own refresh, for this query: the command itself would not say it waits
    line = wait_note(pid, lock) + "\n"
    sys.stderr.write(line)
    sys.stderr.flush()
    return line.encode("utf-8", "surrogateescape")


def _encodings() -> dict:
    """How this process's streams encode text, and which are terminals (colour, progress): the
    server writes the same bytes."""
    out = {}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name, None)
        out[name] = getattr(stream, "encoding", None)
        out[name + "_errors"] = getattr(stream, "errors", None)
        try:
            out[name + "_tty"] = bool(stream.isatty())
        except (AttributeError, ValueError, OSError):
            out[name + "_tty"] = False
    return out


def _replay(data: bytes):
    import io

    return io.TextIOWrapper(io.BytesIO(data), encoding=getattr(sys.stdin, "encoding", None) or "utf-8")
