"""Hostile trees and queries: everything indexable is indexed, the rest is counted, nothing crashes.

Covered elsewhere and not repeated here: invalid UTF-8 content and NUL bytes (tests/test_read.py),
symlink loops (tests/test_discover.py), a missing root or a root that is a file and an empty query
(tests/test_cli.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval import service
from retrieval.discover import DEFAULT_MAX_BYTES, walk

from reliability_harness import permissions_enforced, run_cli


def query_json(run, root, *args, input=None):
    result = run("query", "--root", root, "--json", *args, input=input)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def hit_paths(run, root, text) -> list[str]:
    return [r["path"] for r in query_json(run, root, text)["results"]]


def ranking(root, query):
    return [(h.docid, h.score) for h in service.search(str(root), query, top_k=20).hits]


# -- unreadable files and directories ------------------------------------------------------------


@pytest.fixture
def modes_enforced(tmp_path):
    """Skips a test where file modes are not enforced (root without a way to drop the capabilities
    that bypass them)."""
    reason = permissions_enforced(tmp_path)
    if reason:
        pytest.skip(reason)


def test_a_query_that_builds_the_index_names_what_it_could_not_read(make_tree, tmp_path, modes_enforced):
    """A package made unreadable vanished from every answer without a word: the query that built
    the index printed its hits (from the docs and tests) and nothing on stderr."""
    root = make_tree({
        "docs/options.md": "# Options\n\nHow command line options are parsed.\n",
        "src/pkg/parser.py": "def parse_options(argv):\n    return argv\n",
        "src/pkg/core.py": "def main():\n    pass\n",
    })
    (root / "src" / "pkg").chmod(0)
    try:
        proc = run_cli(["query", "--root", root, "options parsed"], unprivileged=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("docs/options.md:")
        assert proc.stderr.splitlines() == ["note: could not read src/pkg/: left out of the index"]
        # An index that is current is not walked again: no note on every later query.
        again = run_cli(["query", "--root", root, "options parsed"], unprivileged=True)
        assert again.returncode == 0 and again.stderr == ""
    finally:
        (root / "src" / "pkg").chmod(0o755)


def test_unreadable_files_and_directories_are_counted_and_indexed_once_readable(make_tree, tmp_path, modes_enforced):
    root = make_tree({
        "open.py": "def open_door():\n    return 'welcome'\n",
        "locked.py": "def locked_vault():\n    return 'gold'\n",
        "sealed/inner.py": "def sealed_room():\n    return 'dust'\n",
    })
    (root / "locked.py").chmod(0)
    (root / "sealed").chmod(0)
    try:
        proc = run_cli(["index", "--root", root], unprivileged=True)
        assert proc.returncode == 0, proc.stderr
        assert "2 unreadable" in proc.stdout
        # Named, not only counted: which part of the tree no answer can come from.
        assert "note: could not read locked.py, sealed/: left out of the index" in proc.stderr.splitlines()
        found = run_cli(["query", "--root", root, "open door"], unprivileged=True)
        assert found.returncode == 0 and found.stdout.startswith("open.py:1-2")
        assert run_cli(["query", "--root", root, "locked vault", "--stale-ok"], unprivileged=True).stdout == ""
    finally:
        (root / "locked.py").chmod(0o644)
        (root / "sealed").chmod(0o755)
    # A chmod changes neither size nor mtime (only the ctime): the next query must still see that
    # the index is owed these files, not wait for their next edit or an explicit `index`.
    assert run_cli(["query", "--root", root, "locked vault"], unprivileged=True).stdout.startswith("locked.py:1-2")
    assert run_cli(["query", "--root", root, "sealed room"]).stdout.startswith("sealed/inner.py:1-2")


def test_a_directory_made_unreadable_after_indexing_is_seen_by_the_next_refresh(make_tree, tmp_path, modes_enforced):
    """A refresh takes its files from the index, stat'ing each, when nothing its last walk saw has
    changed: a chmod changes only a directory's ctime, and that must send it to a walk. (Mode 111:
    its files can still be stat'ed, but not listed, which a walk counts as unreadable.)"""
    import time

    root = make_tree({"open.py": "def open_door():\n    return 'welcome'\n",
                      "sealed/inner.py": "def sealed_room():\n    return 'dust'\n"})
    for _ in range(2):  # the first build changes the root (its store): the second walk's stats are settled
        time.sleep(0.06)
        assert run_cli(["index", "--root", root, "--retriever", "lexical"], unprivileged=True).returncode == 0
    (root / "sealed").chmod(0o111)
    try:
        proc = run_cli(["index", "--root", root, "--retriever", "lexical"], unprivileged=True)
        assert proc.returncode == 0 and "1 unreadable" in proc.stdout, proc.stdout + proc.stderr
        assert run_cli(["query", "--root", root, "sealed room", "--stale-ok"], unprivileged=True).stdout == ""
    finally:
        (root / "sealed").chmod(0o755)
    assert run_cli(["query", "--root", root, "sealed room"], unprivileged=True).stdout.startswith("sealed/inner.py:1-2")


