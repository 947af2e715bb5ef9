"""The on-disk store: atomic writes, layout, the writer lock, and recovery from damage."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval import service
from retrieval.lexical.segment import DiskSegment
from retrieval.store import atomic, layout
from retrieval.store.lock import LockBusy, WriterLock


def subprocess_env() -> dict:
    env = dict(os.environ)
    for name in ("RETRIEVAL_INDEX_DIR", "RETRIEVAL_MAX_TOTAL_BYTES"):
        env.pop(name, None)
    return env


def ranking(hits):
    return [(h.rank, h.docid, round(h.score, 9)) for h in hits]


# -- atomic writes and layout -------------------------------------------------------------------


def test_write_json_replaces_the_target_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "m.json"
    atomic.write_json(str(target), {"b": 1, "a": [1, 2]})
    atomic.write_json(str(target), {"b": 2, "a": "é"})
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": "é", "b": 2}
    assert os.listdir(tmp_path) == ["m.json"]


def test_json_is_written_compact_and_key_sorted_so_the_same_index_is_the_same_bytes():
    assert atomic.dumps({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp(tmp_path):
    target = tmp_path / "m.json"
    atomic.write_json(str(target), {"ok": True})
    with pytest.raises(TypeError):
        atomic.write_bytes(str(target), "not bytes")  # type: ignore[arg-type]
    assert json.loads(target.read_text()) == {"ok": True}
    assert os.listdir(tmp_path) == ["m.json"]


def test_stale_temp_files_are_removed_and_nothing_else(tmp_path):
    (tmp_path / ".tmp-abc").write_text("torn")
    (tmp_path / "manifest.json").write_text("{}")
    atomic.remove_stale_temps(str(tmp_path))
    assert os.listdir(tmp_path) == ["manifest.json"]


def test_stale_temp_files_are_removed_as_deep_as_asked_and_never_through_a_link(tmp_path):
    for sub in ("dense", "dense/deeper"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / ".tmp-torn").write_text("torn")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".tmp-theirs").write_text("not ours")
    (tmp_path / "linked").symlink_to(elsewhere)
    atomic.remove_stale_temps(str(tmp_path), levels=2)
    assert not (tmp_path / "dense" / ".tmp-torn").exists()
    assert (tmp_path / "dense" / "deeper" / ".tmp-torn").exists()
    assert (elsewhere / ".tmp-theirs").exists()


def test_the_store_lives_beside_the_root_by_default(tmp_path):
    assert layout.store_dir(str(tmp_path)) == str(tmp_path / ".retrieval")


def test_the_index_directory_variable_moves_the_store_one_subdirectory_per_root(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "shared"))
    a = layout.store_dir(str(tmp_path / "x" / "repo"))
    b = layout.store_dir(str(tmp_path / "y" / "repo"))
    assert os.path.dirname(a) == os.path.dirname(b) == str(tmp_path / "shared")
    assert a != b
    assert os.path.basename(a).startswith("repo-")
    assert layout.store_dir(str(tmp_path / "x" / "repo")) == a


def test_a_root_with_a_name_as_long_as_a_file_name_can_be_has_a_moved_store(tmp_path, monkeypatch, run):
    """Its name plus the tag was longer than a directory's name may be: neither index nor query worked."""
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "shared"))
    root = tmp_path / ("é" * 120 + "x" * 14)  # 254 bytes
    root.mkdir()
    (root / "a.py").write_text("def long_named_root():\n    pass\n")
    assert run("index", "--root", root).exit_code == 0
    result = run("query", "--root", root, "long_named_root")
    assert result.exit_code == 0 and result.stdout.startswith("a.py:1-2")
    assert layout.store_dir(str(root)) != layout.store_dir(str(root) + "y")


def test_one_tree_reached_through_a_link_has_one_moved_store(sample_repo, tmp_path, monkeypatch):
    """As its `.retrieval` is one directory: a second path made a second store, a full rebuild."""
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "shared"))
    link = tmp_path / "link"
    link.symlink_to(sample_repo, target_is_directory=True)
    assert layout.store_dir(str(link)) == layout.store_dir(str(sample_repo))
    service.refresh(str(sample_repo))
    assert service.refresh(str(link)).status == "up to date"
    assert len(os.listdir(tmp_path / "shared")) == 1


def test_a_moved_store_is_used_for_indexing_and_cleaning(sample_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "shared"))
    service.refresh(str(sample_repo))
    store = layout.store_dir(str(sample_repo))
    assert os.path.isfile(os.path.join(store, "lexical", "manifest.json"))
    assert not (sample_repo / ".retrieval").exists()
    assert service.search(str(sample_repo), "LRUCache").hits
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.py").write_text("x = 1\n")
    service.refresh(str(other))
    assert service.clean(str(sample_repo)) is True
    assert not os.path.exists(store)
    assert os.path.isdir(layout.store_dir(str(other)))


