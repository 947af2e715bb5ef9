"""A full disk or a read-only store: one clear error, and the previous index keeps answering."""
from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile

import pytest

from retrieval import service
from retrieval.lexical import segment
from retrieval.store import atomic, layout

from reliability_harness import permissions_enforced, run_cli, run_hooked

QUERIES = ["parse config file", "LRUCache evict", "retries", "quokka habitat"]
NO_SPACE = os.strerror(errno.ENOSPC)


def answers(root, **kw) -> dict:
    return {q: [(h.docid, h.score) for h in service.search(str(root), q, top_k=20, **kw).hits] for q in QUERIES}


def old_answer(stdout: str) -> dict:
    """An answer from the previous snapshot without what says so: `"stale": true` and the notes
    saying why (asserted to be there)."""
    answer = json.loads(stdout)
    assert answer.pop("stale") is True
    assert [note for note in answer.pop("notes") if "previous snapshot" in note]
    return answer


def change_tree(root, rewrite) -> None:
    rewrite(root / "docs/guide.md", "# Guide\n\nQuokkas live in a small habitat on an island.\n")
    (root / "src/app/quokka.py").write_text("def quokka_habitat():\n    return 'island'\n")
    os.unlink(root / "src/app/cache.py")


def unnamed(root, name: str = "lexical") -> list[str]:
    """The segments in name's index directory its committed manifest does not name."""
    store = str(root / ".retrieval")
    manifest = layout.read_manifest(store, name)
    named = {s["name"] for s in manifest["state"]["segments"]} if manifest else set()
    directory = layout.retriever_dir(store, name)
    return sorted(n for n in os.listdir(directory) if n.startswith("seg-") and n not in named)


def leftovers(root) -> list[str]:
    names = (p.name for p in (root / ".retrieval").rglob("*"))
    return sorted(n for n in names if n.startswith(".tmp-") or n.endswith(".tmp"))


class FullDisk:
    """Stands in for `os` and `tempfile` in the store's writing modules: counts every operation that
    needs disk space (create, write, fsync, rename, mkdir) and makes the Nth fail with ENOSPC."""

    def __init__(self, fail_at: int | None = None):
        self.fail_at = fail_at
        self.kinds: list[str] = []

    def _op(self, kind: str) -> None:
        self.kinds.append(kind)
        if len(self.kinds) == self.fail_at:
            raise OSError(errno.ENOSPC, NO_SPACE)

    def __getattr__(self, name):
        return getattr(os, name)

    def makedirs(self, *args, **kwargs):
        self._op("mkdir")
        return os.makedirs(*args, **kwargs)

    def open(self, path, flags, *args):
        if flags & os.O_CREAT:
            self._op("create")
        return os.open(path, flags, *args)

    def mkstemp(self, *args, **kwargs):
        self._op("create")
        return tempfile.mkstemp(*args, **kwargs)

    def fdopen(self, fd, mode="r", *args, **kwargs):
        fh = os.fdopen(fd, mode, *args, **kwargs)
        return _FillingWriter(fh, self) if "w" in mode else fh

    def fsync(self, fd):
        self._op("fsync")
        return os.fsync(fd)

    def replace(self, src, dst):
        self._op("replace:" + os.path.basename(dst))
        return os.replace(src, dst)

    def rename(self, src, dst):
        self._op("rename")
        return os.rename(src, dst)


class _FillingWriter:
    def __init__(self, fh, disk: FullDisk):
        self._fh, self._disk = fh, disk

    def write(self, data):
        half = len(data) // 2
        self._fh.write(data[:half])
        self._disk._op("write")  # the disk fills up halfway through the file
        return half + self._fh.write(data[half:])

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)


@pytest.fixture
def full_disk(monkeypatch):
    def install(disk: FullDisk) -> FullDisk:
        monkeypatch.setattr(atomic, "os", disk)
        monkeypatch.setattr(segment, "os", disk)
        return disk

    return install


# -- disk full ----------------------------------------------------------------------------------


