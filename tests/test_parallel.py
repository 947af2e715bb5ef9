"""ordered_map: worker processes for long streams, in order, with a bounded part in flight."""
from __future__ import annotations

import os
import signal

import pytest

from retrieval import parallel, service

from test_service import MANY_QUERIES, assert_same_hits, module_text


def square_and_pid(x):
    return x * x, os.getpid()


def test_a_short_stream_stays_in_process():
    out = list(parallel.ordered_map(square_and_pid, range(10), jobs=2, serial_below=64))
    assert [v for v, _ in out] == [x * x for x in range(10)]
    assert {pid for _, pid in out} == {os.getpid()}


def test_a_long_stream_uses_workers_and_keeps_the_order():
    out = list(parallel.ordered_map(square_and_pid, range(500), jobs=2, serial_below=20, batch_size=7))
    assert [v for v, _ in out] == [x * x for x in range(500)]
    assert os.getpid() not in {pid for _, pid in out}


@pytest.mark.parametrize("refused_from", [0, 1])
def test_a_worker_the_system_refuses_to_start_leaves_the_work_to_the_others_or_to_this_process(monkeypatch, refused_from):
    """fork failing (EAGAIN at a process limit) failed the build as an error of the store."""
    import errno
    import multiprocessing.process

    started = []
    start = multiprocessing.process.BaseProcess.start

    def limited(self):
        if len(started) >= refused_from:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        started.append(self)
        start(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", limited)
    out = list(parallel.ordered_map(square_and_pid, range(200), jobs=3, serial_below=20, batch_size=7))
    assert [v for v, _ in out] == [x * x for x in range(200)]
    pids = {pid for _, pid in out}
    assert pids == ({os.getpid()} if refused_from == 0 else {started[0].pid})


def test_only_a_bounded_part_of_the_stream_is_pulled_ahead():
    pulled = []

    def items():
        for x in range(10_000):
            pulled.append(x)
            yield x

    results = parallel.ordered_map(square_and_pid, items(), jobs=2, serial_below=20, batch_size=5)
    next(results)
    assert len(pulled) <= 20 + (2 * 2 + 1) * 5
    results.close()


def fail_on_13(x):
    if x == 13:
        raise ValueError("thirteen")
    return x


def test_an_error_in_a_worker_is_raised_here_and_the_workers_are_gone():
    import multiprocessing

    import pytest

    with pytest.raises(ValueError, match="thirteen"):
        list(parallel.ordered_map(fail_on_13, range(100), jobs=2, serial_below=10, batch_size=4))
    assert multiprocessing.active_children() == []


def test_stopping_early_stops_the_workers():
    import multiprocessing

    results = parallel.ordered_map(square_and_pid, range(1000), jobs=2, serial_below=10, batch_size=4)
    assert next(results)[0] == 0
    results.close()
    assert multiprocessing.active_children() == []


def deaf_and_stuck(x):
    """From item 4 on (the second worker's first batch): ignore SIGTERM and never finish."""
    import signal
    import time

    if x >= 4:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    return x


def test_a_worker_that_ignores_sigterm_is_killed_when_the_caller_stops():
    import multiprocessing
    import threading

    results = parallel.ordered_map(deaf_and_stuck, range(100), jobs=2, serial_below=10, batch_size=4)
    assert next(results) == 0
    closer = threading.Thread(target=results.close, daemon=True)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "stopping waited forever for a worker that ignores SIGTERM"
    assert multiprocessing.active_children() == []


def test_jobs_come_from_the_environment(monkeypatch):
    monkeypatch.setenv(parallel.ENV_JOBS, "3")
    assert parallel.default_jobs() == 3
    monkeypatch.setenv(parallel.ENV_JOBS, "0")
    assert parallel.default_jobs() >= 1


def test_a_parallel_build_ranks_exactly_like_a_serial_one(make_tree, monkeypatch):
    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(90)}
    monkeypatch.setenv(parallel.ENV_JOBS, "1")
    serial = make_tree(files, name="serial")
    service.refresh(str(serial))
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    parallel_root = make_tree(files, name="parallel")
    service.refresh(str(parallel_root))
    for query in MANY_QUERIES:
        assert_same_hits(service.search(str(parallel_root), query, top_k=100).hits,
                         service.search(str(serial), query, top_k=100).hits)


def sigterm_handling(_x):
    import signal

    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_worker_ends_at_once_on_sigterm_whatever_handler_its_parent_set(monkeypatch):
    """The CLI turns SIGTERM into its cleanup; workers inheriting that printed a traceback each."""
    import signal

    from retrieval.shell import _raise_terminated

    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        out = list(parallel.ordered_map(sigterm_handling, range(100), jobs=2, serial_below=20))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert out and all(out)


def _indexed_then_all_touched(make_tree, monkeypatch):
    """A 90-file tree indexed without workers, then every file changed (a refresh big enough for
    workers, which RETRIEVAL_JOBS=2 then allows): (root, the hits of the index built first)."""
    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(90)}
    root = make_tree(files)
    monkeypatch.setenv(parallel.ENV_JOBS, "1")
    service.refresh(str(root))
    before = service.search(str(root), "mod_50", top_k=5).hits
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    for path in files:
        (root / path).write_text(files[path] + "\n# touched\n")
    return root, before