def test_an_index_directory_variable_naming_a_dangling_link_says_so_in_one_line(sample_repo, tmp_path, monkeypatch,
                                                                              run):
    link = tmp_path / "indexes"
    link.symlink_to(tmp_path / "gone")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(link))
    result = run("query", "--root", sample_repo, "LRUCache")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: RETRIEVAL_INDEX_DIR={link} is a symbolic link to {tmp_path / 'gone'}, which does not exist: "
        "create that directory or point the variable at another (or unset it)"]


def test_a_read_only_store_names_the_way_out_that_is_not_taken_yet(tmp_path, monkeypatch):
    """With RETRIEVAL_INDEX_DIR set to a read-only directory, the error said to set it."""
    import errno

    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.delenv("RETRIEVAL_INDEX_DIR", raising=False)
    assert str(layout.unwritable("write", "/repo/.retrieval", read_only)).endswith(
        "(set RETRIEVAL_INDEX_DIR=/a/writable/directory to keep indexes elsewhere)")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path))
    assert str(layout.unwritable("write", str(tmp_path / "repo-1"), read_only)).endswith(
        f"(point RETRIEVAL_INDEX_DIR, now {tmp_path}, at a writable directory)")


def test_the_store_keeps_itself_out_of_git(sample_repo):
    service.refresh(str(sample_repo))
    assert (sample_repo / ".retrieval" / ".gitignore").read_text() == "*\n"
    marker = json.loads((sample_repo / ".retrieval" / "STORE.json").read_text())
    assert marker == {"schema": layout.SCHEMA, "root": str(sample_repo)}


def test_a_directory_of_the_users_where_the_store_goes_is_not_taken_over_so_clean_never_deletes_it(
        sample_repo, run):
    """It was: the first query wrote its index into it, and `clean` then removed it whole."""
    mine = sample_repo / ".retrieval" / "notes.txt"
    mine.parent.mkdir()
    mine.write_text("my own notes\n")
    result = run("query", "--root", sample_repo, "LRUCache")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: refusing to keep the index in {mine.parent}: it holds notes.txt, which retrieval did not write "
        "(move that away, or set RETRIEVAL_INDEX_DIR to keep the index elsewhere)"]
    assert run("clean", "--root", sample_repo).exit_code == 1
    # status says so too: it listed every index as missing, to be built by a command that fails.
    result = run("status", "--root", sample_repo)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: refusing to keep the index in {mine.parent}")
    assert sorted(os.listdir(mine.parent)) == ["notes.txt"] and mine.read_text() == "my own notes\n"


def test_a_marker_written_by_another_writer_between_the_checks_is_not_taken_for_a_foreign_file(
        tmp_path, monkeypatch):
    """It was (CI, two `index` processes at once): one saw no STORE.json, the other wrote it, and
    the first then listed the directory and refused the store for holding STORE.json."""
    store = tmp_path / ".retrieval"
    real_exists = os.path.exists
    raced = []

    def marker_lands_after_the_check(path):
        found = real_exists(path)
        if str(path).endswith("STORE.json") and not found and not raced:
            raced.append(path)
            layout.write_markers(str(store), str(tmp_path))  # the other writer, just then
        return found

    monkeypatch.setattr(layout.os.path, "exists", marker_lands_after_the_check)
    layout.ensure_store(str(store))
    assert raced and sorted(os.listdir(store)) == [".gitignore", "STORE.json"]


def _usable_manifest(**spoiled) -> bytes:
    """A manifest read_manifest accepts, with the fields in `spoiled` put in: each case below spoils
    one thing only (a manifest lacking `config` too was refused whatever its retriever said)."""
    manifest = {"schema": layout.SCHEMA, "retriever": "lexical", "config": {"options": {}}, "state": {},
                "files": {column: [] for column in layout.FILE_COLUMNS}}
    manifest.update(spoiled)
    return json.dumps(manifest).encode()


def test_the_usable_manifest_the_cases_below_spoil_is_read(tmp_path):
    (tmp_path / "lexical").mkdir()
    (tmp_path / "lexical" / "manifest.json").write_bytes(_usable_manifest())
    assert layout.read_manifest(str(tmp_path), "lexical")["retriever"] == "lexical"


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{not json", "corrupt"),
        (b"[1, 2, 3]", "schema"),
        (_usable_manifest(schema=layout.SCHEMA - 1), "older version"),
        (_usable_manifest(schema=layout.SCHEMA + 1), "newer version"),
        (_usable_manifest(schema="2"), "unknown schema"),
        (_usable_manifest(retriever="other"), "corrupt"),
        (_usable_manifest(files=[]), "corrupt"),
        (_usable_manifest(files={**{c: [] for c in layout.FILE_COLUMNS}, "path": ["a.py"]}), "corrupt"),
        # A damaged optional column is no traceback either.
        (_usable_manifest(files={**{c: [] for c in layout.FILE_COLUMNS}, "marked": 5}), "corrupt"),
        (_usable_manifest(files={**{c: [] for c in layout.FILE_COLUMNS}, "marked": True}), "corrupt"),
        (_usable_manifest(config={"options": []}), "corrupt"),
        (_usable_manifest(state=[]), "corrupt"),
    ],
)
def test_an_unusable_manifest_is_a_manifest_problem(tmp_path, content, problem):
    (tmp_path / "lexical").mkdir()
    (tmp_path / "lexical" / "manifest.json").write_bytes(content)
    with pytest.raises(layout.ManifestProblem, match=problem):
        layout.read_manifest(str(tmp_path), "lexical")


