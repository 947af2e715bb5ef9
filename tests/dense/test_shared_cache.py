"""The machine-wide embedding cache: a second checkout embeds only what the first did not."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.extra("local", "turbovec")

FILES = {
    "src/retry.py": "def retry_upload(request, attempts=3):\n    for _ in range(attempts):\n        send(request)\n",
    "src/cache.py": "def evict_oldest(cache):\n    cache.pop(next(iter(cache)))\n",
    "docs/guide.md": "# Guide\n\nUploads are retried three times.\n",
}


def _state(root):
    return json.loads((root / ".retrieval" / "turbovec" / "manifest.json").read_text())["state"]


@pytest.fixture
def shared(tmp_path, monkeypatch):
    directory = tmp_path / "embeddings"
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(directory))
    return directory


def test_a_second_checkout_takes_every_vector_from_the_cache(make_tree, shared):
    from retrieval import service
    from retrieval.vectors.store import Generation

    first, second = make_tree(FILES), make_tree(FILES)
    service.refresh(first, "turbovec")
    assert _state(first)["embedded"] == 3
    service.refresh(second, "turbovec")
    assert (_state(second)["embedded"], _state(second)["shared"]) == (0, 3)
    a = Generation(str(first / ".retrieval" / "turbovec"), _state(first)["generation"])
    b = Generation(str(second / ".retrieval" / "turbovec"), _state(second)["generation"])
    assert (a.vectors == b.vectors).all()
    hits = service.search(second, "retry a failed upload", retriever="turbovec").hits
    assert hits[0].source_path == "src/retry.py"


def test_an_edited_copy_embeds_only_its_new_chunk(make_tree, shared):
    from retrieval import service

    service.refresh(make_tree(FILES), "turbovec")
    edited = make_tree(dict(FILES, **{"src/cache.py": "def drop_entry(cache, key):\n    cache.pop(key, None)\n"}))
    service.refresh(edited, "turbovec")
    assert (_state(edited)["embedded"], _state(edited)["shared"]) == (1, 2)


def test_off_means_every_checkout_embeds_for_itself(make_tree, monkeypatch):
    from retrieval import service

    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", "off")
    service.refresh(make_tree(FILES), "turbovec")
    second = make_tree(FILES)
    service.refresh(second, "turbovec")
    assert (_state(second)["embedded"], _state(second)["shared"]) == (3, 0)


def test_a_cache_named_where_a_file_stands_is_said_once_and_the_builds_go_on(make_tree, tmp_path, monkeypatch,
                                                                            capfd):
    from retrieval import service

    blocked = tmp_path / "not-a-directory"
    blocked.write_text("x\n")
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(blocked))
    for root in (make_tree(FILES), make_tree(FILES)):
        service.refresh(root, "turbovec")
        assert _state(root)["embedded"] == 3
    said = [line for line in capfd.readouterr().err.splitlines() if "RETRIEVAL_EMBED_CACHE" in line]
    assert len(said) == 1 and str(blocked) in said[0] and "cannot be written" in said[0]
    assert blocked.read_text() == "x\n"


def test_a_torn_or_foreign_shard_is_skipped_and_the_build_embeds_instead(make_tree, shared):
    from retrieval import service

    service.refresh(make_tree(FILES), "turbovec")
    (model_dir,) = list(shared.iterdir())
    (shard,) = [p for p in model_dir.iterdir() if p.name.startswith("shard-")]
    shard.write_bytes(shard.read_bytes()[:-100])  # torn
    (model_dir / "shard-00000000000000000001-1.emb").write_bytes(b"not a shard")
    second = make_tree(FILES)
    report = service.refresh(second, "turbovec")
    assert report.status == "indexed" and _state(second)["embedded"] == 3


def test_a_cached_vector_changed_in_place_is_embedded_again_not_copied_into_the_next_index(make_tree, shared):
    """Bytes of a shard changed where its size does not show: the vector went into every later
    index of the same text, with a fresh checksum of its own."""
    import numpy as np

    from retrieval import service
    from retrieval.vectors.store import Generation

    first = make_tree(FILES)
    service.refresh(first, "turbovec")
    (model_dir,) = list(shared.iterdir())
    (shard,) = [p for p in model_dir.iterdir() if p.name.startswith("shard-")]
    data = bytearray(shard.read_bytes())
    vectors_end = len(data) - 4 * 3  # the three vectors' CRC-32s end the shard
    row = np.frombuffer(bytes(data[vectors_end - 4 * 384:vectors_end]), dtype="<f4")
    data[vectors_end - 4 * 384:vectors_end] = (-row).astype("<f4").tobytes()  # still unit-long
    shard.write_bytes(bytes(data))
    second = make_tree(FILES)
    service.refresh(second, "turbovec")
    assert (_state(second)["embedded"], _state(second)["shared"]) == (1, 2)
    a = Generation(str(first / ".retrieval" / "turbovec"), _state(first)["generation"])
    b = Generation(str(second / ".retrieval" / "turbovec"), _state(second)["generation"])
    first_vectors = {a.key(i): a.vectors[i] for i in range(a.n)}
    second_vectors = {b.key(i): b.vectors[i] for i in range(b.n)}
    assert first_vectors.keys() == second_vectors.keys()
    # Embedded again, the vector agrees with the first to float rounding (torch's batches of other
    # sizes move the last bits); the negated copy would be 2 apart.
    assert all(np.abs(first_vectors[k] - second_vectors[k]).max() < 1e-5 for k in first_vectors)


def test_the_cache_keeps_the_newest_shards_within_its_size_limit(tmp_path, monkeypatch):
    import numpy as np

    from retrieval.vectors.shared import SHARD_PREFIX, SharedEmbeddings

    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(tmp_path / "c"))
    cache = SharedEmbeddings("model-x", 4)
    cache.add([bytes([0]) * 16], np.zeros((1, 4), dtype=np.float32))
    (first,) = (tmp_path / "c").rglob(SHARD_PREFIX + "*")
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE_MB", str(2.5 * first.stat().st_size / (1024 * 1024)))  # two fit
    for n in range(1, 5):
        cache.add([bytes([n]) * 16], np.full((1, 4), n, dtype=np.float32))
    assert len(list((tmp_path / "c").rglob(SHARD_PREFIX + "*"))) == 2
    fresh = SharedEmbeddings("model-x", 4)
    assert fresh.get(bytes([4]) * 16).tolist() == [4.0] * 4  # the newest survive
    assert fresh.get(bytes([0]) * 16) is None  # the oldest went
    assert SharedEmbeddings("model-y", 4).get(bytes([4]) * 16) is None  # another model, another cache


def test_many_small_shards_are_merged_and_read_without_holding_a_descriptor_each(tmp_path, monkeypatch):
    """Each refresh after an agent's edit added a shard of a few kilobytes, each mapped through a
    descriptor of its own: past the process's limit (1,024) every refresh failed with "too many
    open files" and answers went stale (a soak of the warm path)."""
    import os

    import numpy as np

    from retrieval.vectors.shared import MAX_SMALL_SHARDS, SHARD_PREFIX, SharedEmbeddings

    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(tmp_path / "c"))
    cache = SharedEmbeddings("model-x", 4)
    for n in range(MAX_SMALL_SHARDS + 10):
        cache.add([bytes([n]) * 16], np.full((1, 4), n, dtype=np.float32))
    cache.add([bytes([3]) * 16], np.full((1, 4), 99, dtype=np.float32))  # a key embedded again, later
    assert len(list((tmp_path / "c").rglob(SHARD_PREFIX + "*"))) <= MAX_SMALL_SHARDS
    fresh = SharedEmbeddings("model-x", 4)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert all(fresh.get(bytes([n]) * 16) is not None for n in range(MAX_SMALL_SHARDS + 10))
    assert fresh.get(bytes([3]) * 16).tolist() == [99.0] * 4  # the newest vector of a key
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 1  # read, not mapped: no descriptor each
