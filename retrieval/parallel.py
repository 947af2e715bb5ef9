"""Map a function over a long stream with worker processes: in order, with bounded memory.

Indexing is CPU-bound pure Python, so threads would not help; worker processes use the other
cores. Short streams (a refresh of a few files) stay in-process: starting workers costs more than
it saves there.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from itertools import chain, islice
from typing import Callable, Iterable, Iterator, TypeVar

from .settings import env_int

T = TypeVar("T")
R = TypeVar("R")

ENV_JOBS = "RETRIEVAL_JOBS"


class WorkerLost(RuntimeError):
    """A worker process died (killed, out of memory): nothing about the index is wrong."""


def default_jobs() -> int:
    """Worker processes to use: $RETRIEVAL_JOBS, else the CPUs this process may run on (at most 4:
    this process reads the files and builds the postings, so more workers would mostly wait)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    # At most a few per CPU: RETRIEVAL_JOBS=1000 started 992 processes for 200 files (24 s, not 1.5).
    return env_int(ENV_JOBS, max(1, min(n, 4)), minimum=1, maximum=max(8, 4 * n))


_PR_SET_PDEATHSIG = 1  # linux/prctl.h

# Workers being forked now (by any thread): only those forks get standard streams of their own.
_FORKING = 0
_FORKING_LOCK = threading.Lock()
_KEPT: list = []  # in a worker: the parent's standard streams, never to be finalized there


def _own_std_streams() -> None:
    """In a worker just forked: standard streams of its own, before multiprocessing's start closes
    stdin and flushes stdout and stderr. A lock another thread of the parent held at the fork stays
    held in the child: under `retrieval mcp` the SDK's reader thread sits in a read of stdin, and a
    refresh of 64 files or more hung in its workers' start (the writer lock kept by them, the server
    never answering). The parent's stream objects are kept, untouched: dropped, the last reference
    to one finalizes it, and its close waits on that lock too. A worker exits by os._exit."""
    if not _FORKING:
        return
    _KEPT.extend((sys.stdin, sys.stdout, sys.stderr))
    sys.stdin = None  # nothing to close (multiprocessing's start skips a None stdin)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        try:
            stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        except (OSError, ValueError):  # started with the descriptor closed
            stream = None
        setattr(sys, name, stream)


if hasattr(os, "register_at_fork"):  # POSIX; where there is no fork, workers are spawned fresh
    os.register_at_fork(after_in_child=_own_std_streams)


def _start(process) -> None:
    global _FORKING
    with _FORKING_LOCK:
        _FORKING += 1
    try:
        process.start()
    finally:
        with _FORKING_LOCK:
            _FORKING -= 1