def test_a_missing_manifest_reads_as_none(tmp_path):
    assert layout.read_manifest(str(tmp_path), "lexical") is None


# -- the writer lock ------------------------------------------------------------------------------


def test_the_writer_lock_is_exclusive_until_released(tmp_path):
    path = str(tmp_path / "lock")
    first, second = WriterLock(path), WriterLock(path)
    first.acquire()
    try:
        with pytest.raises(LockBusy, match="another process is writing"):
            second.acquire(timeout=0)
        with pytest.raises(LockBusy):
            second.acquire(timeout=0.1)
    finally:
        first.release()
    second.acquire(timeout=0)
    second.release()


def test_a_refresh_waits_no_longer_than_its_lock_timeout(sample_repo):
    service.refresh(str(sample_repo))
    holder = WriterLock(str(sample_repo / ".retrieval" / "lock"))
    with holder:
        with pytest.raises(LockBusy):
            service.refresh(str(sample_repo), lock_timeout=0)


def test_a_query_answers_from_the_previous_snapshot_while_another_process_writes(sample_repo, rewrite):
    service.refresh(str(sample_repo))
    rewrite(sample_repo / "docs/guide.md", "# Guide\n\nQuokkas.\n")
    with WriterLock(str(sample_repo / ".retrieval" / "lock")):
        result = service.search(str(sample_repo), "config file")
    assert result.hits
    assert any("another process" in note for note in result.notes)


# -- damaged stores are rebuilt -------------------------------------------------------------------

QUERIES = ["parse config file", "retries", "LRUCache evict"]


def clean_results(copy_tree, root):
    fresh = copy_tree(root)
    return {q: ranking(service.search(str(fresh), q, top_k=50).hits) for q in QUERIES}


def results(root, **kw):
    return {q: ranking(service.search(str(root), q, top_k=50, **kw).hits) for q in QUERIES}


def manifest_file(root):
    return root / ".retrieval" / "lexical" / "manifest.json"


def only_segment(root):
    (name,) = [n for n in os.listdir(root / ".retrieval" / "lexical") if n.startswith("seg-")]
    return root / ".retrieval" / "lexical" / name


def assert_store_intact(root):
    manifest = json.loads(manifest_file(root).read_text())
    for seg in manifest["state"]["segments"]:
        segment = DiskSegment(str(root / ".retrieval" / "lexical" / seg["name"]))
        assert len(segment.lens) == segment.n_docs
        for term in segment.terms():
            segment.postings(term)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda root: manifest_file(root).write_bytes(b"\x00garbage{{{"), "corrupt"),
        (lambda root: manifest_file(root).write_text(""), "corrupt"),
        (lambda root: manifest_file(root).write_text(
            json.dumps(dict(json.loads(manifest_file(root).read_text()), schema=0))), "schema"),
    ],
    ids=["garbage", "empty", "old-schema"],
)
def test_a_damaged_manifest_is_reported_and_rebuilt_by_the_next_query(sample_repo, copy_tree, damage, message):
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    damage(sample_repo)
    notes = []
    got = {q: ranking(service.search(str(sample_repo), q, top_k=50, progress=notes.append).hits) for q in QUERIES}
    assert got == expected
    assert [n for n in notes if "rebuilding" in n] == [next(n for n in notes if message in n)]  # said once
    assert service.status(str(sample_repo))[0]["state"] == "ready"
    assert_store_intact(sample_repo)


@pytest.mark.parametrize("damage", ["garbage", "old-schema"])
def test_a_damaged_manifest_is_reported_and_rebuilt_by_the_next_refresh(sample_repo, copy_tree, damage):
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    if damage == "garbage":
        manifest_file(sample_repo).write_text("]]]")
    else:
        data = json.loads(manifest_file(sample_repo).read_text())
        data["schema"] = 0
        manifest_file(sample_repo).write_text(json.dumps(data))
    notes = []
    report = service.refresh(str(sample_repo), progress=notes.append)
    assert report.status == "indexed"
    assert any("rebuilding" in n for n in notes), notes
    assert results(sample_repo) == expected
    assert_store_intact(sample_repo)