def test_an_ignore_file_made_unreadable_and_readable_again_is_seen_by_the_next_query(make_tree, tmp_path, modes_enforced):
    """An unreadable `.gitignore` has no rules for a fresh walk; a chmod changes only its ctime,
    which was not watched: the incremental index kept the old rules either way. Its files found
    are said to be (git warns too): counted as a file left out, the user's exclusions were undone
    without a word, and `status --skipped` said the index left out nothing."""
    root = make_tree({"a.py": "def alpha_handler():\n    return 1\n",
                      "notes.md": "# Notes\n\nalpha_handler is documented here.\n", ".gitignore": "*.md\n"})
    unapplied = "note: could not read .gitignore: its ignore rules are not applied\n"

    def found(said=""):
        proc = run_cli(["query", "--root", root, "alpha_handler", "--json"], unprivileged=True)
        assert proc.returncode == 0 and proc.stderr == said, proc.stderr
        return sorted(hit["path"] for hit in json.loads(proc.stdout)["results"])

    assert found() == ["a.py"]
    (root / ".gitignore").chmod(0)
    try:
        assert found(unapplied) == ["a.py", "notes.md"]  # as a clean build: the rules cannot be read
        assert found(unapplied) == ["a.py", "notes.md"]  # said again: the index is current, the rules still unread
        skipped = run_cli(["status", "--root", root, "--skipped"], unprivileged=True)
        assert unapplied in skipped.stderr
    finally:
        (root / ".gitignore").chmod(0o644)
    assert found() == ["a.py"]


def test_a_directory_made_unsearchable_and_searchable_again_is_seen_by_the_next_query(make_tree, tmp_path, modes_enforced):
    """`chmod 644 pkg` (listable, its files unreachable), then `chmod 755 pkg`: only the
    directory's ctime changes, which was not watched for a directory that could be listed."""
    root = make_tree({"pkg/a.py": "def alpha_handler():\n    return 1\n", "main.py": "def other():\n    return 2\n"})

    def found():
        proc = run_cli(["query", "--root", root, "alpha_handler", "--json"], unprivileged=True)
        assert proc.returncode == 0, proc.stderr
        return [hit["path"] for hit in json.loads(proc.stdout)["results"]]

    assert found() == ["pkg/a.py"]
    (root / "pkg").chmod(0o644)
    try:
        assert found() == []
    finally:
        (root / "pkg").chmod(0o755)
    assert found() == ["pkg/a.py"]


# -- names and encodings -------------------------------------------------------------------------


def test_files_and_directories_with_names_that_are_not_utf8_are_skipped_and_counted(make_tree, run):
    root = make_tree({"good.py": "def good_name():\n    return 1\n"})
    raw = os.fsencode(root)
    with open(raw + b"/caf\xe9.py", "wb") as fh:
        fh.write(b"def latin_name():\n    return 2\n")
    os.mkdir(raw + b"/d\xff")
    with open(raw + b"/d\xff/inner.py", "wb") as fh:
        fh.write(b"def inside_bad_dir():\n    return 3\n")
    result = walk(str(root))
    assert [f.path for f in result.files] == ["good.py"]
    assert result.skipped["undecodable-name"] == 2
    index = run("index", "--root", root)
    assert index.exit_code == 0, index.output
    assert "2 undecodable-name" in index.stdout
    assert hit_paths(run, root, "good name") == ["good.py"]
    assert hit_paths(run, root, "latin inside") == []
    # The listing writes each undecodable byte once, as `\xe9`, the way the walk recorded it.
    listing = run("status", "--root", root, "--skipped")
    assert listing.exit_code == 0, listing.output
    assert sorted(listing.stdout.splitlines()) == ["undecodable-name\tcaf\\xe9.py", "undecodable-name\td\\xff"]
    # A name's own backslash is doubled: `a\\nb\xe9.py` and `a<newline>b\xe9.py` print apart.
    for name in (b"a\\nb\xe9.py", b"a\nb\xe9.py"):
        with open(raw + b"/" + name, "wb") as fh:
            fh.write(b"x = 1\n")
    assert run("index", "--root", root).exit_code == 0
    # A real name spelling an escape (`caf\xe9.py`, binary) is listed beside the undecodable one.
    (root / "caf\\xe9.py").write_bytes(b"\x00\x01binary\x00")
    assert run("index", "--root", root).exit_code == 0
    listing = run("status", "--root", root, "--skipped").stdout.splitlines()
    assert {"undecodable-name\ta\\\\nb\\xe9.py", "undecodable-name\ta\\nb\\xe9.py", "undecodable-name\tcaf\\xe9.py",
            "binary\tcaf\\\\xe9.py"} <= set(listing)


