"""Queries running in parallel with an `index` refresh answer from one snapshot, old or new.

The writer is a real `retrieval index` subprocess, paused by the test at chosen store operations
(reliability_harness), so the queries provably overlap the moments that matter: segments written
but not committed, manifest committed but old segments not yet collected, and collection itself.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from retrieval.cli import main
from retrieval.retrievers.base import REGISTRY
from retrieval.store.lock import WriterLock

from reliability_harness import child_env, hooked, run_cli

PARALLEL = 4
QUERY = "render the config template and retry"


def module(i: int, word: str) -> str:
    return f"def {word}_step_{i}(config):\n    # render the {word} template, retry on error\n    return config.{word}\n"


def make_repo(make_tree):
    return make_tree({f"pkg/m{i}.py": module(i, "render") for i in range(30)}, name="busy")


def change(root, word: str, count: int) -> None:
    """Rewrite `count` modules to talk about `word`, so the answer to QUERY changes."""
    for i in range(count):
        path = root / "pkg" / f"m{i}.py"
        path.write_text(module(i, word) + f"# {word} config retry\n" * (i + 1))
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def clean_answer(copy_tree, root) -> str:
    result = CliRunner().invoke(main, ["query", "--root", str(copy_tree(root)), "--json", QUERY])
    assert result.exit_code == 0
    return result.stdout


def answer_of(stdout: str) -> dict:
    """A query's JSON without its `stale` flag (set when a writer held the lock past the wait) and
    the notes saying why."""
    answer = json.loads(stdout)
    answer.pop("stale", None)
    answer.pop("notes", None)
    return answer


def parallel_queries(root, n=PARALLEL, *extra, wait="0.3") -> list[subprocess.CompletedProcess]:
    """n queries at once; each waits `wait` seconds for a writer holding the lock."""
    command = [sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--json", *extra, QUERY]
    env = {**child_env(), "RETRIEVAL_WRITER_WAIT": wait}
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(n)]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return out


def while_another_writes(lock_path: str, search, began_ago: float = 0.0):
    """(search(), seconds it took, seconds of that spent waiting for the lock) while another writer,
    as far as the query can tell, holds the lock, having taken it `began_ago` seconds before. (The
    wait itself, not the whole search, tells one wait from two: a loaded machine slows the rest.)"""
    holder = WriterLock(lock_path)
    holder.acquire(timeout=0)
    os.utime(lock_path, (time.time() - began_ago,) * 2)  # when that writer took the lock
    in_lock = []
    real_acquire = WriterLock.acquire

    def timed_acquire(self, *args, **kwargs):
        began = time.monotonic()
        try:
            return real_acquire(self, *args, **kwargs)
        finally:
            in_lock.append(time.monotonic() - began)

    WriterLock.acquire = timed_acquire
    try:
        started = time.monotonic()
        result = search()
        return result, time.monotonic() - started, sum(in_lock)
    finally:
        WriterLock.acquire = real_acquire
        holder.release()


def wait_for(path, writer, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert writer.poll() is None, writer.communicate()[1]
        assert time.monotonic() < deadline, f"the writer never reached {path}"
        time.sleep(0.01)


def wait_until_said(said: list, beginning: str, timeout=60.0) -> None:
    """Until a progress callback was told a line starting with `beginning`."""
    deadline = time.monotonic() + timeout
    while not any(line.startswith(beginning) for line in said):
        assert time.monotonic() < deadline, f"never said {beginning!r}: {said}"
        time.sleep(0.01)


def test_queries_during_a_refresh_see_the_old_snapshot_until_the_commit_and_the_new_one_after(
    make_tree, copy_tree, tmp_path
):
    root = make_repo(make_tree)
    assert run_cli(["index", "--root", root]).returncode == 0
    old = clean_answer(copy_tree, root)
    change(root, "retry", 12)
    new = clean_answer(copy_tree, root)
    assert old != new

    flags = {name: str(tmp_path / name) for name in ("paused-1", "resume-1", "paused-2", "resume-2")}
    command, env = hooked(["index", "--root", root], root / ".retrieval", pauses=[
        {"at": "replace:manifest", "paused": flags["paused-1"], "resume": flags["resume-1"]},
        {"at": "next", "paused": flags["paused-2"], "resume": flags["resume-2"]},
    ])
    writer = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # 1. The new segment is on disk, the manifest not yet replaced, the writer holds the lock.
        wait_for(flags["paused-1"], writer)
        for proc in parallel_queries(root):
            assert proc.returncode == 0, proc.stderr
            answer = json.loads(proc.stdout)
            assert answer.pop("stale") is True  # said on stdout too, for a pipeline, and why
            assert [note for note in answer.pop("notes") if "another process is still updating" in note]
            assert answer == json.loads(old)
            assert "another process is still updating the index" in proc.stderr
        (stale_ok,) = parallel_queries(root, 1, "--stale-ok")
        answer = json.loads(stale_ok.stdout)
        notes = answer.pop("notes")
        marked = [hit.pop("stale", False) for hit in answer["results"]]
        assert answer == json.loads(old)  # the old snapshot's hits, the changed files' marked
        assert any(marked) and [note for note in notes if "changed since indexing" in note]
        open(flags["resume-1"], "w").close()

        # 2. The manifest is committed; the writer still runs (and still holds the lock).
        wait_for(flags["paused-2"], writer)
        for proc in parallel_queries(root):
            assert proc.returncode == 0, proc.stderr
            assert answer_of(proc.stdout) == answer_of(new)  # (unverified while the writer runs: stale)
        open(flags["resume-2"], "w").close()
        assert writer.wait(timeout=60) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    lock = WriterLock(str(root / ".retrieval" / "lock"))
    lock.acquire(timeout=0)
    lock.release()


def test_a_query_during_a_refresh_waits_for_it_and_answers_with_the_edit_saved_before_it(make_tree, copy_tree,
                                                                                        tmp_path):
    """An agent's second query right after an edit, while its first query (or an `index`) was
    refreshing, answered from the old index without the edit: it waits for the writer now."""
    root = make_repo(make_tree)
    assert run_cli(["index", "--root", root]).returncode == 0
    change(root, "retry", 12)
    new = clean_answer(copy_tree, root)
    flags = {name: str(tmp_path / name) for name in ("paused", "resume")}
    command, env = hooked(["index", "--root", root], root / ".retrieval", pauses=[
        {"at": "replace:manifest", "paused": flags["paused"], "resume": flags["resume"]}])
    writer = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    query = None
    try:
        wait_for(flags["paused"], writer)
        query = subprocess.Popen([sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--json", QUERY],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**child_env(), "RETRIEVAL_WRITER_WAIT": "60"})
        time.sleep(1.0)
        assert query.poll() is None  # waiting for the writer, not answering from the old snapshot
        open(flags["resume"], "w").close()
        stdout, stderr = query.communicate(timeout=60)
        assert query.returncode == 0, stderr
        assert stdout == new and "previous snapshot" not in stderr
        assert writer.wait(timeout=60) == 0
    finally:
        for proc in (writer, query):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_query_does_not_wait_for_a_writer_that_has_been_at_it_longer_than_the_writer_wait(make_tree, monkeypatch):
    """During a build of minutes (embedding) every query waited the whole writer wait, 10 s each,
    to answer from the previous snapshot anyway: the wait counts from when the writer began."""
    from retrieval import service

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    change(root, "retry", 12)  # stale: a query would refresh it
    monkeypatch.setenv("RETRIEVAL_WRITER_WAIT", "2.5")
    lock_path = str(root / ".retrieval" / "lock")
    for began_ago, waits in ((0.0, True), (30.0, False)):
        result, _, waited = while_another_writes(lock_path, lambda: service.search(str(root), QUERY), began_ago)
        assert result.hits and result.stale
        assert (waited >= 2.0) is waits, (began_ago, waited)


def test_an_answer_from_the_previous_snapshot_says_so_in_json_and_on_every_jsonl_hit(make_tree, run, monkeypatch):
    """A pipeline reads stdout only: `--json` says `"stale": true` once, `--jsonl` on every hit."""
    from retrieval import service

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    change(root, "retry", 12)  # stale: a query would refresh it
    monkeypatch.setenv("RETRIEVAL_WRITER_WAIT", "2.5")
    lock_path = str(root / ".retrieval" / "lock")
    for fmt in ("--json", "--jsonl"):
        result, _, _ = while_another_writes(lock_path, lambda: run("query", "--root", root, fmt, QUERY), began_ago=30.0)
        assert result.exit_code == 0 and service.PREVIOUS_SNAPSHOT in result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        if fmt == "--json":
            (payload,) = rows
            assert payload["stale"] is True and payload["results"]
        else:
            assert rows and all(row["stale"] is True for row in rows)


def test_queries_looping_through_a_slow_forced_rebuild_each_answer_old_or_new_never_a_mix(make_tree, copy_tree):
    root = make_repo(make_tree)
    assert run_cli(["index", "--root", root]).returncode == 0
    old = clean_answer(copy_tree, root)
    change(root, "template", 20)
    new = clean_answer(copy_tree, root)
    assert old != new

    # A forced rebuild collects every old segment after its commit: readers of the old snapshot
    # lose their files underneath them. Each store operation is slowed so the queries overlap.
    command, env = hooked(["index", "--root", root, "--force"], root / ".retrieval", delay=0.03)
    writer = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results: list[tuple[bool, subprocess.CompletedProcess]] = []

    def loop():
        while True:
            running = writer.poll() is None
            (proc,) = parallel_queries(root, 1)
            results.append((running, proc))
            if not running:
                return

    threads = [threading.Thread(target=loop) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert writer.wait(timeout=60) == 0, writer.stderr.read()

    assert sum(running for running, _ in results) >= PARALLEL, "the queries should overlap the rebuild"
    for _, proc in results:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert answer_of(proc.stdout) in (answer_of(old), answer_of(new))
    # Every query started after the writer ended answers the new snapshot, unmarked. (Not the last
    # one to finish: a query started during the rebuild, marked stale, could end after those.)
    after = [proc.stdout for running, proc in results if not running]
    assert len(after) == PARALLEL and all(stdout == new for stdout in after)


def test_a_writer_waiting_for_the_lock_has_written_nothing_but_the_lock(make_tree):
    # Whoever holds the lock may remove stray temp files: so no store file may be written, even a
    # temp, by a process that does not hold it (two first builds started at once used to race).
    root = make_repo(make_tree)
    store = root / ".retrieval"
    store.mkdir()
    holder = WriterLock(str(store / "lock"))
    holder.acquire()
    try:
        waiting = subprocess.Popen([sys.executable, "-m", "retrieval.cli", "index", "--root", str(root), "--retriever", "lexical"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        deadline = time.monotonic() + 60
        while not (store / "lexical").is_dir() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the lock file is opened right after the directory is made
        assert waiting.poll() is None, "the writer should be blocked on the lock"
        assert sorted(p.name for p in store.iterdir()) == ["lexical", "lock"]
        assert list((store / "lexical").iterdir()) == []
    finally:
        holder.release()
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    names = {p.name for p in store.iterdir()}
    core = {".gitignore", "STORE.json", "lexical", "lock"}
    assert core <= names and names - core <= set(REGISTRY)  # plus one directory per installed extra retriever


def test_clean_waits_for_a_writer_and_a_writer_that_waited_for_a_clean_writes_nothing(make_tree):
    import shutil

    from retrieval import service
    from retrieval.store.layout import StoreError

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    store = root / ".retrieval"

    # A build holds the lock: `clean` waits for it, then removes everything.
    holder = WriterLock(str(store / "lock"))
    holder.acquire()
    said = []
    cleaner = threading.Thread(target=service.clean, args=(str(root),), kwargs={"progress": said.append})
    cleaner.start()
    wait_until_said(said, "waiting for")
    assert cleaner.is_alive() and (store / "STORE.json").exists()
    holder.release()
    cleaner.join(timeout=60)
    assert not store.exists()

    # A build waiting for the lock while the store is removed under it fails; it rebuilds no piece.
    service.refresh(str(root), "lexical")
    holder = WriterLock(str(store / "lock"))
    holder.acquire()
    errors, said = [], []

    def build():
        try:
            service.refresh(str(root), "lexical", force=True, progress=said.append)
        except StoreError as exc:
            errors.append(str(exc))

    writer = threading.Thread(target=build)
    writer.start()
    wait_until_said(said, "waiting for")  # blocked on the lock: a fixed sleep let a slow one start after the removal
    shutil.rmtree(store)  # what `clean` does, holding the lock
    holder.release()
    writer.join(timeout=60)
    assert errors and "removed while this process waited" in errors[0]
    assert not store.exists()


def test_a_query_that_waited_for_a_clean_builds_a_new_store_and_answers(make_tree):
    """A query needs an index to answer: one waiting to build it while `clean` removed the store
    failed ("the index was removed while this process waited to write it"), where a build
    command is right to say so."""
    import shutil

    from retrieval import service

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    store = root / ".retrieval"
    (root / "pkg" / "lru.py").write_text("def evict_oldest():\n    return 'lru'\n")  # stale now
    holder = WriterLock(str(store / "lock"))
    holder.acquire()
    said, answers = [], []
    searcher = threading.Thread(target=lambda: answers.append(
        service.search(str(root), "evict oldest", progress=said.append)))
    searcher.start()
    wait_until_said(said, "waiting for")
    shutil.rmtree(store)  # what `clean` does, holding the lock
    holder.release()
    searcher.join(timeout=60)
    assert [hit.source_path for hit in answers[0].hits][:1] == ["pkg/lru.py"]
    assert (store / "STORE.json").exists()


def test_a_build_that_starts_while_clean_is_removing_the_store_keeps_its_index_and_clean_succeeds(make_tree,
                                                                                                   monkeypatch):
    """`index --retriever all` goes on to its next retriever while `clean` (which waited for the
    lock) is deleting: that build recreated the lock inside the store being deleted, took it, and
    clean then failed half done ("Directory not empty") or deleted the index the build reported."""
    import shutil

    from retrieval import service

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    store = root / ".retrieval"
    real_rmtree = shutil.rmtree
    built, met = [], []

    def rmtree_meeting_a_writer(path, *args, **kwargs):
        if not met:  # clean's (the build's own removals pass through)
            met.append(path)
            # The lock's file is gone already (rmtree takes the entries in any order) when a build starts.
            os.unlink(next(os.path.join(d, "lock") for d, _, names in os.walk(path) if "lock" in names))
            built.append(service.refresh(str(root), "lexical", force=True).status)
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree_meeting_a_writer)
    assert service.clean(str(root)) is True
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    assert built == ["indexed"]
    assert service.is_built(str(root), "lexical") and (store / "STORE.json").exists()
    assert service.search(str(root), QUERY, stale_ok=True).hits
    assert sorted(os.listdir(root)) == [".retrieval", "pkg"]  # nothing left beside it


def test_a_clean_killed_half_way_leaves_nothing_a_build_indexes_and_the_next_clean_removes_it(make_tree):
    import shutil

    from retrieval import service

    root = make_repo(make_tree)
    service.refresh(str(root), "lexical")
    # What a clean killed while removing leaves: the store, moved aside under its own name.
    aside = root / ".retrieval.removing-99999"
    aside.mkdir()
    shutil.copytree(root / ".retrieval", aside / ".retrieval")
    (aside / ".retrieval" / ".gitignore").unlink()  # removed already
    report = service.refresh(str(root), "lexical", force=True)
    assert report.files == 30 and not any(p.startswith(".retrieval") for p in report.reprocessed)
    assert service.clean(str(root)) is True
    assert sorted(os.listdir(root)) == ["pkg"]
    # A clean killed after moving the store aside: no store names it, and the next clean removes it.
    service.refresh(str(root), "lexical")
    (root / ".retrieval").rename(aside)
    assert service.clean(str(root)) is True and sorted(os.listdir(root)) == ["pkg"]
    assert service.clean(str(root)) is False


@pytest.mark.extra("treesitter")
def test_every_index_of_a_consolidated_query_shares_one_wait_for_another_writer(make_tree, monkeypatch):
    """The store has one writer lock: `--retriever all` waited the whole writer wait for each of
    its indexes in turn (five retrievers: 50 s) and said so once per index."""
    from retrieval import multi, service

    root = make_repo(make_tree)
    for name in ("lexical", "treesitter"):
        service.refresh(str(root), name)
    change(root, "retry", 12)  # both indexes now stale
    monkeypatch.setenv("RETRIEVAL_WRITER_WAIT", "1.5")
    result, took, waited = while_another_writes(str(root / ".retrieval" / "lock"),
                                                lambda: multi.search_all(str(root), QUERY))
    assert result.hits and result.stale
    assert sum(service.PREVIOUS_SNAPSHOT in note for note in result.notes) == 1
    assert took > 1.4 and waited < 2.4, (took, waited)  # one wait of 1.5 s, not one per index (3 s)