@pytest.mark.parametrize("victim", ["post.bin", "docs.bin", "files.json", "lex-0000.json", "seg.json"])
def test_a_truncated_segment_file_is_reported_and_rebuilt_by_the_next_query(sample_repo, copy_tree, victim):
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    path = only_segment(sample_repo) / victim
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])
    notes = []
    got = {q: ranking(service.search(str(sample_repo), q, top_k=50, progress=notes.append).hits) for q in QUERIES}
    assert got == expected
    assert any("damaged" in n and "rebuilding" in n for n in notes), notes
    assert_store_intact(sample_repo)


def test_a_truncated_segment_is_rebuilt_even_when_the_tree_changed_since(sample_repo, copy_tree, rewrite):
    service.refresh(str(sample_repo))
    path = only_segment(sample_repo) / "post.bin"
    path.write_bytes(path.read_bytes()[:3])
    rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    def shrink(self):\n        pass\n")
    expected = clean_results(copy_tree, sample_repo)
    notes = []
    got = {q: ranking(service.search(str(sample_repo), q, top_k=50, progress=notes.append).hits) for q in QUERIES}
    assert got == expected
    assert any("rebuilding" in n for n in notes)


def test_a_segment_whose_shard_count_was_edited_to_zero_is_rebuilt_not_a_crash(sample_repo, copy_tree):
    """seg.json is read unchecked; a term's shard is its hash modulo the count (ZeroDivisionError)."""
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    seg = only_segment(sample_repo) / "seg.json"
    seg.write_text(json.dumps(dict(json.loads(seg.read_text()), n_shards=0)))
    notes = []
    assert results(sample_repo, progress=notes.append) == expected
    assert len(notes) == 1 and "seg.json is damaged" in notes[0] and "rebuilding" in notes[0], notes


@pytest.mark.parametrize("missing", ["config", "state"])
def test_a_manifest_missing_required_fields_is_rebuilt_not_a_crash(sample_repo, copy_tree, missing):
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    data = json.loads(manifest_file(sample_repo).read_text())
    del data[missing]
    manifest_file(sample_repo).write_text(json.dumps(data))
    service.refresh(str(sample_repo))  # what `retrieval index` does
    assert results(sample_repo) == expected  # what `retrieval query` does


# -- an index written by another version ---------------------------------------------------------


def edit_manifest(root, change) -> None:
    data = json.loads(manifest_file(root).read_text())
    change(data)
    manifest_file(root).write_text(json.dumps(data))


@pytest.mark.parametrize("step", [-1, 1], ids=["older", "newer"])
def test_an_index_whose_term_version_differs_is_rebuilt_with_one_line_saying_why(sample_repo, copy_tree, step):
    from retrieval.lexical import features

    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    written = features.VERSION + step
    edit_manifest(sample_repo, lambda m: m["config"]["retriever"]["terms"].update(features=written))
    notes = []
    assert results(sample_repo, progress=notes.append) == expected
    assert notes == [f"note: the lexical index was built by another version of retrieval or with other settings "
                     f"(terms.features {written}, now {features.VERSION}); rebuilding it"]
    assert json.loads(manifest_file(sample_repo).read_text())["config"]["retriever"]["terms"]["features"] == features.VERSION


def test_an_index_of_another_version_is_rebuilt_not_read_even_when_staleness_is_allowed(sample_repo, copy_tree):
    """--stale-ok allows files changed since; query terms made another way than the index's made
    wrong hits (an index stemmed, read unstemmed)."""
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    edit_manifest(sample_repo, lambda m: m["config"]["retriever"]["terms"].update(stemming=False))
    notes = []
    assert results(sample_repo, stale_ok=True, progress=notes.append) == expected
    assert len(notes) == 1 and "(terms.stemming False, now True); rebuilding it" in notes[0], notes


def test_a_segment_of_a_newer_format_is_rebuilt_with_one_line_naming_both_formats(sample_repo, copy_tree):
    from retrieval.lexical.segment import SEGMENT_FORMAT

    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    seg = only_segment(sample_repo) / "seg.json"
    seg.write_text(json.dumps(dict(json.loads(seg.read_text()), format=SEGMENT_FORMAT + 1)))
    notes = []
    assert results(sample_repo, progress=notes.append) == expected
    assert len(notes) == 1 and notes[0].endswith(
        f"has an unknown format ({SEGMENT_FORMAT + 1}; this version reads {SEGMENT_FORMAT})); rebuilding it"), notes


def test_options_given_to_index_rebuild_it_without_calling_it_another_version(sample_repo):
    service.refresh(str(sample_repo))
    notes = []
    service.refresh(str(sample_repo), options=service.IndexOptions(exclude=("docs/",)), progress=notes.append)
    assert not [n for n in notes if "another version" in n]