def _a_worker_killed_on(monkeypatch, path: str) -> None:
    """The worker that extracts the terms of `path` is killed, as the OOM killer would."""
    import signal

    from retrieval.retrievers import lexical

    original = lexical._file_documents

    def killed_on_one_file(item):
        if item[0] == path:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(item)

    monkeypatch.setattr(lexical, "_file_documents", killed_on_one_file)


def test_a_killed_worker_fails_the_refresh_without_calling_the_index_damaged(make_tree, monkeypatch):
    """It said 'the lexical index is damaged; rebuilding it' and built everything twice."""
    import pytest

    root, before = _indexed_then_all_touched(make_tree, monkeypatch)
    _a_worker_killed_on(monkeypatch, "pkg/mod_50.py")
    said = []
    with pytest.raises(parallel.WorkerLost):
        service.refresh(str(root), progress=said.append)
    assert not any("damaged" in line for line in said)
    monkeypatch.undo()  # workers that live
    assert_same_hits(service.search(str(root), "mod_50", top_k=5, stale_ok=True).hits, before)


def test_a_worker_killed_between_batches_fails_the_refresh_as_a_lost_worker_not_as_the_store(make_tree, monkeypatch):
    """Killed while idle, its last reply already sent: the next batch sent to it broke the pipe, and
    the refresh said `cannot update the index at ...: Broken pipe`, as for a full disk."""
    import multiprocessing
    import time

    root, before = _indexed_then_all_touched(make_tree, monkeypatch)
    real_read = service.read_source
    reads = []

    def read_killing_the_workers(file, max_bytes=None):
        # Read in this process as a batch is made up (the first 64 files are read before any worker
        # starts): kill every worker and wait until each is gone, so that batch goes to a dead one.
        reads.append(file.path)
        if len(reads) == 70:
            for worker in multiprocessing.active_children():
                os.kill(worker.pid, signal.SIGKILL)
                while worker.exitcode is None:
                    time.sleep(0.01)
        return real_read(file, max_bytes)

    monkeypatch.setattr(service, "read_source", read_killing_the_workers)
    with pytest.raises(parallel.WorkerLost):
        service.refresh(str(root))
    assert multiprocessing.active_children() == []
    monkeypatch.setattr(service, "read_source", real_read)
    assert_same_hits(service.search(str(root), "mod_50", top_k=5, stale_ok=True).hits, before)


STOPPED_WHILE_WORKERS_START = """
import os, signal, sys
from multiprocessing import util
from retrieval import parallel
from retrieval.shell import _raise_terminated

signum, once = int(sys.argv[1]), sys.argv[2]
signal.signal(signal.SIGTERM, _raise_terminated)  # as the CLI does
# As in a shell's foreground job: a runner started in the background left SIGINT ignored, and the
# map ran to its end (exit 0).
signal.signal(signal.SIGINT, signal.default_int_handler)


class Hook:
    pass


def stop_the_group(_hook):
    # One signal, as from a terminal or `kill -TERM -PGID` (a second SIGTERM ends the cleanup too).
    try:
        os.close(os.open(once, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    os.killpg(0, signum)


hook = Hook()
# In the first new worker, before any code of ours runs in it: the signal reaches the whole group.
util.register_after_fork(hook, stop_the_group)
try:
    list(parallel.ordered_map(abs, range(200), jobs=2, serial_below=10, batch_size=4))
except KeyboardInterrupt:
    sys.exit(128 + signum)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_while_workers_start_stops_the_caller_without_a_traceback_from_them(signum, tmp_path):
    """A starting worker had not yet set its handlers: each printed a KeyboardInterrupt traceback."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", STOPPED_WHILE_WORKERS_START, str(int(signum)), str(tmp_path / "once")],
                          capture_output=True, text=True, timeout=120, start_new_session=True)
    assert done.returncode == 128 + signum, done.stderr
    assert "Traceback" not in done.stderr


def test_a_query_whose_refresh_loses_a_worker_answers_from_the_previous_snapshot_with_a_note(make_tree, monkeypatch):
    """As on a full disk: the query failed, though the committed index could answer it."""
    root, before = _indexed_then_all_touched(make_tree, monkeypatch)
    _a_worker_killed_on(monkeypatch, "pkg/mod_50.py")
    result = service.search(str(root), "mod_50", top_k=5)
    assert result.stale
    assert any("a worker process stopped unexpectedly" in note for note in result.notes)
    assert_same_hits(result.hits, before)


WHILE_A_THREAD_READS_STDIN = """
import os, sys, threading, time
from retrieval import parallel

reading = threading.Event()
r, w = os.pipe()
sys.stdin = open(r)  # the only reference: dropped in a worker, it would be finalized there

def read():
    reading.set()
    sys.stdin.read()  # blocks, holding the stream's lock (as the MCP SDK's reader thread does)

threading.Thread(target=read, daemon=True).start()
reading.wait()
time.sleep(0.2)
print(sum(parallel.ordered_map(abs, range(-200, 0), jobs=2, serial_below=10)), flush=True)
"""


def test_workers_start_while_another_thread_sits_in_a_read_of_stdin():
    """Under `retrieval mcp`, a forked worker inherited stdin's lock held by the SDK's reader thread;
    multiprocessing's start closes stdin, and the worker (and the build, and its index lock) hung."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", WHILE_A_THREAD_READS_STDIN], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the workers too
        proc.communicate()
        pytest.fail("the workers never started")
    assert proc.returncode == 0 and out.strip() == "20100", err
