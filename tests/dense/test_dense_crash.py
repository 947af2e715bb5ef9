"""SIGKILL while the turbovec index is embedding: the previous index keeps answering, and the next
refresh resumes from the checkpoints and ends where a clean build of the same tree ends."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from reliability_harness import child_env  # noqa: E402

pytestmark = pytest.mark.extra("local", "turbovec")

TOPICS = ["parse the config", "retry the request", "evict a cache entry", "render the template",
          "stream the tokens", "compress the archive"]


def module(i: int, version: int) -> str:
    return "\n\n".join(
        f"def step_{i}_{j}_v{version}(value):\n    '''{TOPICS[(i + j) % len(TOPICS)]} (revision {version})'''\n"
        f"    return value + {i * 100 + j}\n"
        for j in range(4)
    )


def spans(hits):
    return [(h.source_path, h.start_line, h.end_line) for h in hits]


# (files, texts per batch): batches of two are embedded with numpy (a small refresh's path);
# batches above NUMPY_MAX_TEXTS go through sentence-transformers (a real repository's build).
PATHS = {"numpy": (12, 2), "model": (70, 33)}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_kill_during_embedding_leaves_a_working_index_and_the_work_is_resumed(make_tree, rewrite, copy_tree, path):
    from retrieval import service
    from retrieval.embed import NUMPY_MAX_TEXTS
    from retrieval.store.lock import WriterLock

    files, batch = PATHS[path]
    assert (batch > NUMPY_MAX_TEXTS) == (path == "model")
    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(files)}, name="killed")
    service.refresh(root, "turbovec")
    before = spans(service.search(root, "retry the request", retriever="turbovec", top_k=5).hits)
    for i in range(files):
        rewrite(root / f"pkg/m{i}.py", module(i, 1))
    env = child_env()
    env.update(RETRIEVAL_EMBED_BATCH=str(batch), RETRIEVAL_EMBED_CHECKPOINT_SECONDS="0", RETRIEVAL_EMBED_THREADS="1")
    child = subprocess.Popen([sys.executable, "-m", "retrieval.cli", "index", "--root", str(root), "--retriever",
                              "turbovec"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store = root / ".retrieval" / "turbovec"
    deadline = time.monotonic() + 240
    try:
        while not any(n.startswith("ckpt-") for n in os.listdir(store)):
            assert child.poll() is None, "the refresh finished before it could be killed"
            assert time.monotonic() < deadline, "no checkpoint was written"
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    lock = WriterLock(str(root / ".retrieval" / "lock"))
    lock.acquire(timeout=0)  # the kernel dropped the dead writer's lock
    lock.release()
    # The committed index still answers (as it was before the kill).
    assert spans(service.search(root, "retry the request", retriever="turbovec", top_k=5, stale_ok=True).hits) == before

    report = service.refresh(root, "turbovec")
    import json

    state = json.loads((store / "manifest.json").read_text())["state"]
    assert report.new_chunks == files and 0 < state["embedded"] < files  # the checkpointed vectors were reused
    assert not [n for n in os.listdir(store) if n.startswith(("ckpt-", ".tmp-"))]

    clean = copy_tree(root)
    for query in ("retry the request", "compress the archive", "evict a cache entry"):
        assert spans(service.search(root, query, retriever="turbovec", top_k=8).hits) == \
            spans(service.search(clean, query, retriever="turbovec", top_k=8).hits)


def _stopped_at_the_third_batch(root, monkeypatch) -> list[int]:
    """A turbovec build of root Ctrl-C'd as it starts its third batch of four texts (no timed
    checkpoint in it); the sizes of the batches it was handed."""
    from retrieval import service
    from retrieval.embed import Embedder

    monkeypatch.setenv("RETRIEVAL_EMBED_BATCH", "4")
    monkeypatch.setenv("RETRIEVAL_EMBED_CHECKPOINT_SECONDS", "3600")
    embed = Embedder.embed
    batches: list[int] = []

    def interrupted(self, texts, **kwargs):
        batches.append(len(texts))
        if len(batches) == 3:
            raise KeyboardInterrupt
        return embed(self, texts, **kwargs)

    monkeypatch.setattr(Embedder, "embed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        service.refresh(root, "turbovec")
    monkeypatch.setattr(Embedder, "embed", embed)
    return batches


def test_ctrl_c_during_embedding_keeps_what_was_embedded_since_the_last_checkpoint(make_tree, monkeypatch):
    """The progress line promises that what is embedded is kept if the command is interrupted: a
    Ctrl-C between two timed checkpoints threw away every batch embedded since the last one."""
    import json

    from retrieval import service

    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(12)}, name="interrupted")
    batches = _stopped_at_the_third_batch(root, monkeypatch)
    store = root / ".retrieval" / "turbovec"
    assert [n for n in os.listdir(store) if n.startswith("ckpt-")]
    service.refresh(root, "turbovec")
    state = json.loads((store / "manifest.json").read_text())["state"]
    assert state["embedded"] == state["generation"]["n"] - sum(batches[:2])  # the two batches done were kept


def test_vectors_a_killed_run_kept_reach_the_shared_cache_with_the_run_that_resumes(make_tree, copy_tree, tmp_path,
                                                                                      monkeypatch):
    """The resumed run took the checkpointed vectors but published only what it embedded itself: a
    clean build of the same files elsewhere embedded 1,344 chunks again (a probe's pytest checkout)."""
    import json

    from retrieval import service

    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(tmp_path / "shared"))
    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(12)}, name="resumed")
    _stopped_at_the_third_batch(root, monkeypatch)
    service.refresh(root, "turbovec")
    elsewhere = copy_tree(root)
    service.refresh(elsewhere, "turbovec")
    state = json.loads((elsewhere / ".retrieval" / "turbovec" / "manifest.json").read_text())["state"]
    assert state["embedded"] == 0 and state["shared"] == state["generation"]["n"]