def test_a_process_that_cannot_read_utf8_names_refuses_instead_of_dropping_them(make_tree, run):
    root = make_tree({"naïve.py": "def zorblax():\n    pass\n", "plain.py": "def plain():\n    pass\n"})
    assert run("index", "--root", root).exit_code == 0
    # A C locale with UTF-8 mode switched off: names are read as ASCII, naïve.py's as surrogates.
    proc = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "zorblax", "--root", str(root)],
                          capture_output=True, timeout=60,
                          env={**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "RETRIEVAL_NO_SERVER": "1"})
    assert proc.returncode == 1
    assert b"not UTF-8" in proc.stderr and b"PYTHONUTF8=1" in proc.stderr and proc.stderr.count(b"\n") == 1
    assert hit_paths(run, root, "zorblax") == ["naïve.py"]  # still indexed


def test_a_root_whose_own_path_is_not_utf8_is_indexed_and_searched(tmp_path, run):
    root = os.fsencode(tmp_path) + b"/r\xe9po"
    os.mkdir(root)
    with open(root + b"/main.py", "wb") as fh:
        fh.write(b"def accented_root():\n    return 1\n")
    text_root = os.fsdecode(root)
    assert service.refresh(text_root).status == "indexed"
    assert service.refresh(text_root).status == "up to date"
    assert [h.source_path for h in service.search(text_root, "accented root").hits] == ["main.py"]
    assert service.status(text_root)[0]["state"] == "ready"


def test_a_malformed_ignore_pattern_is_ignored_like_git_does_and_the_rest_apply(make_tree):
    root = make_tree({
        ".gitignore": "[z-a]\nskipped_*.py\n",
        "skipped_one.py": "x = 1\n",
        "kept.py": "y = 2\n",
    })
    assert [f.path for f in walk(str(root)).files] == ["kept.py"]
    assert service.refresh(str(root)).files == 1


# -- sizes and shapes ----------------------------------------------------------------------------


