"""Off Linux: what macOS and Windows lack (fork, /proc, fcntl, os.register_at_fork, Unix sockets),
simulated here by hiding it, must leave the commands working or failing with one clear line."""
from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import subprocess
import sys

import pytest

from retrieval import parallel


def _spawn_only(monkeypatch) -> None:
    """Worker processes start as on Windows: spawned (a fresh interpreter), fork unavailable."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(multiprocessing.context._default_context, "_actual_context",
                        multiprocessing.get_context("spawn"))


@pytest.fixture
def spawn_only(monkeypatch):
    _spawn_only(monkeypatch)


def test_spawned_workers_on_a_system_without_proc_or_sysconf_do_the_work(spawn_only):
    """Windows: a worker's first step listed /proc/self/fd, then called os.sysconf (absent there):
    every worker died, and every build of 64 files or more failed as `a worker process stopped`."""
    from windows_like_worker import square

    out = list(parallel.ordered_map(square, range(100), jobs=2, serial_below=10, batch_size=8))
    assert out == [x * x for x in range(100)]
    assert multiprocessing.active_children() == []


def test_on_macos_workers_are_spawned_though_fork_exists(monkeypatch):
    """A child forked after the parent loaded a system framework (torch's Accelerate, a JVM) may
    crash or hang on macOS, whose Python spawns by default for that reason: so do our workers."""
    import multiprocessing.popen_spawn_posix

    from windows_like_worker import square

    started = []
    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "_Popen",
                        staticmethod(lambda process: started.append(process) or
                                     multiprocessing.popen_spawn_posix.Popen(process)))
    monkeypatch.setattr(parallel.sys, "platform", "darwin")
    out = list(parallel.ordered_map(square, range(100), jobs=2, serial_below=10, batch_size=8))
    assert out == [x * x for x in range(100)] and len(started) == 2


def test_a_build_with_spawned_workers_ranks_exactly_like_one_with_forked_workers(make_tree, monkeypatch):
    """macOS's and Windows' way of starting workers: nothing may come from globals a fork inherits."""
    import multiprocessing.popen_spawn_posix

    from retrieval import service

    from test_service import MANY_QUERIES, assert_same_hits, module_text

    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(70)}
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    forked = make_tree(files, name="forked")
    service.refresh(str(forked))
    _spawn_only(monkeypatch)
    started = []
    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "_Popen",
                        staticmethod(lambda process: started.append(process) or
                                     multiprocessing.popen_spawn_posix.Popen(process)))
    spawned = make_tree(files, name="spawned")
    service.refresh(str(spawned))
    assert started, "the build used no spawned worker"
    for query in MANY_QUERIES:
        assert_same_hits(service.search(str(spawned), query, top_k=100).hits,
                         service.search(str(forked), query, top_k=100).hits)


def test_the_syntax_chunker_imports_where_os_has_no_register_at_fork():
    """Windows has no os.register_at_fork: `--retriever treesitter` failed with an AttributeError
    traceback at import (the extra's wheels exist for Windows)."""
    code = "import os; del os.register_at_fork; import retrieval.chunking.ast; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("how", [[], ["--detach"]], ids=["foreground", "detached"])
def test_serve_where_there_are_no_unix_sockets_fails_with_one_line(run, sample_repo, monkeypatch, how):
    """Windows' Python has no socket.AF_UNIX: `serve` failed with an AttributeError traceback."""
    import socket

    from retrieval.server import serve

    monkeypatch.delattr(socket, "AF_UNIX")
    try:
        result = run("serve", "--root", str(sample_repo), *how)
    finally:
        serve.stop(str(sample_repo))  # a detached one started all the same
    assert result.exit_code == 1 and not isinstance(result.exception, AttributeError)
    assert result.stderr.startswith("error: `retrieval serve` needs Unix domain sockets")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


# In a process of its own, so that os.O_BINARY exists before retrieval is imported (its modules
# take their flags then): every regular file opened without it is listed on stdout at exit.
WINDOWS_TEXT_MODE = """
import atexit, os, stat, sys
FAKE = 1 << 30  # O_BINARY, as Windows has it; taken off again before the real open
os.O_BINARY = FAKE
real_open, text_mode = os.open, []

def windows_open(path, flags, mode=0o777, *, dir_fd=None):
    fd = real_open(path, flags & ~FAKE, mode, dir_fd=dir_fd)
    if not flags & FAKE and stat.S_ISREG(os.fstat(fd).st_mode) and os.path.basename(path) != "lock":
        text_mode.append(os.path.basename(path).split("-")[0] + "-*" if ".tmp-" in path else os.path.basename(path))
    return fd

os.open = windows_open
atexit.register(lambda: print(" ".join(sorted(set(text_mode)))))
from retrieval.entry import main
sys.argv = ["retrieval", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", [["index"], ["query", "parse config", "--snippet-lines", "3"]])
def test_every_file_read_or_written_is_opened_in_binary_mode_where_text_mode_exists(make_tree, command):
    """Windows opens a descriptor in text mode unless given O_BINARY: the store's temporary files
    (every segment, every manifest) were written with each b"\\n" turned into b"\\r\\n", snippets and
    ignore files read with CRLF folded and cut at the first ^Z."""
    from conftest import SAMPLE_FILES

    root = make_tree({**SAMPLE_FILES, ".gitignore": "*.log\\r\\n", "bin/deploy": "#!/bin/sh\\necho deploy\\n"})
    if command[0] == "query":  # answering from the index built by a process of ours
        subprocess.run([sys.executable, "-m", "retrieval", "index", "--root", str(root)], capture_output=True,
                       timeout=120, check=True)
    done = subprocess.run([sys.executable, "-c", WINDOWS_TEXT_MODE, *command, "--root", str(root)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "RETRIEVAL_NO_SERVER": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "", f"opened in text mode: {done.stdout.splitlines()[-1]}"


def test_model_written_contexts_are_cached_where_there_is_no_fcntl(tmp_path, monkeypatch):
    """Windows has no fcntl: adding a context to the shared cache raised ModuleNotFoundError, which
    failed the `lexical+ctx` build (only an OSError of that cache is passed over)."""
    from retrieval.contextual.cache import ContextCache

    monkeypatch.setitem(sys.modules, "fcntl", None)
    cache = ContextCache(str(tmp_path / "store"), shared=str(tmp_path / "shared"))
    cache.put("model", 1, "d" * 64, "1-3", "the context")
    assert ContextCache(str(tmp_path / "other"), shared=str(tmp_path / "shared")).get("model", 1, "d" * 64) == {
        "1-3": "the context"}


class _WindowsLocks:
    """msvcrt's byte-range locks as Windows has them (the range starts at the file position; a range
    held by another handle fails at once with EACCES), made here of flock."""

    LK_UNLCK, LK_NBLCK = 0, 2

    @staticmethod
    def locking(fd: int, mode: int, nbytes: int) -> None:
        import errno
        import fcntl

        assert os.lseek(fd, 0, os.SEEK_CUR) == 0 and nbytes == 1
        if mode == _WindowsLocks.LK_UNLCK:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PermissionError(errno.EACCES, "Permission denied") from None


def test_the_writer_lock_keeps_a_second_writer_out_where_there_is_no_flock(tmp_path, monkeypatch):
    """Windows has no fcntl: the lock was no lock at all, and two processes refreshing one index
    wrote it at once (each committing, and collecting as garbage, what the other had written)."""
    from retrieval.store import lock

    monkeypatch.setattr(lock, "fcntl", None)
    monkeypatch.setattr(lock, "msvcrt", _WindowsLocks, raising=False)
    real_utime = os.utime

    def utime_by_name_only(path, *args, **kwargs):  # Windows sets no time through a descriptor
        if isinstance(path, int):
            raise TypeError("utime: path should be string, bytes or os.PathLike, not int")
        return real_utime(path, *args, **kwargs)

    monkeypatch.setattr(os, "utime", utime_by_name_only)
    monkeypatch.setattr(os, "supports_fd", os.supports_fd - {real_utime})
    path = str(tmp_path / "lock")
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY))
    real_utime(path, (0, 0))  # a lock file left by an earlier writer
    first, second = lock.WriterLock(path), lock.WriterLock(path)
    first.acquire()
    try:
        assert os.stat(path).st_mtime > 1e9  # stamped when taken: waiters count from then
        with pytest.raises(lock.LockBusy, match="another process is writing"):
            second.acquire(timeout=0.1)
    finally:
        first.release()
    second.acquire(timeout=0)
    second.release()


def test_query_and_status_where_there_are_no_unix_sockets_ignore_a_socket_in_the_store(run, sample_repo, monkeypatch):
    """A tree shared with WSL holds the socket of a server running there; Windows' Python, which
    has no AF_UNIX, met it with an AttributeError traceback instead of answering in process."""
    import _socket

    from retrieval.server import client
    from retrieval.store import layout

    assert run("index", "--root", str(sample_repo)).exit_code == 0
    store = layout.store_dir(str(sample_repo))
    os.makedirs(os.path.dirname(client.socket_path(store)), exist_ok=True)
    open(client.socket_path(store), "wb").close()
    monkeypatch.delattr(_socket, "AF_UNIX")
    assert client.try_run(["query", "--root", str(sample_repo), "parse config"]) is None
    status = run("status", "--root", str(sample_repo))
    assert status.exit_code == 0 and status.exception is None, status.stderr


def test_a_windows_path_in_a_message_keeps_its_single_backslashes(monkeypatch):
    """Every message naming a path on Windows (`indexing C:\\\\Users\\\\me\\\\repo`, status's root line)
    doubled its separators, as if each were a backslash inside a name."""
    from retrieval.output import shown_path

    monkeypatch.setattr(os, "sep", "\\")
    assert shown_path("C:\\Users\\me\\repo") == "C:\\Users\\me\\repo"
    assert shown_path("C:\\Users\\me\\new\nline.py") == "C:\\\\Users\\\\me\\\\new\\nline.py"  # not a Windows name


# `python -m retrieval` (runpy, as -m runs it) with the workers spawned: a spawned worker imports
# the main module again, and retrieval/__main__.py calls main() unguarded (multiprocessing leaves
# a package's __main__ alone; a change of how it is started must keep that true).
SPAWNED_MODULE_RUN = """
import multiprocessing, runpy, sys
multiprocessing.get_all_start_methods = lambda: ["spawn"]
multiprocessing.set_start_method("spawn")
sys.argv = ["retrieval", *sys.argv[1:]]
runpy.run_module("retrieval", run_name="__main__", alter_sys=True)
"""


def test_python_dash_m_builds_with_spawned_workers_and_answers_as_with_forked_ones(make_tree):
    from test_service import module_text

    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(70)}
    env = {**os.environ, "RETRIEVAL_JOBS": "2", "RETRIEVAL_NO_SERVER": "1"}
    answers = []
    for name, how in (("spawned", ["-c", SPAWNED_MODULE_RUN]), ("forked", ["-m", "retrieval"])):
        root = make_tree(files, name=name)
        done = subprocess.run([sys.executable, *how, "query", "compute total", "--root", str(root), "--json",
                               "--top-k", "50"], capture_output=True, text=True, timeout=120, env=env, cwd=root)
        assert done.returncode == 0, done.stderr[-2000:]
        answers.append(done.stdout)
    assert answers[0] == answers[1] and '"results": [{' in answers[0]


def test_the_warm_indexes_of_mcp_import_where_os_has_no_o_nonblock():
    """Windows has no os.O_NONBLOCK: the file watcher's module read it at import, and `retrieval mcp`
    (which keeps indexes warm with it) failed with an AttributeError traceback."""
    code = "import os; del os.O_NONBLOCK; import retrieval.server.warm; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