def test_a_full_disk_at_any_store_write_fails_the_refresh_cleanly_and_keeps_the_previous_index(
    sample_repo, copy_tree, rewrite, full_disk, monkeypatch, tmp_path
):
    root = sample_repo
    service.refresh(str(root))
    old = answers(root)
    change_tree(root, rewrite)
    new = answers(copy_tree(root))
    assert new != old

    # Every space-needing operation of this refresh, counted on a copy of the repository and store.
    rehearsal = tmp_path / "rehearsal"
    shutil.copytree(root, rehearsal, symlinks=True)
    counted = full_disk(FullDisk())
    service.refresh(str(rehearsal))
    monkeypatch.undo()
    kinds = counted.kinds
    commit = kinds.index("replace:manifest.json") + 1
    assert {"mkdir", "create", "write", "fsync", "rename"} <= set(kinds[:commit])

    for n in range(1, len(kinds) + 1):
        full_disk(FullDisk(fail_at=n))
        with pytest.raises(layout.StoreError) as info:
            service.refresh(str(root))
        monkeypatch.undo()
        message = str(info.value)
        assert message == f"cannot update the index at {root / '.retrieval'}: {NO_SPACE}", (n, kinds[n - 1])
        # Nothing half-written stays behind to take the space (nor a whole segment the commit never
        # named: the next refresh needed its space too), and the committed index answers.
        assert leftovers(root) == [], (n, kinds[n - 1])
        assert unnamed(root) == [], (n, kinds[n - 1])
        expected = old if n <= commit else new
        assert answers(root, stale_ok=True) == expected, (n, kinds[n - 1])
        if n > commit:
            break  # the new index is committed; later failures cannot undo that

    assert service.refresh(str(root)).status in ("indexed", "up to date")
    assert answers(root) == new


def test_a_first_build_that_fails_at_its_commit_leaves_no_segment_behind(sample_repo, full_disk):
    disk = full_disk(FullDisk())
    disk.fail_at = -1  # counted only: the commit is the manifest's replace
    original = disk._op

    def fail_the_commit(kind: str) -> None:
        original(kind)
        if kind == "replace:manifest.json":
            raise OSError(errno.ENOSPC, NO_SPACE)

    disk._op = fail_the_commit
    with pytest.raises(layout.StoreError):
        service.refresh(str(sample_repo))
    assert "create" in disk.kinds and unnamed(sample_repo) == []


def test_a_query_on_a_full_disk_answers_from_the_previous_index_with_a_note(sample_repo, rewrite, full_disk):
    service.refresh(str(sample_repo))
    old = answers(sample_repo)
    change_tree(sample_repo, rewrite)
    full_disk(FullDisk(fail_at=1))
    result = service.search(str(sample_repo), "retries", top_k=20)
    assert [(h.docid, h.score) for h in result.hits] == old["retries"]
    assert any(NO_SPACE in note and "previous snapshot" in note for note in result.notes), result.notes


def test_the_cli_reports_a_full_disk_in_one_line_and_query_still_answers(sample_repo, rewrite):
    store = sample_repo / ".retrieval"
    assert run_cli(["index", "--root", sample_repo]).returncode == 0
    before = run_cli(["query", "--root", sample_repo, "--json", "retries config"])
    change_tree(sample_repo, rewrite)
    for fail_at in (3, 9):  # inside the segment, then later in the same refresh
        proc = run_hooked(["index", "--root", sample_repo], store, fail_from=fail_at, errno=errno.ENOSPC)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == [f"error: lexical: cannot update the index at {store}: {NO_SPACE}"]
    proc = run_hooked(["query", "--root", sample_repo, "--json", "retries config"], store, fail_from=1,
                      errno=errno.ENOSPC)
    assert proc.returncode == 0, proc.stderr
    assert old_answer(proc.stdout) == json.loads(before.stdout)  # the old answer, said to be old
    assert "Traceback" not in proc.stderr
    assert NO_SPACE in proc.stderr and "previous snapshot" in proc.stderr
    # A JSONL reader has no envelope to look at: each hit says it.
    proc = run_hooked(["query", "--root", sample_repo, "--jsonl", "retries config"], store, fail_from=1,
                      errno=errno.ENOSPC)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows and all(row["stale"] is True for row in rows)