def test_a_one_megabyte_single_line_file_is_one_chunk_that_can_be_found_and_shown(make_tree, run):
    unit = "".join(f'var v{i % 500}=f{i % 300}(x{i % 700},"s{i % 100}");' for i in range(3000))
    line = (unit * (DEFAULT_MAX_BYTES // len(unit) + 1))[: DEFAULT_MAX_BYTES - len("zebracorn();")] + "zebracorn();"
    assert len(line.encode()) == DEFAULT_MAX_BYTES and "\n" not in line
    root = make_tree({"bundle.min.js": line, "over.min.js": line + " ", "small.js": "function tiny() {}\n"})
    index = run("index", "--root", root)
    assert index.exit_code == 0 and "1 too-large" in index.stdout
    (hit,) = query_json(run, root, "zebracorn", "--snippet-lines", "1")["results"]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == ("bundle.min.js", 1, 1)
    # Shown shortened, around the match at its end: the whole megabyte would flood whoever reads the answer.
    from retrieval.snippets import MAX_LINE_CHARS

    assert hit["snippet"] == f"… ({len(line) - MAX_LINE_CHARS} characters before) {line[-MAX_LINE_CHARS:]}"
    assert hit["truncated"] is True


def test_an_empty_repository_indexes_to_nothing_and_answers_with_no_hits(tmp_path, run):
    root = tmp_path / "empty"
    root.mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    index = run("index", "--root", root)
    assert index.exit_code == 0, index.output
    assert index.stdout.startswith("lexical: indexed 0 chunks")
    assert query_json(run, root, "anything at all")["results"] == []
    (row,) = [r for r in service.status(str(root)) if r["retriever"] == "lexical"]
    assert (row["state"], row["files"], row["chunks"]) == ("ready", 0, 0)


# -- files that change or vanish while being indexed ------------------------------------------


def test_a_file_that_changes_while_being_indexed_is_caught_up_by_the_next_query(sample_repo, copy_tree, monkeypatch):
    real_read = service.read_source
    target = sample_repo / "src/app/cache.py"

    def read_after_an_edit(file, max_bytes=None):
        if file.path == "src/app/cache.py":
            # Discovery already took size and mtime; the editor saves in between.
            target.write_text("class LRUCache:\n    def shrink_to_fit(self):\n        pass\n" * 3)
            st = target.stat()
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        return real_read(file, max_bytes)

    monkeypatch.setattr(service, "read_source", read_after_an_edit)
    service.refresh(str(sample_repo))
    monkeypatch.undo()
    assert service.status(str(sample_repo))[0]["state"] == "stale"
    fresh = copy_tree(sample_repo)
    for query in ["shrink to fit", "evict oldest", "parse config"]:
        assert ranking(sample_repo, query) == ranking(fresh, query)


def test_a_file_that_vanishes_while_being_indexed_is_counted_and_left_out(sample_repo, copy_tree, monkeypatch):
    real_read = service.read_source

    def read_after_a_delete(file, max_bytes=None):
        if file.path == "src/app/cache.py":
            os.unlink(file.abspath)
        return real_read(file, max_bytes)

    monkeypatch.setattr(service, "read_source", read_after_a_delete)
    report = service.refresh(str(sample_repo))
    monkeypatch.undo()
    assert report.skipped.get("vanished") == 1
    assert "src/app/cache.py" not in report.reprocessed
    fresh = copy_tree(sample_repo)
    for query in ["LRUCache evict oldest", "parse config"]:
        assert ranking(sample_repo, query) == ranking(fresh, query)
    assert service.refresh(str(sample_repo)).status == "up to date"


# -- queries -----------------------------------------------------------------------------------


def stack_trace(size: int) -> str:
    frames = []
    i = 0
    while sum(map(len, frames)) < size:
        frames.append(f'  File "/srv/app/src/app/module_{i % 40}.py", line {i}, in handler_{i % 17}\n'
                      f"    value = parse_config(path)  # {'!@#$%^&*()' * (i % 3)}\n")
        i += 1
    text = "Traceback (most recent call last):\n" + "".join(frames)
    return (text + "ConfigError: the config file is invalid\n")[-size:]


def test_a_100_kb_pasted_stack_trace_is_a_valid_query_from_stdin_and_from_the_command_line(sample_repo, run):
    trace = stack_trace(100_000)
    assert len(trace) == 100_000
    payload = query_json(run, sample_repo, "-", input=trace)
    # Echoed as its head (a whole log back in the answer filled an agent's context a second time).
    assert payload["query_truncated"] is True and trace.startswith(payload["query"][:-1])
    assert payload["results"][0]["path"] == "src/app/config.py"
    assert query_json(run, sample_repo, trace[-90_000:])["results"][0]["path"] == "src/app/config.py"


@pytest.mark.parametrize("text", ["!!!", "?", "... --- ...", "(){}[]<>;:,.", "#" * 5000, "  \t!\t  "])
def test_a_query_of_pure_punctuation_answers_nothing_without_error(sample_repo, run, text):
    assert query_json(run, sample_repo, text)["results"] == []


def test_a_query_with_bytes_that_are_not_utf8_on_stdin_still_searches(sample_repo, run):
    payload = query_json(run, sample_repo, "-", input=b"\xff\xfe LRUCache \xc3")
    assert payload["results"][0]["path"] == "src/app/cache.py"
    assert "\ufffd" in payload["query"]


def test_a_query_with_nul_bytes_and_control_characters_still_searches(sample_repo, run):
    payload = query_json(run, sample_repo, "-", input="LRUCache\x00\x01\x1b[31m evict\x7f")
    assert payload["results"][0]["path"] == "src/app/cache.py"