def test_ctrl_c_inside_a_large_batch_keeps_the_model_batches_already_embedded(make_tree, monkeypatch):
    """A build hands the model 256 texts at a time: a Ctrl-C inside that call lost every vector
    computed in it (15-40 s of work on two cores), though the progress line promises them."""
    import json

    from retrieval import service
    from retrieval.embed import BATCH_SIZE, Embedder

    files = 80  # a chunk each: one batch of them, three model batches
    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(files)}, name="interrupted-inside")
    monkeypatch.setenv("RETRIEVAL_EMBED_BATCH", "256")
    monkeypatch.setenv("RETRIEVAL_EMBED_CHECKPOINT_SECONDS", "3600")  # no timed checkpoint in this build
    embed_with_model = Embedder.embed_with_model
    given = []

    def interrupted(self, texts, **kwargs):
        # Ctrl-C once the model has been handed more than one model batch of texts.
        given.append(len(texts))
        if sum(given) > BATCH_SIZE:
            raise KeyboardInterrupt
        return embed_with_model(self, texts, **kwargs)

    monkeypatch.setattr(Embedder, "embed_with_model", interrupted)
    with pytest.raises(KeyboardInterrupt):
        service.refresh(root, "turbovec")
    monkeypatch.setattr(Embedder, "embed_with_model", embed_with_model)
    service.refresh(root, "turbovec")
    state = json.loads((root / ".retrieval" / "turbovec" / "manifest.json").read_text())["state"]
    assert state["generation"]["n"] > 2 * BATCH_SIZE
    assert state["embedded"] == state["generation"]["n"] - BATCH_SIZE  # the first model batch was kept


def test_a_batch_larger_than_the_models_is_checkpointed_as_its_model_batches_finish(make_tree, monkeypatch):
    """RETRIEVAL_EMBED_BATCH hands the model that many texts at once; the timed checkpoint came
    only after all of them, so a build given a large batch was checkpointed once, at its end, and a
    kill lost everything (the README promises a checkpoint every RETRIEVAL_EMBED_CHECKPOINT_SECONDS)."""
    from retrieval import service
    from retrieval.embed import BATCH_SIZE
    from retrieval.vectors import store as vstore

    files = 80  # a chunk each: three model batches of one batch handed over
    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(files)}, name="one-large-batch")
    monkeypatch.setenv("RETRIEVAL_EMBED_BATCH", "100000")
    monkeypatch.setenv("RETRIEVAL_EMBED_CHECKPOINT_SECONDS", "0")
    written = []
    write_checkpoint = vstore.write_checkpoint

    def counted(directory, name, model, keys, *args, **kwargs):
        written.append(len(keys))
        return write_checkpoint(directory, name, model, keys, *args, **kwargs)

    monkeypatch.setattr(vstore, "write_checkpoint", counted)
    service.refresh(root, "turbovec")
    assert written == [BATCH_SIZE, BATCH_SIZE, files - 2 * BATCH_SIZE]


def test_refreshes_stopped_one_after_another_while_writing_their_generation_leave_one_unfinished(
        make_tree, rewrite, monkeypatch):
    """Each refresh wrote its generation under a number past every file there, so each one killed
    or interrupted after writing its vectors (the memory peak of a large build) left a whole
    generation more in the store until one committed."""
    from retrieval import service
    from retrieval.vectors import build

    root = make_tree({f"pkg/m{i}.py": module(i, 0) for i in range(4)}, name="stopped")
    service.refresh(root, "turbovec")
    before = spans(service.search(root, "retry the request", retriever="turbovec", top_k=5).hits)
    store = root / ".retrieval" / "turbovec"
    committed = {n for n in os.listdir(store) if n.startswith("vec-")}

    def stopped(vectors, bits, keys=None):  # the float vectors are on disk, the quantized index not yet
        raise KeyboardInterrupt

    real = build.build_turbovec
    monkeypatch.setattr(build, "build_turbovec", stopped)
    # As a SIGKILL leaves them: without the cleanup an interrupted refresh does (below).
    cleanup = service._collect_uncommitted
    monkeypatch.setattr(service, "_collect_uncommitted", lambda *args: None)
    for version in (1, 2, 3):
        rewrite(root / "pkg/m0.py", module(0, version))
        with pytest.raises(KeyboardInterrupt):
            service.refresh(root, "turbovec")
        unfinished = {n.split(".")[0] for n in os.listdir(store) if n.startswith("vec-") and n not in committed}
        assert len(unfinished) == 1, sorted(os.listdir(store))
    # Interrupted, a refresh removes what it wrote beside the committed index (its checkpoint stays,
    # to be resumed from).
    monkeypatch.setattr(service, "_collect_uncommitted", cleanup)
    rewrite(root / "pkg/m0.py", module(0, 4))
    with pytest.raises(KeyboardInterrupt):
        service.refresh(root, "turbovec")
    assert {n for n in os.listdir(store) if n.startswith("vec-")} == committed
    assert spans(service.search(root, "retry the request", retriever="turbovec", top_k=5, stale_ok=True).hits) == before
    monkeypatch.setattr(build, "build_turbovec", real)
    service.refresh(root, "turbovec")
    assert len([n for n in os.listdir(store) if n.startswith("vec-")]) == 3  # one generation: .f32, .rows, .tv