def test_a_full_disk_during_the_first_build_leaves_nothing_behind(sample_repo):
    store = sample_repo / ".retrieval"
    proc = run_hooked(["index", "--root", sample_repo], store, fail_from=12, errno=errno.ENOSPC)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: lexical: ") and NO_SPACE in proc.stderr
    assert [n for n in os.listdir(store / "lexical") if n != "manifest.json"] == []
    assert not (store / "lexical" / "manifest.json").exists()
    query = run_cli(["query", "--root", sample_repo, "LRUCache"])
    assert query.returncode == 0 and query.stdout.startswith("src/app/cache.py:")


# -- read-only store ------------------------------------------------------------------------------


def snapshot(directory) -> dict:
    return {str(p.relative_to(directory)): p.read_bytes() if p.is_file() else None
            for p in sorted(directory.rglob("*"))}


def set_writable(directory, writable: bool) -> None:
    for path in [directory, *directory.rglob("*")]:
        mode = path.stat().st_mode
        mode = mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        path.chmod(mode)


@pytest.fixture
def enforced(tmp_path):
    reason = permissions_enforced(tmp_path)
    if reason:
        pytest.skip(reason)


def test_a_read_only_store_gives_a_clear_error_to_index_and_an_old_answer_to_query(enforced, sample_repo, rewrite):
    store = sample_repo / ".retrieval"
    assert run_cli(["index", "--root", sample_repo]).returncode == 0
    before = run_cli(["query", "--root", sample_repo, "--json", "retries config"]).stdout
    change_tree(sample_repo, rewrite)
    set_writable(store, False)
    try:
        frozen = snapshot(store)
        proc = run_cli(["index", "--root", sample_repo], unprivileged=True)
        assert proc.returncode == 1
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"error: lexical: cannot write the index at {store}: ")
        assert os.strerror(errno.EACCES) in line
        proc = run_cli(["query", "--root", sample_repo, "--json", "retries config"], unprivileged=True)
        assert proc.returncode == 0, proc.stderr
        assert old_answer(proc.stdout) == json.loads(before)
        assert "note: " in proc.stderr and "previous snapshot" in proc.stderr
        status = run_cli(["status", "--root", sample_repo], unprivileged=True)
        assert status.returncode == 0 and status.stdout.splitlines()[1].startswith("lexical: stale")
        assert snapshot(store) == frozen
    finally:
        set_writable(store, True)
    assert run_cli(["index", "--root", sample_repo]).returncode == 0
    assert "quokka" in run_cli(["query", "--root", sample_repo, "quokka habitat"]).stdout


def test_a_read_only_store_written_by_another_version_is_one_error_not_its_answers(enforced, sample_repo):
    """Its terms were made another way (here: stemmed, read unstemmed): it answered, marked only
    stale, with hits of the wrong words."""
    store = sample_repo / ".retrieval"
    assert run_cli(["index", "--root", sample_repo]).returncode == 0
    manifest = store / "lexical" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"]["retriever"]["terms"]["stemming"] = False
    manifest.write_text(json.dumps(data))
    set_writable(store, False)
    try:
        for stale_ok in ([], ["--stale-ok"]):
            proc = run_cli(["query", "--root", sample_repo, "retries config", *stale_ok], unprivileged=True)
            assert proc.returncode == 1 and proc.stdout == ""
            (line,) = proc.stderr.splitlines()
            assert line.startswith(f"error: cannot write the index at {store}: ")
            assert line.endswith("; the index there was built by another version of retrieval or with other "
                                 "settings, so it cannot answer")
    finally:
        set_writable(store, True)


