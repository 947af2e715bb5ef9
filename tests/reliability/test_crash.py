"""SIGKILL at any store operation never costs a correct answer.

`retrieval index` runs in a real subprocess whose every store operation is numbered (see
reliability_harness); each trial changes the tree, kills the indexer at a different operation
(mid-segment, a half-written file, before and after the manifest commit, during garbage collection,
during a first build or a forced rebuild), then checks that the lock is free and that the next
command answers byte for byte like a clean build of the same tree in a fresh store.
"""
from __future__ import annotations

import json
import math
import os
import signal
import time

from click.testing import CliRunner

from retrieval import service
from retrieval.cli import main
from retrieval.lexical.segment import DiskSegment
from retrieval.store.lock import WriterLock

from reliability_harness import run_hooked

KILLS = 50
REFRESH_POINTS = ["write-half:manifest", "fsync:manifest", "replace:manifest", "create:manifest", "rename:segment"]
FIRST_BUILD_POINTS = ["create:store", "write-half:store", "fsync:store", "replace:store", "mkdir:segment"]
QUERIES = ["parse config value", "retry request backoff", "evict oldest cache entry", "render template"]
TOPICS = ["config", "retry", "cache", "render", "token", "stream"]


def module_text(i: int, version: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return (
        f'"""Module {i}: {topic} helpers, revision {version}."""\n\n\n'
        f"def {topic}_handler_{i}(value, attempt={version}):\n"
        f"    # parse the {topic} value, retry on failure, evict the oldest cache entry\n"
        f"    return render_{topic}(value) + {i * 10 + version}\n\n\n"
        f"class {topic.title()}Worker{i}:\n"
        f"    def run(self, request):\n"
        f"        return {topic}_handler_{i}(request.backoff, {version})\n"
    )


def make_repo(make_tree):
    files = {f"pkg/mod_{i}.py": module_text(i, 0) for i in range(16)}
    files["docs/guide.md"] = "# Guide\n\nTemplates are rendered after the config is parsed.\n"
    files["README.md"] = "# Crash test repository\n"
    return make_tree(files, name="crashy")


def mutate(root, trial: int) -> None:
    """A different change per trial: edit, add, delete, and now and then ignore a file."""
    pkg = root / "pkg"
    target = pkg / f"mod_{trial % 16}.py"
    if target.exists():
        before = target.stat().st_mtime_ns
        target.write_text(module_text(trial % 16, trial))
        st = target.stat()
        # The edit must show in the stamp even when it lands in the previous write's clock tick, but
        # not from the future: a stamp the clock reaches after the final refresh reads as racy
        # (stale) to `status`, correctly, which made the last assertion depend on timing.
        os.utime(target, ns=(st.st_atime_ns, max(st.st_mtime_ns, before + 1_000)))
    (pkg / f"extra_{trial}.py").write_text(module_text(100 + trial, trial))
    stale = pkg / f"extra_{trial - 3}.py"
    if stale.exists():
        stale.unlink()
    if trial % 7 == 3:
        with open(root / ".gitignore", "a") as fh:
            fh.write(f"pkg/mod_{(trial * 5) % 16}.py\n")


def answers(root, run) -> list[str]:
    out = []
    for query in QUERIES:
        result = run("query", "--root", root, "--json", "-k", "20", query)
        assert result.exit_code == 0, result.output
        out.append(result.stdout)
    return out


def assert_store_tidy(root) -> None:
    lexical = root / ".retrieval" / "lexical"
    manifest = json.loads((lexical / "manifest.json").read_text())
    live = sorted(s["name"] for s in manifest["state"]["segments"])
    assert sorted(n for n in os.listdir(lexical) if n.startswith("seg-")) == live
    for name in live:
        segment = DiskSegment(str(lexical / name))
        assert len(segment.lens) == segment.n_docs
    temps = [p for p in (root / ".retrieval").rglob("*") if p.name.startswith(".tmp-") or p.name.endswith(".tmp")]
    assert temps == []


def test_sigkill_at_fifty_different_store_operations_never_changes_an_answer(make_tree, copy_tree, tmp_path):
    runner = CliRunner()

    def run(*args):
        return runner.invoke(main, [str(a) for a in args])

    root = make_repo(make_tree)
    store = root / ".retrieval"
    log = tmp_path / "kills.log"
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0

    # How many store operations an ordinary incremental refresh performs (no merge, no collection).
    mutate(root, 0)
    counted = run_hooked(["index", "--root", root, "--retriever", "lexical"], store, log=str(tmp_path / "count.log"))
    assert counted.returncode == 0, counted.stderr
    per_refresh = int((tmp_path / "count.log").read_text().split()[-1])
    assert per_refresh >= 20, "a refresh writes a segment (several files) and a manifest"
    stride = next(s for s in range(7, per_refresh) if math.gcd(s, per_refresh) == 1)

    started = time.monotonic()
    kills, trial, outcomes = 0, 0, []
    while kills < KILLS:
        trial += 1
        assert trial <= KILLS + 20, f"only {kills} of {trial - 1} trials were killed"
        mutate(root, trial)
        argv = ["index", "--root", root, "--retriever", "lexical"]
        target = 1 + (trial * stride) % per_refresh
        if trial % 10 == 0:
            # A forced rebuild: segments and manifest as usual, then every old segment collected.
            argv.append("--force")
            target = per_refresh + 1 + (trial // 10) % 5
        elif trial % 10 == 1:
            # The manifest commit is a handful of operations among many: aim at each one by name.
            target = REFRESH_POINTS[(trial // 10) % len(REFRESH_POINTS)]
        elif trial % 10 == 5:
            # A first build: the store itself is created too; kill while writing its own files.
            assert run("clean", "--root", root).exit_code == 0
            target = FIRST_BUILD_POINTS[(trial // 10) % len(FIRST_BUILD_POINTS)]
        proc = run_hooked(argv, store, kill_at=target, log=str(log))
        killed = proc.returncode == -signal.SIGKILL
        assert killed or proc.returncode == 0, proc.stderr
        kills += killed

        # The kernel released the dead writer's lock.
        lock = WriterLock(str(store / "lock"))
        lock.acquire(timeout=0)
        lock.release()

        # The next command (alternately `index` then `query`, or `query` alone) uses the store as
        # it is or rebuilds what it must, and answers exactly like a clean build.
        if trial % 2:
            assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
        got = answers(root, run)
        expected = answers(copy_tree(root), run)
        assert got == expected, f"trial {trial}: killed at operation {target} ({argv[3:]})"
        assert any(json.loads(a)["results"] for a in got)
        outcomes.append((trial, target, killed))

    elapsed = time.monotonic() - started
    points = [line.split(" ", 1)[1] for line in log.read_text().splitlines() if not line.startswith("total")]
    assert len(points) == kills
    kinds = set(points)
    # The kills landed everywhere that matters.
    for kind in ["create:segment", "write-half:segment", "fsync:segment", "rename:segment",
                 "create:manifest", "write-half:manifest", "fsync:manifest", "replace:manifest",
                 "create:store", "write-half:store", "unlink:gc"]:
        assert kind in kinds, (kind, sorted(kinds))
    # Seven trials in ten aim at a numbered operation, each at another one: with every extra installed
    # a refresh performs more operations than there are such trials.
    aimed = {target for _, target, killed in outcomes if killed and isinstance(target, int)}
    assert len(aimed) >= min(per_refresh // 2, 7 * KILLS // 10)

    # After a clean refresh nothing a dead writer left behind remains.
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    assert_store_tidy(root)
    assert service.status(str(root))[0]["state"] == "ready"
    print(f"{kills} kills in {trial} trials ({per_refresh} operations per refresh), {elapsed:.1f}s")


# -- parallel builds: the parent killed alone, its workers must not outlive it -----------------------

PARALLEL_FILES = 240  # above the 64-file worker threshold, and enough work to be killed midway


def _children(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return {int(c) for c in fh.read().split()}
    except (OSError, ValueError):
        return set()


def _alive(pid: int) -> bool:
    """True while pid runs (a zombie waiting for init to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_parallel_build_killed_alone_leaves_no_worker_and_no_lock(make_tree, copy_tree, tmp_path):
    import subprocess
    import sys

    import pytest

    from reliability_harness import hooked

    if not os.path.isdir("/proc/self/task"):
        pytest.skip("needs /proc to see the workers")
    runner = CliRunner()

    def run(*args):
        return runner.invoke(main, [str(a) for a in args])

    files = {f"pkg/mod_{i}.py": module_text(i, 0) * 3 for i in range(PARALLEL_FILES)}
    root = make_tree(files, name="parallel")
    store = root / ".retrieval"
    # (extra index arguments, kill at: seconds after the workers appear, or a store operation)
    points = [([], 0.0), (["--force"], 0.0), ([], 0.15), (["--force"], 0.4),
              ([], "mkdir:segment"), (["--force"], "replace:manifest"), ([], "unlink:gc")]
    killed_with_workers = 0
    for trial, (extra, when) in enumerate(points, start=1):
        for i in range(0, PARALLEL_FILES, 2):  # half the files change: the refresh uses workers too
            path = root / "pkg" / f"mod_{i}.py"
            path.write_text(module_text(i, trial) * 3)
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        plan = {"kill_at": when, "log": str(tmp_path / "kills.log")} if isinstance(when, str) else {}
        command, env = hooked(["index", "--root", root, *extra], store, **plan)
        env["RETRIEVAL_JOBS"] = "2"
        # stderr to a file: a pipe would stay open as long as any orphaned worker lived
        errors = open(tmp_path / f"stderr-{trial}", "w+")
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        workers: set[int] = set()
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            seen = _children(proc.pid)
            if seen and not workers and not isinstance(when, str):
                time.sleep(when)
                seen |= _children(proc.pid)
                killed_with_workers += any(_alive(w) for w in seen)
                os.kill(proc.pid, signal.SIGKILL)  # the parent alone, as a timeout or the OOM killer does
            workers |= seen
            time.sleep(0.005)
        proc.wait(timeout=30)
        errors.seek(0)
        err = errors.read()
        errors.close()
        assert proc.returncode in (0, -signal.SIGKILL), (trial, proc.returncode, err)
        # No worker outlives its parent...
        gone_by = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < gone_by:
            time.sleep(0.02)
        assert not any(_alive(w) for w in workers), f"trial {trial}: workers {workers} outlived the build"
        # ...nor holds the writer lock: the next index finishes, within a bound. The lock is the
        # store's, so lexical by name proves it free without timing the extras' embedding too.
        nxt = subprocess.run([sys.executable, "-m", "retrieval.cli", "index", "--root", str(root), "--retriever",
                              "lexical"],
                             env={k: v for k, v in env.items() if k != "RETRIEVAL_TEST_HOOKS"}, capture_output=True, text=True,
                             timeout=60)
        assert nxt.returncode == 0, (trial, nxt.stderr)
        assert "waiting for" not in nxt.stderr
        assert answers(root, run) == answers(copy_tree(root), run), f"trial {trial} ({extra}, {when})"
    assert killed_with_workers >= 2, "the kills did not land while workers were running"
