"""Run the real `retrieval` command in a subprocess, with hooks on every store operation.

The hooks live only in the child (a bootstrap installed before the CLI starts): the store code has
no test switches. Every operation that changes the store (creating a directory or file, writing
half of a file's bytes, fsync, rename, unlink) is an *event*, numbered from 1 and labelled by what
it touches (`segment`, `manifest`, `store`, `gc`). A plan can kill the process with SIGKILL at
event N (or at the first event of a kind, e.g. "write-half:manifest"), make every event from N on that needs space fail with an OSError (a full disk), pause it
before given operations until the test lets it go (`{"at": kind or "next", "paused": file,
"resume": file}`, in order), or slow every event.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

HOOKS_ENV = "RETRIEVAL_TEST_HOOKS"

BOOTSTRAP = r'''
import atexit, json, os, signal, sys, tempfile, time

plan = json.loads(os.environ.pop("RETRIEVAL_TEST_HOOKS"))
store = plan["store"].rstrip(os.sep) + os.sep
count = 0
fd_paths = {}


def label(path):
    rel = os.path.relpath(path, store)
    parts = rel.split(os.sep)
    if parts[-1] == "manifest.json" or (len(parts) == 2 and parts[1].startswith(".tmp-")):
        return "manifest"  # the manifest is the only file written through a temp in a retriever dir
    if any(p.startswith("seg-") for p in parts[1:]):
        return "segment"
    return "store"


def ours(path):
    return isinstance(path, str) and os.path.abspath(path).startswith(store)


def event(kind):
    global count
    count += 1
    if plan.get("delay"):
        time.sleep(plan["delay"])
    pauses = plan.get("pauses")
    if pauses and pauses[0]["at"] in (kind, "next"):
        # Announce the pause, then wait (bounded) for the test to let this writer go on.
        pause = pauses.pop(0)
        open(pause["paused"], "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(pause["resume"]) and time.monotonic() < deadline:
            time.sleep(0.01)
        if pauses and pauses[0]["at"] == "next":
            return
    if plan.get("fail_from") and count >= plan["fail_from"] and kind.split(":")[0] not in ("unlink", "rmdir"):
        raise OSError(plan["errno"], os.strerror(plan["errno"]))  # the disk stays full; deleting still works
    if plan.get("kill_at") == count or plan.get("kill_at") == kind:
        with open(plan["log"], "a") as fh:
            fh.write(f"{count} {kind}\n")
        os.kill(os.getpid(), signal.SIGKILL)


def hook(name, op, *, path_arg=0):
    real = getattr(os, name)

    def wrapper(*args, **kwargs):
        path = args[path_arg] if len(args) > path_arg else None
        if kwargs.get("dir_fd") is not None:
            event(f"{op}:gc")  # shutil.rmtree works through directory descriptors
        elif ours(path):
            event(f"{op}:{label(path)}")
        return real(*args, **kwargs)

    setattr(os, name, wrapper)


for name, op in [("mkdir", "mkdir"), ("rmdir", "rmdir"), ("unlink", "unlink"), ("replace", "replace")]:
    hook(name, op)

real_rename = os.rename


def rename(src, dst, *args, **kwargs):
    if ours(dst):
        event(f"rename:{label(dst)}")
    return real_rename(src, dst, *args, **kwargs)


os.rename = rename
real_open = os.open


def open_(path, flags, *args, **kwargs):
    fd = real_open(path, flags, *args, **kwargs)
    if ours(path):
        fd_paths[fd] = path
        if flags & os.O_CREAT:
            event(f"create:{label(path)}")
    return fd


os.open = open_
real_mkstemp = tempfile.mkstemp


def mkstemp(*args, **kwargs):
    fd, path = real_mkstemp(*args, **kwargs)
    if ours(path):
        fd_paths[fd] = path
        event(f"create:{label(path)}")
    return fd, path


tempfile.mkstemp = mkstemp
real_fsync = os.fsync


def fsync(fd):
    path = fd_paths.get(fd if isinstance(fd, int) else fd.fileno())
    if path is not None:
        event(f"fsync:{label(path)}")
    return real_fsync(fd)


os.fsync = fsync
real_fdopen = os.fdopen


class TornWriter:
    """Writes half of the bytes, reports the event, then the rest: a kill here tears the file."""

    def __init__(self, fh, kind):
        self._fh, self._kind = fh, kind

    def write(self, data):
        half = len(data) // 2
        self._fh.write(data[:half])
        self._fh.flush()
        event(self._kind)
        return half + self._fh.write(data[half:])

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)


def fdopen(fd, mode="r", *args, **kwargs):
    fh = real_fdopen(fd, mode, *args, **kwargs)
    path = fd_paths.get(fd)
    if path is not None and "w" in mode:
        return TornWriter(fh, f"write-half:{label(path)}")
    return fh


os.fdopen = fdopen
if plan.get("log"):
    atexit.register(lambda: open(plan["log"], "a").write(f"total {count}\n"))

from retrieval.cli import main
sys.argv = ["retrieval", *plan["argv"]]
main(prog_name="retrieval")
'''


def child_env() -> dict:
    env = dict(os.environ)
    for name in ("RETRIEVAL_INDEX_DIR", "RETRIEVAL_MAX_TOTAL_BYTES"):
        env.pop(name, None)
    return env


def hooked(argv: list[str], store: Path, **plan) -> tuple[list[str], dict]:
    """(command, env) running `retrieval ARGV` under the hooks with the given plan."""
    env = child_env()
    env[HOOKS_ENV] = json.dumps({"store": str(store), "argv": [str(a) for a in argv], **plan})
    return [sys.executable, "-c", BOOTSTRAP], env


def run_hooked(argv, store, timeout=120, **plan) -> subprocess.CompletedProcess:
    command, env = hooked(argv, store, **plan)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def run_cli(argv, *, input=None, unprivileged=False, timeout=120) -> subprocess.CompletedProcess:
    """`python -m retrieval.cli ARGV` in a subprocess; unprivileged: see drop_dac_capabilities."""
    return subprocess.run(
        [sys.executable, "-m", "retrieval.cli", *[str(a) for a in argv]],
        input=input, capture_output=True, text=isinstance(input, (str, type(None))), env=child_env(),
        timeout=timeout, preexec_fn=drop_dac_capabilities if unprivileged else None,
    )


# -- permissions when the tests run as root ---------------------------------------------------------

# Capabilities that let root ignore file modes: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER.
_DAC_CAPABILITIES = (1, 2, 3)
_PR_CAPBSET_DROP = 24


def drop_dac_capabilities() -> None:
    """In a child before exec: drop the capabilities that bypass permission checks from the
    bounding set, so even root's next program obeys chmod (a no-op for ordinary users)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _DAC_CAPABILITIES:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def permissions_enforced(tmp_path: Path) -> str:
    """'' when an unprivileged child cannot read a mode-000 file; otherwise why not (skip reason)."""
    probe = tmp_path / "permission-probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", f"open({str(probe)!r}).read()"], capture_output=True,
            preexec_fn=drop_dac_capabilities, env=child_env(), timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot start a child without permission-bypassing capabilities: {exc}"
    finally:
        probe.chmod(0o644)
    if proc.returncode == 0:
        return "file modes are not enforced here (root without a way to drop CAP_DAC_OVERRIDE)"
    return ""