@pytest.mark.extra("treesitter")
def test_a_read_only_store_is_said_once_when_all_answers_from_every_previous_snapshot(enforced, sample_repo,
                                                                                      rewrite):
    store = sample_repo / ".retrieval"
    for name in ("lexical", "treesitter"):
        assert run_cli(["index", "--root", sample_repo, "--retriever", name]).returncode == 0
    change_tree(sample_repo, rewrite)
    set_writable(store, False)
    try:
        proc = run_cli(["query", "--root", sample_repo, "--retriever", "all", "--json", "retries config"],
                       unprivileged=True)
    finally:
        set_writable(store, True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stale"] is True
    said = [line for line in proc.stderr.splitlines() if "previous snapshot" in line]
    assert len(said) == 1, proc.stderr


def test_a_read_only_repository_without_an_index_is_a_one_line_error(enforced, sample_repo):
    set_writable(sample_repo, False)
    try:
        # lexical alone: other installed retrievers report their own failure on stdout
        for argv in (["index", "--root", sample_repo, "--retriever", "lexical"], ["query", "--root", sample_repo, "config"]):
            proc = run_cli(argv, unprivileged=True)
            assert proc.returncode == 1
            (line,) = proc.stderr.splitlines()
            assert line.startswith("error: ") and os.strerror(errno.EACCES) in line
            assert proc.stdout == ""
        assert not (sample_repo / ".retrieval").exists()
    finally:
        set_writable(sample_repo, True)


# -- damage the size check cannot see ----------------------------------------------------------


@pytest.mark.parametrize("victim", ["lex-0000.json", "files.json", "seg.json", "post.bin", "docs.bin"])
def test_a_segment_file_garbled_without_changing_its_size_is_rebuilt_by_the_next_query(sample_repo, copy_tree, victim):
    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    (seg,) = [p for p in (sample_repo / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    path = seg / victim
    path.write_bytes(b"#" * path.stat().st_size)  # bit rot, or zeros after a crash on a lax file system
    assert answers(sample_repo) == expected
    assert answers(sample_repo) == expected  # and the store stays repaired


def _shift_columns(seg, column: int) -> None:
    """docs.bin's `column` (0 file, 1 start, 2 end, 3 length) plus one for every document."""
    from array import array

    values = array("I")
    values.frombytes((seg / "docs.bin").read_bytes())
    n = len(values) // 4
    for d in range(n):
        values[column * n + d] += 1
    (seg / "docs.bin").write_bytes(values.tobytes())


def _bump_term_frequencies(seg) -> None:
    """Every posting's term frequency plus one, in place."""
    from array import array

    data = bytearray((seg / "post.bin").read_bytes())
    for shard in seg.glob("lex-*.json"):
        for offset, df, *_ in json.loads(shard.read_text()).values():
            tfs = array("I")
            tfs.frombytes(bytes(data[offset + 4 * df : offset + 8 * df]))
            data[offset + 4 * df : offset + 8 * df] = array("I", (tf + 1 for tf in tfs)).tobytes()
    (seg / "post.bin").write_bytes(bytes(data))


def _rename_paths(seg) -> None:
    """Every indexed path's `src/` read as `srd/`: the same length, still valid JSON."""
    path = seg / "files.json"
    path.write_text(path.read_text().replace('"src/', '"srd/'))


def _lower_frequencies(seg) -> None:
    """Each term's document frequency in the lexicon one lower where that keeps its digit count."""
    for shard in seg.glob("lex-*.json"):
        lexicon = json.loads(shard.read_text())
        text = json.dumps({t: [e[0], e[1] - 1 if e[1] % 10 else e[1], *e[2:]] for t, e in lexicon.items()},
                          separators=(",", ":"), ensure_ascii=False).encode()
        shard.write_bytes(text.ljust(shard.stat().st_size))


def _unchecked_then_renamed(seg) -> None:
    """One byte of a name in seg.json's checksum table changed (`files.json` -> `files.jron`), which
    turned that file's check off, then files.json's paths changed as above."""
    path = seg / "seg.json"
    description = json.loads(path.read_text())
    description["crc32"]["files.jron"] = description["crc32"].pop("files.json")
    path.write_bytes(atomic.dumps(description))
    _rename_paths(seg)


@pytest.mark.parametrize("damage", [lambda seg: _shift_columns(seg, 3), _bump_term_frequencies, _rename_paths,
                                    _lower_frequencies, _unchecked_then_renamed],
                         ids=["docs.bin lengths", "post.bin frequencies", "files.json paths", "lexicon frequencies",
                              "checksum table"])
def test_a_segment_file_changed_where_neither_its_size_nor_its_syntax_shows_is_damage_the_query_repairs(
        sample_repo, copy_tree, damage):
    """Bit rot that keeps a file's size and shape answered in silence: wrong scores, a path that is
    not in the tree. Each file's CRC-32 (and each term's, for the postings a query reads) tells."""
    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    (seg,) = [p for p in (sample_repo / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    sizes = {p.name: p.stat().st_size for p in seg.iterdir()}
    damage(seg)
    assert {p.name: p.stat().st_size for p in seg.iterdir()} == sizes
    service._OPEN.clear()  # a new process
    assert answers(sample_repo) == expected
    assert not seg.exists()  # rebuilt, not patched over


def test_a_segment_written_before_checksums_is_read_as_it_was_not_rebuilt(sample_repo):
    """Checksums came later: a store from before them keeps answering without being rebuilt."""
    service.refresh(str(sample_repo))
    expected = answers(sample_repo)
    (seg,) = [p for p in (sample_repo / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    description = json.loads((seg / "seg.json").read_text())
    del description["crc32"]
    for shard in seg.glob("lex-*.json"):  # [offset, document frequency], as they were
        shard.write_bytes(json.dumps({t: e[:2] for t, e in json.loads(shard.read_text()).items()},
                                     ensure_ascii=False).encode())
        description["sizes"][shard.name] = shard.stat().st_size
    (seg / "seg.json").write_text(json.dumps(description))
    service._OPEN.clear()
    assert answers(sample_repo) == expected
    assert seg.exists()


@pytest.mark.parametrize("content", [b"[]", b"null", b"42", b'{"format": 1, "sizes": []}'])
def test_a_segment_description_of_another_shape_is_damage_the_next_query_repairs(sample_repo, copy_tree, content):
    """Valid JSON that is not the object written (`[]`): every query and `index` died with a
    Python traceback (AttributeError), for good."""
    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    (seg,) = [p for p in (sample_repo / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    (seg / "seg.json").write_bytes(content)
    assert answers(sample_repo) == expected


def test_status_shows_a_manifest_holding_values_of_the_wrong_type_as_an_error_row(sample_repo):
    """One damaged manifest made `status` a traceback for every retriever."""
    service.refresh(str(sample_repo))
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = json.loads(open(path).read())
    manifest["files"]["chunks"] = ["x"] * len(manifest["files"]["chunks"])
    open(path, "w").write(json.dumps(manifest))
    row = next(r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical")
    assert row["state"] == "error" and "retrieval index --retriever lexical" in row["reason"]
    assert service.search(str(sample_repo), "parse config").hits  # and a query repairs it


def test_a_manifest_replaced_by_a_directory_is_rebuilt(sample_repo, copy_tree):
    """Every query failed, and neither `index` nor `index --force` repaired it."""
    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    os.unlink(path)
    os.mkdir(path)
    assert answers(sample_repo) == expected
    assert os.path.isfile(path)


@pytest.mark.parametrize("damage", ["directory", "link"])
def test_a_lock_that_is_not_a_file_is_named_in_one_line_and_clean_still_works(sample_repo, rewrite, damage):
    service.refresh(str(sample_repo))
    lock = os.path.join(layout.store_dir(str(sample_repo)), "lock")
    os.unlink(lock)
    os.mkdir(lock) if damage == "directory" else os.symlink("/etc/passwd", lock)
    rewrite(sample_repo / "docs/guide.md", "# Guide\n\nQuokkas.\n")
    result = run_cli(["index", "--root", sample_repo, "--retriever", "lexical"])
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert f"its lock file {lock} is a" in result.stderr and "remove it" in result.stderr
    cleaned = run_cli(["clean", "--root", sample_repo])
    assert cleaned.returncode == 0 and not (sample_repo / ".retrieval").exists()
    assert os.path.exists("/etc/passwd")


@pytest.mark.parametrize("field, value", [("n_docs", 0), ("n_docs", -7), ("total_len", 7)])
def test_manifest_counts_that_disagree_with_the_segments_are_damage_not_a_silent_ranking(
        sample_repo, copy_tree, field, value):
    """BM25's collection statistics came from the manifest unchecked: a changed digit reordered the
    hits, `n_docs: 0` emptied every answer, and `status` said ready."""
    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = json.loads(open(path).read())
    manifest["state"][field] = value
    open(path, "w").write(json.dumps(manifest))
    service._OPEN.clear()  # a new process
    assert answers(sample_repo) == expected


def test_a_segment_holding_spans_no_chunker_writes_is_damage_the_query_repairs(sample_repo, copy_tree):
    """docs.bin changed where its size does not show: hits came back starting after they end."""
    from array import array

    service.refresh(str(sample_repo))
    expected = answers(copy_tree(sample_repo))
    (seg,) = [p for p in (sample_repo / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    values = array("I")
    values.frombytes((seg / "docs.bin").read_bytes())
    n = len(values) // 4
    for d in range(n):  # the start-line column (see segment._doc_arrays)
        values[n + d] += 400
    (seg / "docs.bin").write_bytes(values.tobytes())
    service._OPEN.clear()  # a new process
    assert answers(sample_repo) == expected


# (`status` with one retriever's directory blocked: that retriever's row says it, the others are fine)
@pytest.mark.parametrize("blocked,command", [
    (blocked, command) for blocked in (".retrieval", ".retrieval/lexical")
    for command in (["query", "config"], ["index", "--retriever", "lexical"], ["status"])
    if not (command == ["status"] and blocked != ".retrieval")])
def test_a_file_where_the_store_keeps_a_directory_is_named_in_the_error(sample_repo, run, blocked, command):
    """The error said `.../manifest.json: Not a directory`, naming no file that was in the way (and
    `index` said `cannot write the index at .../.retrieval: File exists`; `status` listed it as
    every retriever's error, the extras not installed too, and exited 0)."""
    if command == ["status"]:  # `--skipped` too: it listed the file in the way as one of no known type
        (sample_repo / blocked).write_text("someone's notes\n", encoding="utf-8")
        skipped = run("status", "--skipped", "--root", sample_repo)
        assert skipped.exit_code == 1 and "is a file where the index keeps a directory" in skipped.stderr
        (sample_repo / blocked).unlink()
    if blocked != ".retrieval":
        assert run("index", "--root", sample_repo, "--retriever", "lexical").exit_code == 0
        shutil.rmtree(sample_repo / blocked)
    (sample_repo / blocked).write_text("someone's notes\n", encoding="utf-8")
    result = run(*command, "--root", sample_repo)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.endswith(f"{sample_repo / blocked} is a file where the index keeps a directory: move it "
                                  "away, or set RETRIEVAL_INDEX_DIR to keep indexes elsewhere\n")
    assert (sample_repo / blocked).read_text(encoding="utf-8") == "someone's notes\n"  # not overwritten


def test_status_with_an_index_directory_that_is_a_file_says_it_in_one_line(sample_repo, run, tmp_path, monkeypatch):
    """`RETRIEVAL_INDEX_DIR` naming a file: status listed it as every retriever's error, the extras
    not installed too, and exited 0, where a query says it in one line."""
    (tmp_path / "afile").write_text("x\n")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "afile"))
    for command in (["status"], ["status", "--json"], ["status", "--skipped"], ["query", "config"]):
        result = run(*command, "--root", sample_repo)
        assert result.exit_code == 1 and result.stderr == (
            f"error: RETRIEVAL_INDEX_DIR={tmp_path / 'afile'} is not a directory: point it at one (or unset it)\n"), command


def test_status_says_a_torn_segment_is_damage_the_next_query_repairs(sample_repo, run):
    """A truncated post.bin said `lexical: ready`; the next query found it damaged and rebuilt."""
    assert run("index", "--root", sample_repo, "--retriever", "lexical").exit_code == 0
    (post,) = (sample_repo / ".retrieval" / "lexical").glob("seg-*/post.bin")
    with open(post, "r+b") as fh:
        fh.truncate(10)
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "error" and "damaged" in row["reason"] and "the next query" in row["reason"]
    assert run("query", "--root", sample_repo, "config").exit_code == 0
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "ready"


def test_an_up_to_date_index_in_a_store_that_cannot_be_written_is_up_to_date_not_an_error(
        sample_repo, rewrite, monkeypatch):
    """`index` on a read-only mount of a fresh store (a CI cache restored read-only) exited 1: it
    could not take the writer lock, though it had nothing to write."""
    from retrieval.store import lock

    built = service.refresh(str(sample_repo))

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(lock.WriterLock, "acquire", read_only)
    again = service.refresh(str(sample_repo))
    assert (again.status, again.chunks, again.files) == ("up to date", built.chunks, built.files)
    rewrite(sample_repo / "src/app/config.py", "def parse_config():\n    return {}\n")
    with pytest.raises(layout.StoreError, match="cannot write the index at .*Read-only file system"):
        service.refresh(str(sample_repo))  # something to write: the store's refusal is the answer