@pytest.mark.parametrize("step, age", [(-1, "an older"), (1, "a newer")])
def test_a_manifest_of_another_schema_is_rebuilt_naming_the_version_that_wrote_it(sample_repo, copy_tree, step, age):
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    edit_manifest(sample_repo, lambda m: m.update(schema=layout.SCHEMA + step))
    notes = []
    assert results(sample_repo, progress=notes.append) == expected
    assert notes == [f"note: the lexical index was written by {age} version of retrieval (store schema "
                     f"{layout.SCHEMA + step}; this one reads {layout.SCHEMA}); rebuilding it"]
    assert json.loads(manifest_file(sample_repo).read_text())["schema"] == layout.SCHEMA


@pytest.mark.parametrize("option, value", [("include", "src/**"), ("exclude", 7), ("max_bytes", -5),
                                           ("policy", []), ("policy", {"code": -1}), ("bm25", ["a", 1])])
def test_remembered_options_edited_into_the_wrong_shape_are_a_damaged_index_rebuilt(sample_repo, copy_tree,
                                                                                     option, value):
    """A string of globs was one glob a character (nothing indexed: no hits, no word why), a
    negative size cap indexed nothing, a policy not a mapping or a k1 not a number a traceback."""
    service.refresh(str(sample_repo))
    expected = clean_results(copy_tree, sample_repo)
    edit_manifest(sample_repo, lambda m: m["config"]["options"].update({option: value}))
    assert service.status(str(sample_repo))[0]["state"] == "error"
    notes = []
    assert results(sample_repo, progress=notes.append) == expected
    assert len(notes) == 1 and "index is corrupt" in notes[0] and "rebuilding" in notes[0], notes


@pytest.mark.parametrize("command", ["query", "index"])
@pytest.mark.parametrize("options", [{"include": 5}, {"exclude": [7]}, {"profile": 7}, {"max_bytes": "big"}])
def test_a_manifest_remembering_options_index_never_writes_is_rebuilt(sample_repo, run, command, options):
    """A tampered manifest's options (a store committed to a repository) made every query a
    traceback (`"include": 5`) or an error naming an option nobody gave (`unknown profile 7`)."""
    service.refresh(str(sample_repo))
    data = json.loads(manifest_file(sample_repo).read_text())
    data["config"]["options"].update(options)
    manifest_file(sample_repo).write_text(json.dumps(data))
    result = run(command, "--root", sample_repo, "--retriever", "lexical", *(["class"] if command == "query" else []))
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.stderr.splitlines() if "corrupt" in line]
    assert note.startswith("note: the lexical index is corrupt (its remembered option ") and note.endswith("; rebuilding it")
    assert json.loads(manifest_file(sample_repo).read_text())["config"]["options"]["include"] == []