def _die_with(parent: int) -> None:
    """Ask the kernel to kill this process when its parent dies (Linux); then check that the parent
    did not die before the request was made (the process would have been adopted by then)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the liveness checks in _worker still end it
    if os.getppid() != parent:
        os._exit(1)


def _close_inherited(keep: int) -> None:
    """Close every descriptor a fork copied from the parent except stdio and our own pipe end: the
    store's writer lock (a flock lives while any copy of its descriptor is open) and the siblings'
    pipe ends (a worker holding one keeps that sibling from ever seeing its parent go)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        try:
            limit = os.sysconf("SC_OPEN_MAX")
        except (OSError, ValueError):
            limit = 4096
        os.closerange(3, keep)
        os.closerange(keep + 1, max(limit, keep + 2))
        return
    for fd in fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the descriptor listdir itself used


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _block_stops() -> object:
    """Hold Ctrl-C and SIGTERM back while a worker starts; the previous mask, to restore. The worker
    inherits them blocked until it has set its own handlers (arriving before, each printed a
    KeyboardInterrupt traceback); this process gets them once the worker is in the list it ends."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)


def _worker(fn: Callable, conn, parent: int, forked: bool = True) -> None:
    # Ctrl-C reaches the whole process group: let the parent handle it, not every worker. A SIGTERM
    # to the group ends a worker at once (the parent's handler, inherited, would print a traceback).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # blocked by the parent (_block_stops)
    _die_with(parent)
    if forked:  # a spawned worker (Windows) inherited nothing to close
        _close_inherited(conn.fileno())
    while True:
        # Where the kernel cannot kill us with the parent, notice that it went (we were adopted).
        try:
            while not conn.poll(1.0):
                if os.getppid() != parent:
                    return
            batch = conn.recv()
        except (EOFError, OSError):
            return  # the parent went away
        if batch is None:
            return
        try:
            reply = ("ok", [fn(item) for item in batch])
        except Exception as exc:  # handed to the parent, which raises it
            reply = ("error", exc)
        try:
            conn.send(reply)
        except (BrokenPipeError, EOFError, OSError):
            return
        except Exception as exc:  # an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    jobs: int | None = None,
    serial_below: int = 64,
    batch_size: int = 16,
) -> Iterator[R]:
    """fn(item) for every item, in order. `fn` and the items must pickle (a module-level function).

    Once the stream proves to hold at least `serial_below` items, batches of `batch_size` go to
    `jobs` worker processes, one batch per worker at a time, so only a bounded part of the stream
    is in memory however long it is. Items are pulled from `items`, and results consumed, in this
    process, while the workers compute. All the messaging happens on this thread: a helper thread
    (as in concurrent.futures) would have to win the GIL from it to feed the workers.
    """
    jobs = default_jobs() if jobs is None else jobs
    it = iter(items)
    head = list(islice(it, serial_below))
    if jobs <= 1 or len(head) < serial_below:
        yield from map(fn, head)
        yield from map(fn, it)
        return
    import multiprocessing

    # fork: workers start in milliseconds; what they inherit is closed first thing (_worker).
    # Where there is no fork (Windows), and on macOS, spawn: `fn` and the items pickle, the workers
    # import them. macOS forks, but a child forked after the parent loaded a system framework (torch's
    # Accelerate, a JVM, CoreFoundation) may crash or hang, so its Python spawns by default too.
    forked = sys.platform != "darwin" and "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if forked else "spawn")
    workers = []
    try:
        for _ in range(jobs):
            parent_end, child_end = context.Pipe()
            process = context.Process(target=_worker, args=(fn, child_end, os.getpid(), forked), daemon=True)
            mask = _block_stops()
            try:
                _start(process)
            except OSError:
                # fork refused (EAGAIN at a process limit, ENOMEM): the work goes to the workers that
                # did start, or to this process. It failed the build as if the store could not be written.
                parent_end.close()
                child_end.close()
                break
            finally:
                if mask is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            child_end.close()
            workers.append((process, parent_end))
        stream = chain(head, it)
        if not workers:
            yield from map(fn, stream)
            return
        jobs = len(workers)
        in_flight: deque[int] = deque()  # worker numbers, in the order their batches were sent
        for w in range(jobs):
            batch = list(islice(stream, batch_size))
            if not batch:
                break
            _send(workers[w][1], batch)
            in_flight.append(w)
        while in_flight:
            w = in_flight.popleft()
            try:
                status, payload = workers[w][1].recv()
            except (EOFError, OSError):
                raise _lost() from None
            if status != "ok":
                raise payload
            # Keep the worker busy while the caller consumes this batch's results.
            batch = list(islice(stream, batch_size))
            if batch:
                _send(workers[w][1], batch)
                in_flight.append(w)
            yield from payload
    finally:
        for _process, conn in workers:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
        for process, _conn in workers:
            if not _exited(process, 5.0):
                process.terminate()
                # SIGTERM can be caught and ignored: a worker forked from a process hosting a JVM
                # (the pi-serini extra) inherits the JVM's handler.
                if not _exited(process, 2.0):
                    process.kill()
            process.join()


def _lost() -> WorkerLost:
    return WorkerLost(f"a worker process stopped unexpectedly (killed, or out of memory?); "
                      f"{ENV_JOBS}=1 builds without workers")


def _send(conn, batch) -> None:
    """Send a worker its next batch. One killed after its last reply breaks the pipe here, not at
    the next receive: the caller took that OSError for the store's (a full disk)."""
    try:
        conn.send(batch)
    except OSError:
        raise _lost() from None


def _exited(process, seconds: float) -> bool:
    """Whether the worker exits within `seconds`. Polled: `join(timeout)` waits on a pipe that the
    worker closed with every other inherited descriptor (_close_inherited), so it returned at once
    and the wait after it blocked for as long as the worker lived."""
    deadline = time.monotonic() + seconds
    while process.exitcode is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