def test_a_manifest_naming_a_segment_outside_the_store_is_rebuilt_without_reading_it(make_tree, run):
    """A tampered manifest's `../../../other/.retrieval/lexical/seg-000001` had the other index's
    files answer for this root."""
    other = make_tree({"secret_plan.py": "def secret_plan():\n    return 1\n"}, name="other")
    assert run("index", "--root", other, "--retriever", "lexical").exit_code == 0
    root = make_tree({"app.py": "def secret_plan_here():\n    return 2\n"}, name="cloned")
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    (segment,) = [p.name for p in (other / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    data = json.loads(manifest_file(root).read_text())
    data["state"] = json.loads(manifest_file(other).read_text())["state"]  # its counts, so they agree
    data["state"]["segments"][0]["name"] = os.path.relpath(other / ".retrieval" / "lexical" / segment,
                                                            root / ".retrieval" / "lexical")
    manifest_file(root).write_text(json.dumps(data))
    result = run("query", "--root", root, "--json", "--stale-ok", "secret plan")
    assert result.exit_code == 0, result.output
    assert [h["path"] for h in json.loads(result.stdout)["results"]] == ["app.py"]
    assert "the lexical index is damaged (the manifest names a segment outside the index" in result.stderr


def test_leftover_temp_files_from_a_crashed_writer_are_cleaned_up(sample_repo):
    service.refresh(str(sample_repo))
    stray = sample_repo / ".retrieval" / "lexical" / ".tmp-crashed"
    stray.write_text("half a manifest")
    service.refresh(str(sample_repo))
    assert not stray.exists()


def test_a_build_whose_store_markers_were_removed_under_it_writes_them_again(make_tree, run, monkeypatch):
    """`git clean -fdx` during an `index` removed STORE.json and the store's .gitignore: the build
    finished a store that `git status` listed as untracked and `clean` refused as no index."""
    root = make_tree({f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(40)})
    store = root / ".retrieval"
    settle = service._settle_racy

    def git_clean_then_settle(*args):  # (the build's last step before its commit)
        for name in ("STORE.json", ".gitignore"):
            (store / name).unlink()
        return settle(*args)

    monkeypatch.setattr(service, "_settle_racy", git_clean_then_settle)
    service.refresh(str(root), "lexical")
    assert (store / "STORE.json").exists() and (store / ".gitignore").read_text() == "*\n"
    assert run("clean", "--root", root).exit_code == 0 and not store.exists()


def _nest(directory, levels: int) -> None:
    """directory/d/d/... `levels` deep, made by descriptors (its path outgrows PATH_MAX)."""
    os.mkdir(directory)
    fd = os.open(directory, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
        fh.write("x")
    os.close(fd)


def test_a_directory_in_the_store_deeper_than_the_recursion_limit_is_collected_and_cleaned(sample_repo, run):
    """Committed to a repository (a stray segment, a directory for the manifest), it failed every
    refresh and `clean` with "maximum recursion depth exceeded"."""
    service.refresh(str(sample_repo))
    lexical = sample_repo / ".retrieval" / "lexical"
    try:
        _nest(lexical / "seg-000099", sys.getrecursionlimit() + 500)
        (sample_repo / "extra.py").write_text("def extra_function():\n    return 1\n")
        result = run("query", "--root", sample_repo, "extra function")
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("extra.py:") and not (lexical / "seg-000099").exists()
        # (in a directory of ours: clean refuses a store holding what retrieval did not write)
        _nest(lexical / "deep", sys.getrecursionlimit() + 500)
        result = run("clean", "--root", sample_repo)
        assert result.exit_code == 0, result.output
        assert not (sample_repo / ".retrieval").exists() and (sample_repo / "extra.py").exists()
    finally:  # pytest's own removal of old temporary directories would fail on what is left
        subprocess.run(["rm", "-rf", str(sample_repo / ".retrieval")], check=False)


# -- concurrent writers ------------------------------------------------------------------------


def test_two_index_processes_started_at_once_both_succeed_and_leave_a_valid_store(make_tree, copy_tree):
    files = {f"pkg/m{i}.py": f"def function_{i}(arg):\n    return compute_{i % 7}(arg) + {i}\n" for i in range(150)}
    root = make_tree(files, name="concurrent")
    command = [sys.executable, "-m", "retrieval.cli", "index", "--root", str(root)]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=subprocess_env()) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        assert out.startswith("lexical: ")
    assert service.status(str(root))[0]["state"] == "ready"
    assert_store_intact(root)
    leftovers = [n for n in os.listdir(root / ".retrieval" / "lexical") if n.startswith(".tmp-") or n.endswith(".tmp")]
    assert leftovers == []
    fresh = copy_tree(root)
    for query in ["compute_3", "function_42", "arg return"]:
        assert ranking(service.search(str(root), query, top_k=20).hits) == ranking(
            service.search(str(fresh), query, top_k=20).hits
        )


def notes_of_a_writer_timing_out(path: str) -> list[str]:
    """What a writer says while another holds the lock at `path`, until its 1.2 s timeout."""
    holder = WriterLock(path)
    holder.acquire(timeout=0)
    said: list[str] = []
    try:
        with pytest.raises(LockBusy):
            WriterLock(path).acquire(timeout=1.2, on_wait=said.append)
    finally:
        holder.release()
    return said


def test_a_writer_waiting_on_the_lock_says_so_once_naming_the_holder(tmp_path):
    said = notes_of_a_writer_timing_out(str(tmp_path / "lock"))
    assert len(said) == 1 and "waiting for" in said[0]
    if os.path.exists("/proc/locks"):
        # flock is per open file: the holder here is this very process (another thread of it)
        assert said[0].startswith("waiting for another thread of this process, which is writing the index")
        child = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                                  "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)",
                                  str(tmp_path / "lock")], stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "held"
            said.clear()
            with pytest.raises(LockBusy):
                WriterLock(str(tmp_path / "lock")).acquire(timeout=1.2, on_wait=said.append)
        finally:
            child.kill()
            child.wait()
        assert said[0].startswith(f"waiting for process {child.pid}, which is writing the index")


def test_a_lock_released_just_as_the_writer_would_say_it_waits_is_taken_without_a_note(tmp_path, monkeypatch):
    """Released between the writer's try and its look for the holder, the lock was said to be held
    by "another process" (no holder found): a served query showed that line beside its client's own
    "waiting for process N" (seen failing the suite now and then)."""
    from retrieval.store import lock

    path = str(tmp_path / "lock")
    holder = WriterLock(path)
    holder.acquire(timeout=0)
    real_lock_holder = lock.lock_holder

    def released_meanwhile(fd):
        holder.release()  # the other writer finishes at this moment
        return real_lock_holder(fd)

    monkeypatch.setattr(lock, "WAIT_NOTE_AFTER", 0.0)
    monkeypatch.setattr(lock, "lock_holder", released_meanwhile)
    said = []
    waiter = WriterLock(path)
    waiter.acquire(timeout=30, on_wait=said.append)
    waiter.release()
    assert said == []
    # A holder /proc does not name is still said to be waited for, once.
    monkeypatch.setattr(lock, "lock_holder", lambda fd: None)
    holder.acquire(timeout=0)
    try:
        with pytest.raises(LockBusy):
            WriterLock(path).acquire(timeout=0.5, on_wait=said.append)
    finally:
        holder.release()
    assert said == [f"waiting for another process, which is writing the index ({path})"]


def test_a_writer_that_waited_past_the_note_says_so_even_when_one_pause_overshot_its_timeout(tmp_path,
                                                                                               monkeypatch):
    """A loaded machine's 0.05 s pause can last longer than the note's delay and the timeout left
    together: the writer gave up having waited its whole timeout without ever saying it waited."""
    import types

    from retrieval.store import lock

    clock = [1000.0]
    monkeypatch.setattr(lock, "time", types.SimpleNamespace(
        monotonic=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + 1.3), time=lock.time.time))
    said = notes_of_a_writer_timing_out(str(tmp_path / "lock"))
    assert len(said) == 1 and said[0].startswith("waiting for")


def test_a_refresh_waiting_on_the_lock_tells_its_own_progress_not_stderr(sample_repo, capsys):
    """A library caller's progress callback gets the note; nothing is printed behind its back."""
    service.refresh(str(sample_repo))
    holder = WriterLock(os.path.join(layout.store_dir(str(sample_repo)), "lock"))
    holder.acquire(timeout=0)
    said = []
    try:
        with pytest.raises(LockBusy):
            service.refresh(str(sample_repo), force=True, progress=said.append, lock_timeout=1.2)
    finally:
        holder.release()
    assert [m for m in said if m.startswith("waiting for")]
    assert capsys.readouterr().err == ""


# -- chunk metadata rows ------------------------------------------------------------------------

def _segment_with_metadata(directory):
    from retrieval.lexical.segment import SegmentBuilder

    builder = SegmentBuilder()
    builder.add("src/router.py", "python", "code", 1, 9, {"route": 2},
                meta=("Router.add_route", "method", "add_route", 1, 20, [["match", "Router.match", "method", 10, 20]]))
    builder.add("src/router.py", "python", "code", 10, 20, {"match": 1}, meta=None)
    # a row as written before chunks named their other definitions (members)
    builder.add("src/app.py", "python", "code", 1, 5, {"app": 1}, meta=("module app", "module", "", 1, 5))
    builder.write(str(directory))
    return directory


def test_a_metadata_row_changed_where_neither_size_nor_syntax_shows_is_damage(tmp_path):
    """A hit reads its own row, never meta.bin whole: a renamed scope was shown in silence."""
    from retrieval.lexical.segment import CorruptSegment

    seg = _segment_with_metadata(tmp_path / "seg")
    assert DiskSegment(str(seg)).meta(0) == ("Router.add_route", "method", "add_route", 1, 20,
                                             [["match", "Router.match", "method", 10, 20]])
    path = seg / "meta.bin"
    path.write_bytes(path.read_bytes().replace(b"Router.add_route", b"Router.add_rouse"))
    damaged = DiskSegment(str(seg))
    assert damaged.meta(1) is None  # a document without metadata has no row to check
    assert damaged.meta(2) == ("module app", "module", "", 1, 5, [])  # other rows still read, old ones with no members
    with pytest.raises(CorruptSegment, match="meta.bin is damaged"):
        damaged.meta(0)


@pytest.mark.parametrize("member", [["match", "Router.match"], ["match", "Router.match", "method", 20, 10],
                                    ["match", "Router.match", "method", -1, 10], ["match", "Router.match", "method", 1],
                                    ["match", "Router.match", "method", True, 10], ["match", "Router.match", "method", "1", "2"]],
                         ids=["no kind", "lines reversed", "negative line", "one line", "a flag for a line", "lines as text"])
def test_a_metadata_row_whose_members_are_not_names_and_lines_is_damage_not_a_crash_of_the_query(tmp_path, member):
    from retrieval.lexical.segment import CorruptSegment, SegmentBuilder

    builder = SegmentBuilder()
    builder.add("src/router.py", "python", "code", 1, 9, {"route": 2},
                meta=("Router.add_route", "method", "add_route", 1, 20, [member]))
    builder.write(str(tmp_path / "seg"))
    with pytest.raises(CorruptSegment, match="meta.bin is damaged"):
        DiskSegment(str(tmp_path / "seg")).meta(0)


def test_members_written_before_they_had_lines_read_as_members_with_none_to_choose_by(tmp_path):
    from retrieval.lexical.segment import SegmentBuilder

    builder = SegmentBuilder()
    builder.add("src/router.py", "python", "code", 1, 9, {"route": 2},
                meta=("Router.add_route", "method", "add_route", 1, 20, [["match", "Router.match", "method"]]))
    builder.write(str(tmp_path / "seg"))
    assert DiskSegment(str(tmp_path / "seg")).meta(0)[5] == [["match", "Router.match", "method", 0, 0]]


def test_metadata_written_before_row_checksums_is_read_as_it_was(tmp_path):
    seg = _segment_with_metadata(tmp_path / "seg")
    description = json.loads((seg / "seg.json").read_text())
    data = (seg / "meta.bin").read_bytes()[: -4 * description["n_docs"]]  # no checksums at the end
    (seg / "meta.bin").write_bytes(data)
    del description["meta_row_crcs"], description["crc32"]["meta.bin"]
    description["sizes"]["meta.bin"] = len(data)
    (seg / "seg.json").write_text(json.dumps(description))
    old = DiskSegment(str(seg))
    assert old.meta(0) == ("Router.add_route", "method", "add_route", 1, 20, [["match", "Router.match", "method", 10, 20]])
    assert old.meta_rows() == [("Router.add_route", "method", "add_route", 1, 20, [["match", "Router.match", "method", 10, 20]]),
                               None, ("module app", "module", "", 1, 5, [])]


def test_the_store_is_its_owners_alone_as_the_files_it_indexes_may_be(make_tree, run, tmp_path, monkeypatch):
    """The index holds every word of the files it read, some readable by their owner only: under
    the usual umask a 0600 file's words were in 0644 segment files any local user could read."""
    import stat

    root = make_tree({"private.py": 'password = "Zq600PrivateToken"\n', "main.py": "x = 1\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    store = root / ".retrieval"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    # A store made before is closed by its next write.
    store.chmod(0o755)
    (root / "main.py").write_text("x = 2\n")
    os.utime(root / "main.py", ns=(1, 1))
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    # Closed, not opened: a store the user made read-only (0555) stays so for its owner (it was
    # made 0700, and written).
    from retrieval.store import layout

    store.chmod(0o555)
    layout._refuse_other_owner(str(store))
    assert stat.S_IMODE(store.stat().st_mode) == 0o500
    store.chmod(0o700)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_store_directory_another_user_made_is_never_written_into(make_tree, run, tmp_path, monkeypatch):
    """Under a shared RETRIEVAL_INDEX_DIR a store's name is predictable: a directory another user
    made there in advance (0777) is theirs to read, replace or poison; refused, in one line."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(layout.ENV_INDEX_DIR, str(shared))
    root = make_tree({"main.py": "x = 1\n"})
    planted = layout.store_dir(str(root))
    os.makedirs(planted, mode=0o777)
    os.chown(planted, 65534, 65534)
    result = run("index", "--root", root, "--retriever", "lexical")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: lexical: refusing to write the index at {planted}: it belongs to another user (uid 65534); run as that "
        f"user, or set {layout.ENV_INDEX_DIR} to keep the index elsewhere"]
    assert os.listdir(planted) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give files away")
def test_an_index_neither_this_user_nor_the_repositorys_owner_made_is_not_read(make_tree, run, tmp_path, monkeypatch):
    """A planted index chose the hits and the text an agent reads; a teammate's index in their own
    checkout is still read."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(layout.ENV_INDEX_DIR, str(shared))
    root = make_tree({"main.py": "def zq_marker():\n    pass\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    store = layout.store_dir(str(root))
    for dirpath, dirnames, filenames in os.walk(store):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            os.chown(name, 65534, 65534)
    result = run("query", "--root", root, "zq_marker")
    assert result.exit_code == 1
    assert f"refusing to read the index at {store}: another user (uid 65534) made it" in result.stderr
    assert run("status", "--root", root).exit_code == 1
    os.chown(root, 65534, 65534)  # now the repository's owner's: theirs to read
    result = run("query", "--root", root, "zq_marker", "--stale-ok")
    assert result.exit_code == 0 and "main.py" in result.stdout


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to make the store")
def test_the_owner_of_a_repository_root_indexed_is_told_how_to_get_rid_of_roots_store(run):
    """A devcontainer running as root over a host checkout left a store its owner could neither use
    nor delete, and the message told them to remove it (a probe of git working copies)."""
    import shutil
    import tempfile
    from pathlib import Path

    top = Path(tempfile.mkdtemp(prefix="retrieval-owner-"))  # (pytest's own is root's alone: 0700)
    try:
        os.chmod(top, 0o755)
        root = top / "my repo"  # (the advice is pasted into a root shell: `rm -rf /x/my` is another tree)
        root.mkdir()
        (root / "main.py").write_text("def zq_marker():\n    pass\n")
        assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
        store = layout.store_dir(str(root))
        for path in (root, root / "main.py"):
            os.chown(path, 65534, 65534)
        package = str(Path(layout.__file__).resolve().parents[2])
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                               "retrieval", "query", "--root", str(root), "zq_marker"], capture_output=True,
                              text=True, timeout=120, cwd="/", env={**os.environ, "RETRIEVAL_NO_SERVER": "1",
                                                                   "HOME": str(top), "PYTHONPATH": package})
        assert done.returncode == 1, done.stderr
        assert f"refusing to read the index at {store}: root made it" in done.stderr
        assert f"`sudo rm -rf '{store}'` removes it" in done.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)
