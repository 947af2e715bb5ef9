"""The service: refresh a persistent index incrementally, search it, report on it."""
from __future__ import annotations

import json
import os

import pytest

from retrieval import load_chunk_documents, service
from retrieval.lexical.index import MAX_SEGMENTS
from retrieval.retrievers.lexical import LexicalRetriever
from retrieval.store import layout

QUERIES = ["parse config file", "getHTTPResponse retries", "evict oldest cache", "config", "app", "LRUCache"]


def ranking(hits) -> list[tuple]:
    return [(h.rank, h.docid, h.source_path, h.start_line, h.end_line) for h in hits]


def assert_same_hits(got, expected) -> None:
    assert ranking(got) == ranking(expected)
    assert [h.score for h in got] == pytest.approx([h.score for h in expected], rel=1e-12, abs=1e-12)


def in_memory_hits(root, query, top_k=50):
    retriever = LexicalRetriever()
    retriever.index(load_chunk_documents(str(root)))
    return retriever.search_detailed(query, top_k)


def manifest_of(root) -> dict:
    with open(layout.manifest_path(layout.store_dir(str(root)), "lexical"), encoding="utf-8") as fh:
        return json.load(fh)


# -- the store answers like the in-memory retriever ------------------------------------------------


@pytest.mark.parametrize("query", QUERIES)
def test_a_stored_index_ranks_exactly_like_the_in_memory_retriever(sample_repo, query):
    report = service.refresh(str(sample_repo))
    assert report.status == "indexed"
    stored = service.search(str(sample_repo), query, top_k=50).hits
    assert stored, f"{query!r} should match something in the sample repository"
    assert_same_hits(stored, in_memory_hits(sample_repo, query))


def test_the_first_refresh_reads_and_indexes_every_eligible_file(sample_repo):
    report = service.refresh(str(sample_repo))
    eligible = [
        "README.md", "config/settings.toml", "docs/guide.md", "src/app/__init__.py",
        "src/app/cache.py", "src/app/config.py", "src/app/http_client.py",
    ]
    assert report.status == "indexed"
    assert sorted(report.reread) == eligible
    assert sorted(report.reprocessed) == eligible
    assert report.files == len(eligible) - 1  # the blank __init__.py has no chunk
    assert report.chunks == len(load_chunk_documents(str(sample_repo)))
    assert report.new_chunks == report.chunks


def test_search_builds_the_index_when_there_is_none(sample_repo):
    assert not (sample_repo / ".retrieval").exists()
    result = service.search(str(sample_repo), "LRUCache")
    assert result.hits[0].source_path == "src/app/cache.py"
    assert (sample_repo / ".retrieval" / "lexical" / "manifest.json").is_file()


# -- incremental refresh -------------------------------------------------------------------------


def test_modifying_one_file_rereads_and_reprocesses_only_that_file(sample_repo, rewrite):
    service.refresh(str(sample_repo))
    rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    def shrink_everything(self):\n        pass\n")
    report = service.refresh(str(sample_repo))
    assert report.status == "indexed"
    assert report.reread == ["src/app/cache.py"]
    assert report.reprocessed == ["src/app/cache.py"]
    hits = service.search(str(sample_repo), "shrink everything").hits
    assert hits[0].source_path == "src/app/cache.py"
    assert not service.search(str(sample_repo), "evict_oldest").hits


def test_touching_a_file_rereads_it_but_reprocesses_nothing(sample_repo, touch):
    service.refresh(str(sample_repo))
    before = service.search(str(sample_repo), "config", top_k=50).hits
    touch(sample_repo / "src/app/config.py")
    report = service.refresh(str(sample_repo))
    assert report.reread == ["src/app/config.py"]
    assert report.reprocessed == []
    assert report.new_chunks == 0
    # The new stat was recorded: the next refresh reads nothing.
    again = service.refresh(str(sample_repo))
    assert again.reread == []
    assert_same_hits(service.search(str(sample_repo), "config", top_k=50).hits, before)


def test_refreshing_an_unchanged_tree_reads_nothing(sample_repo):
    first = service.refresh(str(sample_repo))
    report = service.refresh(str(sample_repo))
    assert report.status == "up to date"
    assert report.reread == []
    assert report.reprocessed == []
    assert report.chunks == first.chunks
    assert report.files == first.files


def test_a_refresh_after_a_change_that_touches_no_indexed_file_leaves_the_index_current(sample_repo):
    """A new empty directory changes only the root's mtime: the refresh must record that, or the
    index stays stale for ever (`status` says so, and every query walks the tree again)."""
    service.refresh(str(sample_repo))
    (sample_repo / "empty").mkdir()
    store = layout.store_dir(str(sample_repo))
    assert not service.is_current(str(sample_repo), layout.read_manifest(store, "lexical"))
    assert service.refresh(str(sample_repo)).reread == []
    assert service.is_current(str(sample_repo), layout.read_manifest(store, "lexical"))


def test_a_file_deleted_then_created_again_is_indexed_once_without_damage(sample_repo):
    """Its old documents stay in their segment, marked deleted: the refresh that brings the file back
    must not take them for its live ones (deleted twice, the counts disagreed and the index was
    rebuilt as damaged)."""
    service.refresh(str(sample_repo))
    cache = sample_repo / "src/app/cache.py"
    text = cache.read_text()
    os.unlink(cache)
    service.refresh(str(sample_repo))
    cache.write_text(text)
    notes = []
    report = service.refresh(str(sample_repo), progress=notes.append)
    assert report.reprocessed == ["src/app/cache.py"] and not notes
    store = layout.store_dir(str(sample_repo))
    state = layout.read_manifest(store, "lexical")["state"]
    live = LexicalRetriever().open_store(os.path.join(store, "lexical"), state)
    assert live.statistics()["documents"] == state["n_docs"]
    hits = service.search(str(sample_repo), "LRUCache", progress=notes.append).hits
    assert hits and hits[0].source_path == "src/app/cache.py" and not notes


def test_deleting_a_file_removes_its_hits(sample_repo):
    service.refresh(str(sample_repo))
    assert service.search(str(sample_repo), "LRUCache").hits
    os.unlink(sample_repo / "src/app/cache.py")
    report = service.refresh(str(sample_repo))
    assert report.removed == ["src/app/cache.py"]
    assert report.reread == []
    hits = service.search(str(sample_repo), "LRUCache evict oldest capacity", top_k=50).hits
    assert all(h.source_path != "src/app/cache.py" for h in hits)


def test_adding_a_file_indexes_only_that_file(sample_repo):
    service.refresh(str(sample_repo))
    (sample_repo / "src/app/zebra.py").write_text("def zebra_crossing():\n    return 'stripes'\n")
    report = service.refresh(str(sample_repo))
    assert report.reread == ["src/app/zebra.py"]
    assert report.reprocessed == ["src/app/zebra.py"]
    assert service.search(str(sample_repo), "zebra crossing").hits[0].source_path == "src/app/zebra.py"


def test_a_query_refreshes_a_stale_index_before_answering(sample_repo, rewrite):
    service.refresh(str(sample_repo))
    rewrite(sample_repo / "docs/guide.md", "# Guide\n\nQuokkas are the happiest animals.\n")
    hits = service.search(str(sample_repo), "quokkas").hits
    assert [h.source_path for h in hits] == ["docs/guide.md"]


def test_stale_ok_answers_from_the_existing_snapshot(sample_repo, rewrite):
    service.refresh(str(sample_repo))
    rewrite(sample_repo / "docs/guide.md", "# Guide\n\nQuokkas are the happiest animals.\n")
    assert service.search(str(sample_repo), "quokkas", stale_ok=True).hits == []
    assert service.search(str(sample_repo), "quokkas").hits


def test_force_rebuilds_everything(sample_repo):
    service.refresh(str(sample_repo))
    report = service.refresh(str(sample_repo), force=True)
    assert report.status == "indexed"
    assert len(report.reprocessed) == 7


def test_index_options_are_remembered_by_later_refreshes(sample_repo):
    options = service.IndexOptions(include=("src/**/*.py",))
    service.refresh(str(sample_repo), options=options)
    report = service.refresh(str(sample_repo))
    assert report.status == "up to date"
    paths = {h.source_path for h in service.search(str(sample_repo), "config retries", top_k=50).hits}
    assert paths and all(p.startswith("src/") and p.endswith(".py") for p in paths)


def module_text(i: int, variant: int = 0) -> str:
    return (
        f"def handler_{i}(request):\n"
        f'    """Handle request number {i}, variant {variant}."""\n'
        f"    value = compute_total(request, {i} + {variant})\n"
        f"    return render_response(value)\n"
        f"\n\n"
        f"class Worker{i}:\n"
        f"    def run(self):\n"
        f"        return handler_{i}(self.queue)\n"
    )


MANY_QUERIES = ["compute total", "render response", "handler request", "worker run queue", "handler_3",
                "variant", "Handle request number 12"]


def test_many_incremental_refreshes_score_exactly_like_a_clean_build(make_tree, copy_tree, rewrite, touch):
    root = make_tree({f"pkg/mod_{i}.py": module_text(i) for i in range(10)}, name="many")
    service.refresh(str(root))

    def check():
        clean_root = copy_tree(root)
        for query in MANY_QUERIES:
            got = service.search(str(root), query, top_k=100, stale_ok=True).hits
            expected = service.search(str(clean_root), query, top_k=100).hits
            assert_same_hits(got, expected)

    steps = []
    for k in range(10, 19):
        steps.append(("add", k))
        if k % 3 == 0:
            steps.append(("modify", k - 8))
    steps += [("delete", 4), ("touch", 7), ("modify", 12), ("delete", 15), ("add", 30), ("modify", 0)]
    segment_counts = []
    for action, k in steps:
        path = root / "pkg" / f"mod_{k}.py"
        if action == "add":
            path.write_text(module_text(k))
        elif action == "modify":
            rewrite(path, module_text(k, variant=len(segment_counts) + 1))
        elif action == "delete":
            path.unlink()
        elif action == "touch":
            touch(path)
        report = service.refresh(str(root))
        if action == "touch":
            assert report.reprocessed == []
        else:
            assert report.status == "indexed", (action, k)
        segments = manifest_of(root)["state"]["segments"]
        segment_counts.append(len(segments))
        assert len(segments) <= MAX_SEGMENTS
        check()

    assert len(steps) > MAX_SEGMENTS
    assert max(segment_counts) >= 3, "refreshes should add segments"
    assert any(b < a for a, b in zip(segment_counts, segment_counts[1:])), "segments should have been merged"
    # Only the segments the manifest names are left on disk.
    on_disk = sorted(n for n in os.listdir(root / ".retrieval" / "lexical") if n.startswith("seg-"))
    assert on_disk == sorted(s["name"] for s in manifest_of(root)["state"]["segments"])
    # And a forced rebuild of the same tree answers identically.
    before = {q: service.search(str(root), q, top_k=100).hits for q in MANY_QUERIES}
    service.refresh(str(root), force=True)
    for query in MANY_QUERIES:
        assert_same_hits(service.search(str(root), query, top_k=100).hits, before[query])


def test_a_small_refresh_never_rewrites_the_whole_index_to_merge(make_tree, rewrite):
    """Past MAX_SEGMENTS the small segments fold together; the index's first (largest) segment with
    them only once they outweigh it: taken every time, a one-file refresh cost a clean build at
    every eighth step (pytest: 1.2 s against 0.17 s)."""
    root = make_tree({f"pkg/mod_{i}.py": module_text(i) for i in range(200)}, name="tiered")
    service.refresh(str(root))
    base = manifest_of(root)["state"]["segments"][0]["name"]
    for step in range(3 * MAX_SEGMENTS):  # a file each, so that no refresh's segment empties (12% of the base)
        rewrite(root / "pkg" / f"mod_{step}.py", module_text(step, variant=1))
        service.refresh(str(root))
        names = [s["name"] for s in manifest_of(root)["state"]["segments"]]
        assert base in names, f"step {step}: the base segment was merged"
        assert len(names) <= MAX_SEGMENTS


def test_a_file_that_turns_binary_loses_its_hits(sample_repo):
    service.refresh(str(sample_repo))
    path = sample_repo / "src/app/cache.py"
    path.write_bytes(b"LRUCache\x00binary now")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    report = service.refresh(str(sample_repo))
    assert report.status == "indexed"
    assert report.reprocessed == []
    hits = service.search(str(sample_repo), "LRUCache evict oldest capacity", top_k=50).hits
    assert all(h.source_path != "src/app/cache.py" for h in hits)
    assert service.file_table(manifest_of(sample_repo))["src/app/cache.py"][service.SKIP] == "binary"


def test_a_big_build_is_written_as_several_budgeted_segments_that_rank_like_one(make_tree, copy_tree, rewrite,
                                                                               monkeypatch):
    import retrieval.lexical.index as index_module

    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(40)}
    small_budget = make_tree(files, name="budget")
    monkeypatch.setattr(index_module, "SEGMENT_POSTINGS", 150)
    service.refresh(str(small_budget))
    segments = manifest_of(small_budget)["state"]["segments"]
    assert len(segments) > 3
    assert all(s["n_postings"] < 150 + 60 for s in segments)  # a file's chunks are never split
    one_segment = copy_tree(small_budget)
    monkeypatch.setattr(index_module, "SEGMENT_POSTINGS", 10**9)
    service.refresh(str(one_segment))
    assert len(manifest_of(one_segment)["state"]["segments"]) == 1
    for query in MANY_QUERIES:
        assert_same_hits(service.search(str(small_budget), query, top_k=100).hits,
                         service.search(str(one_segment), query, top_k=100).hits)
    # Merging never builds a segment past the budget: full segments are left alone.
    monkeypatch.setattr(index_module, "SEGMENT_POSTINGS", 150)
    for k in range(12):
        rewrite(small_budget / "pkg" / f"mod_{k}.py", module_text(k, variant=1))
        service.refresh(str(small_budget))
        segments = manifest_of(small_budget)["state"]["segments"]
        assert all(s["n_postings"] < 150 + 60 for s in segments)
    for query in MANY_QUERIES:
        expected = service.search(str(copy_tree(small_budget)), query, top_k=100).hits
        assert_same_hits(service.search(str(small_budget), query, top_k=100, stale_ok=True).hits, expected)


def test_a_merge_opens_each_segment_postings_file_once(make_tree, rewrite, monkeypatch):
    """A merge reads every term's postings of every segment it folds: it opened post.bin again for
    each (764,000 opens folding three segments of 38,000 chunks: 17.8 s, now 9.4 s)."""
    import builtins

    root = make_tree({f"pkg/mod_{i}.py": module_text(i) for i in range(10)}, name="merging")
    service.refresh(str(root))
    reads = []
    real_open = builtins.open

    def counting_open(file, mode="r", *args, **kwargs):
        if str(file).endswith("post.bin") and "r" in mode:
            reads.append(file)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    for k in range(MAX_SEGMENTS + 1):
        before = manifest_of(root)["state"]["segments"]
        reads.clear()
        rewrite(root / "pkg" / f"mod_{k}.py", module_text(k, variant=1))
        service.refresh(str(root))
        if len(manifest_of(root)["state"]["segments"]) <= len(before):
            break
    else:
        pytest.fail("the refreshes never merged segments")
    assert 0 < len(reads) <= len(before) + 1  # the merged ones, the refresh's own new segment among them


def test_the_retriever_consumes_changed_files_one_at_a_time(make_tree, monkeypatch):
    from retrieval.retrievers import lexical as lexical_module

    root = make_tree({f"pkg/mod_{i}.py": module_text(i) for i in range(5)}, name="lazy")
    seen = []
    original = lexical_module.LexicalRetriever.update_store

    def spy(self, directory, state, removed_paths, added, **options):
        assert not isinstance(added, (list, tuple)), "changed files should arrive as a stream"

        def watch():
            for f, chunks in added:
                seen.append(f.path)
                yield f, chunks

        return original(self, directory, state, removed_paths, watch(), **options)

    monkeypatch.setattr(lexical_module.LexicalRetriever, "update_store", spy)
    service.refresh(str(root))
    assert seen == [f"pkg/mod_{i}.py" for i in range(5)]


def test_the_manifest_keeps_the_file_table_as_columns_and_no_per_file_locations(sample_repo):
    service.refresh(str(sample_repo))
    manifest = manifest_of(sample_repo)
    assert sorted(manifest["files"]) == sorted(layout.FILE_COLUMNS + (layout.CTIME_COLUMN,))
    table = service.file_table(manifest)
    assert list(table) == manifest["files"]["path"] == sorted(table)
    assert table["src/app/__init__.py"][service.NCHUNKS] == 0
    assert "locations" not in manifest["state"]


def test_status_of_a_damaged_index_says_the_next_query_rebuilds_it(sample_repo):
    service.refresh(str(sample_repo))
    with open(layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical"), "w", encoding="utf-8") as fh:
        fh.write('{"version": ')  # torn
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "error" and "corrupt" in row["reason"]
    assert row["reason"].endswith("the next query or `retrieval index --retriever lexical` rebuilds it")
    assert service.search(str(sample_repo), "LRUCache").hits  # as it says


def test_status_of_an_index_stale_for_another_reason_than_its_files_says_which(sample_repo, monkeypatch, tmp_path):
    """An older version's index, or one built under another HOME, was said to be stale because
    "files changed since its last refresh", though none had."""
    service.refresh(str(sample_repo))
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = json.loads(open(path, encoding="utf-8").read())

    def reason() -> str:
        (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
        assert row["state"] == "stale"
        return row["reason"]

    monkeypatch.setenv("HOME", str(tmp_path))
    assert reason().startswith("built under another HOME, XDG_CONFIG_HOME or GIT_CONFIG_*")
    monkeypatch.undo()
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(dict(manifest, decoder=manifest["decoder"] - 1), fh)
    assert reason() == "built by another version or with other index settings; the next query rebuilds it"


def test_a_manifest_whose_file_columns_disagree_is_rebuilt(sample_repo):
    service.refresh(str(sample_repo))
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = manifest_of(sample_repo)
    manifest["files"]["size"].pop()
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    with pytest.raises(layout.ManifestProblem, match="corrupt"):
        layout.read_manifest(layout.store_dir(str(sample_repo)), "lexical")
    notes = []
    report = service.refresh(str(sample_repo), progress=notes.append)
    assert report.status == "indexed" and any("rebuilding" in n for n in notes)
    assert service.search(str(sample_repo), "LRUCache").hits[0].source_path == "src/app/cache.py"


# -- filters -------------------------------------------------------------------------------------

FILTER_FILES = {
    **{f"src/retry_{i}.py": f"def retry_{i}():\n    retry retry retry backoff retry\n" for i in range(6)},
    "lib/helpers.go": "func retryLoop() { retry() }\n",
    "docs/retries.md": "# Retry\n\nWe retry once.\n",
    "deploy/config.yaml": "retry: 3\n",
}


@pytest.mark.parametrize(
    "filters, matches",
    [
        (service.QueryFilter(kind="docs"), lambda h: h.source_path == "docs/retries.md"),
        (service.QueryFilter(kind="config"), lambda h: h.source_path == "deploy/config.yaml"),
        (service.QueryFilter(language="go"), lambda h: h.source_path == "lib/helpers.go"),
        (service.QueryFilter(language="Go"), lambda h: h.source_path == "lib/helpers.go"),
        (service.QueryFilter(paths=("docs/*",)), lambda h: h.source_path.startswith("docs/")),
        (service.QueryFilter(paths=("lib/*", "deploy/*")), lambda h: h.source_path in {"lib/helpers.go", "deploy/config.yaml"}),
        (service.QueryFilter(paths=("src/retry_[3-5].py",), kind="code"), lambda h: h.source_path[-4] in "345"),
    ],
)
def test_filters_apply_before_ranking_so_every_top_k_hit_matches(make_tree, filters, matches):
    root = make_tree(FILTER_FILES)
    unfiltered = service.search(str(root), "retry", top_k=2).hits
    assert len(unfiltered) == 2 and all(h.source_path.startswith("src/") for h in unfiltered), "code should outrank the rest"
    expected = [h for h in service.search(str(root), "retry", top_k=50).hits if matches(h)]
    hits = service.search(str(root), "retry", top_k=2, filters=filters).hits
    assert hits, "a post-ranking filter would have left nothing"
    assert all(matches(h) for h in hits)
    assert len(hits) == min(2, len(expected))
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


@pytest.mark.parametrize("glob", ["docs/", "docs"])
def test_a_directory_path_filter_selects_the_files_below_it(make_tree, glob):
    root = make_tree(FILTER_FILES)
    hits = service.search(str(root), "retry", top_k=5, filters=service.QueryFilter(paths=(glob,))).hits
    assert [h.source_path for h in hits] == ["docs/retries.md"]


def test_an_empty_filter_is_falsy_and_a_set_one_is_truthy():
    assert not service.QueryFilter()
    assert service.QueryFilter(kind="docs")


def test_an_empty_answer_says_why_in_its_notes(make_tree):
    """The command line said why a query had no hit (on stderr); an API caller got an empty list
    and no word: filters matching no indexed file, words no file holds."""
    from retrieval.multi import search_all

    root = str(make_tree(FILTER_FILES))
    result = service.search(root, "retry", filters=service.QueryFilter(paths=("nowhere/",)))
    assert result.hits == [] and result.notes == ["no indexed file matches --path nowhere/"]
    result = service.search(root, "xylophonequux")
    assert result.notes == ["no hits: no indexed text contains a word of the query"]
    assert search_all(root, "xylophonequux").notes[-1] == "no hits: no indexed text contains a word of the query"
    assert service.search(root, "retry").notes == []  # hits: nothing to explain
    assert service.search(root, "   ").notes == ["no hits: the query is blank"]  # not "only punctuation"
    # none asked for: no reason to give (it said no indexed text held a word the index holds)
    assert service.search(root, "retry", top_k=0).notes == []
    assert not [note for note in search_all(root, "retry", top_k=0).notes if note.startswith("no hits")]


def test_a_filters_language_is_read_as_lang_reads_it_an_alias_in_any_case(make_tree):
    """`language="py"` matched no file (the index records `python`), with no word why."""
    root = make_tree(FILTER_FILES)
    hits = service.search(str(root), "retry", top_k=3, filters=service.QueryFilter(language="py")).hits
    assert hits and all(h.source_path.endswith(".py") for h in hits)
    assert service.QueryFilter(language="GO").language == "go"
    # Several: any of them (as --lang given twice), each read as --lang reads it; one stays a string.
    both = service.QueryFilter(language=("py", "Go", "python"))
    assert both.language == ("python", "go") and both.languages == ("python", "go")
    assert service.QueryFilter(language=["py"]).language == "python"
    hits = service.search(str(root), "retry", top_k=10, filters=both).hits
    assert hits and all(h.source_path.endswith((".py", ".go")) for h in hits)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"paths": "docs/*"}, TypeError, r"^paths takes a collection of globs, not one string: use \('docs/\*',\)$"),
    ({"paths": ("docs/*", 3)}, TypeError, r"^paths takes strings, not int \(3\)$"),
    ({"language": "klingon"}, ValueError, r"^unknown language 'klingon'; did you mean kotlin\?"),
    ({"kind": "function"}, ValueError, r"^kind must be one of code, docs, config, not 'function'$"),
    ({"language": None}, TypeError, r"^language must be a str or a tuple of them, not NoneType$"),
    ({"language": ("go", 3)}, TypeError, r"^language must be a str or a tuple of them, not int$"),
    ({"kind": ("code", "function")}, ValueError, r"^kind must be one of code, docs, config, not 'function'$")])
def test_a_filter_that_could_match_nothing_or_everything_by_mistake_is_refused(kwargs, error, message):
    """A lone string was read glob by glob, letter by letter (`"docs/*"` as `*`: every file), and an
    unknown language or kind matched nothing, silently: refused as --path, --lang and --kind are."""
    with pytest.raises(error, match=message):
        service.QueryFilter(**kwargs)


# -- status and clean ----------------------------------------------------------------------------


def test_status_reports_missing_before_the_first_index(sample_repo):
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "missing"
    assert (row["files"], row["chunks"], row["store_bytes"]) == (0, 0, 0)


def test_status_describes_a_ready_index(sample_repo):
    service.refresh(str(sample_repo))
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "ready"
    assert row["files"] == 6
    assert row["chunks"] == len(load_chunk_documents(str(sample_repo)))
    assert row["primary_language"] == "python"
    assert row["languages"] == {"python": 3, "markdown": 2, "toml": 1}
    sizes = [os.path.getsize(sample_repo / p) for p in (
        "README.md", "config/settings.toml", "docs/guide.md", "src/app/cache.py", "src/app/config.py",
        "src/app/http_client.py")]
    assert row["tokens"] == sum((s + 3) // 4 for s in sizes)
    assert row["store_bytes"] > 0
    assert row["created"]


def test_status_size_leaves_out_what_an_interrupted_writer_left(sample_repo):
    service.refresh(str(sample_repo))
    before = service.status(str(sample_repo))[0]["store_bytes"]
    store = sample_repo / ".retrieval" / "lexical"
    (store / "seg-000099.tmp").mkdir()
    (store / "seg-000099.tmp" / "post.bin").write_bytes(b"x" * 100_000)  # a killed build's segment
    (store / ".tmp-0123456789abcdef").write_bytes(b"y" * 50_000)  # a killed atomic write
    assert service.status(str(sample_repo))[0]["store_bytes"] == before


def test_status_turns_stale_after_a_file_is_edited_added_or_removed(sample_repo, rewrite):
    def state():
        return service.status(str(sample_repo))[0]["state"]

    service.refresh(str(sample_repo))
    rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    pass\n")
    assert state() == "stale"
    service.refresh(str(sample_repo))
    assert state() == "ready"
    (sample_repo / "src/app/new_module.py").write_text("x = 1\n")
    assert state() == "stale"
    service.refresh(str(sample_repo))
    os.unlink(sample_repo / "src/app/new_module.py")
    assert state() == "stale"
    service.refresh(str(sample_repo))
    (sample_repo / ".gitignore").write_text("docs/\n")
    assert state() == "stale"


def test_clean_removes_the_store_and_nothing_else(sample_repo):
    service.refresh(str(sample_repo))
    before = sorted(p.relative_to(sample_repo) for p in sample_repo.rglob("*") if ".retrieval" not in p.parts)
    assert service.clean(str(sample_repo)) is True
    assert not (sample_repo / ".retrieval").exists()
    after = sorted(p.relative_to(sample_repo) for p in sample_repo.rglob("*"))
    assert after == before
    assert service.clean(str(sample_repo)) is False


def test_clean_refuses_a_directory_that_is_not_a_store(sample_repo):
    (sample_repo / ".retrieval").mkdir()
    (sample_repo / ".retrieval" / "precious.txt").write_text("mine")
    with pytest.raises(layout.StoreError, match="does not look like a retrieval index"):
        service.clean(str(sample_repo))
    assert (sample_repo / ".retrieval" / "precious.txt").read_text() == "mine"


def test_status_refuses_a_linked_store_as_a_query_does(sample_repo, tmp_path):
    """Read through the link, status said `ready` (or `stale`) for an index every query refused."""
    service.refresh(str(sample_repo))
    elsewhere = tmp_path / "elsewhere"
    os.rename(sample_repo / ".retrieval", elsewhere)
    (sample_repo / ".retrieval").symlink_to(elsewhere)
    with pytest.raises(layout.StoreError, match="symbolic link"):
        service.status(str(sample_repo))
    (sample_repo / ".retrieval").unlink()
    os.rename(elsewhere, sample_repo / ".retrieval")
    os.rename(sample_repo / ".retrieval" / "lexical", elsewhere)
    (sample_repo / ".retrieval" / "lexical").symlink_to(elsewhere)
    (row,) = [r for r in service.status(str(sample_repo)) if r["retriever"] == "lexical"]
    assert row["state"] == "error" and "symbolic link" in row["reason"]


def test_clean_refuses_a_linked_store_and_leaves_what_it_points_to(sample_repo, tmp_path):
    service.refresh(str(sample_repo))
    elsewhere = tmp_path / "elsewhere"
    os.rename(sample_repo / ".retrieval", elsewhere)
    os.unlink(elsewhere / "lock")
    (sample_repo / ".retrieval").symlink_to(elsewhere)
    with pytest.raises(layout.StoreError, match="refusing to remove .* symbolic link"):
        service.clean(str(sample_repo))
    assert (sample_repo / ".retrieval").is_symlink()
    assert sorted(os.listdir(elsewhere)) == [".gitignore", "STORE.json", "lexical"]  # not even a lock made there


def test_clean_of_an_unreadable_store_says_so_not_that_the_store_is_not_ours(sample_repo, monkeypatch):
    service.refresh(str(sample_repo))
    marker = os.path.join(layout.store_dir(str(sample_repo)), "STORE.json")
    real_stat, real_lstat = os.stat, os.lstat

    def denied(real):
        def stat(path, *args, **kwargs):
            if os.fspath(path) == marker:  # as a store of mode 000 answers (tests run as root)
                raise PermissionError(13, "Permission denied", path)
            return real(path, *args, **kwargs)
        return stat

    monkeypatch.setattr(os, "stat", denied(real_stat))
    monkeypatch.setattr(os, "lstat", denied(real_lstat))
    with pytest.raises(layout.StoreError, match="cannot remove the index at .*Permission denied"):
        service.clean(str(sample_repo))


def test_a_clean_that_cannot_remove_every_file_puts_what_is_left_back_and_says_so(sample_repo, monkeypatch):
    """A store with a directory made read-only: the removal failed part way, and what was left stayed
    in `.retrieval.removing-N/` (its .gitignore gone, so git listed it), while the error said the
    index could not be removed (it was gone) and pointed at RETRIEVAL_INDEX_DIR."""
    from retrieval.store import atomic

    service.refresh(str(sample_repo))

    def partly(path, ignore_errors=False):
        os.remove(os.path.join(path, ".retrieval", ".gitignore"))  # removed before the refusal
        raise PermissionError(13, "Permission denied", "manifest.json")

    monkeypatch.setattr(atomic, "remove_tree", partly)
    with pytest.raises(layout.StoreError) as caught:
        service.clean(str(sample_repo))
    assert str(caught.value) == (f"cannot remove all of the index at {sample_repo / '.retrieval'}: Permission denied "
                                 "(manifest.json); what is left of it stays there (a query rebuilds what is missing)")
    assert sorted(os.listdir(sample_repo / ".retrieval")) == [".gitignore", "STORE.json", "lexical", "lock"]
    assert not [name for name in os.listdir(sample_repo) if name.startswith(".retrieval.")]
    monkeypatch.undo()
    assert service.search(str(sample_repo), "parse config").hits  # the store answers as before
    assert service.clean(str(sample_repo)) and not os.path.exists(sample_repo / ".retrieval")
    # A writer that began a new store meanwhile keeps it: what is left stays aside, and is said to.
    service.refresh(str(sample_repo))

    def raced(path, ignore_errors=False):
        os.mkdir(sample_repo / ".retrieval")
        raise PermissionError(13, "Permission denied", "manifest.json")

    monkeypatch.setattr(atomic, "remove_tree", raced)
    with pytest.raises(layout.StoreError, match=r"what is left of it is in .*\.retrieval\.removing-\d+ \(remove it"):
        service.clean(str(sample_repo))
    assert os.listdir(sample_repo / ".retrieval") == []


def test_status_stats_each_file_once_however_many_indexes_list_it(sample_repo, monkeypatch):
    """Each index's freshness check stat'ed the whole tree again: six walks of a big tree."""
    service.refresh(str(sample_repo))
    service.refresh(str(sample_repo), "lexical+ctx")
    real_stat = os.stat
    counted: dict = {}

    def stat(path, *args, **kwargs):
        if ".retrieval" not in os.fspath(path):  # the tree's files and directories, not the store's
            counted[os.fspath(path)] = counted.get(os.fspath(path), 0) + 1
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)  # (not in os.supports_dir_fd: stat'ed by absolute path)
    rows = {r["retriever"]: r["state"] for r in service.status(str(sample_repo))}
    assert rows["lexical"] == rows["lexical+ctx"] == "ready"
    assert counted[str(sample_repo / "src/app/cache.py")] == 1, counted


def test_a_qualified_query_finds_the_member_in_line_chunks_not_its_owners_first_lines(make_tree):
    """`Group.invoke` answered with `class Group`'s first lines (the rarer name won), graded high."""
    def owner(name, filler):
        methods = "".join(f"    def step_{i}(self):\n        return {i}\n\n" for i in range(filler))
        return (f"class {name}:\n    \"\"\"The {name} owner.\"\"\"\n\n{methods}"
                f"    def invoke(self, ctx):\n        return ctx.run_{name.lower()}()\n\n")
    text = owner("Command", 60) + owner("Group", 60) + owner("Context", 60)
    root = make_tree({"core.py": text, "other.py": "def invoke(x):\n    return x\n"})
    lines = text.split("\n")
    for name in ("Command", "Group", "Context"):
        hit = service.search(str(root), f"{name}.invoke", top_k=1).hits[0]
        wanted = lines.index(f"        return ctx.run_{name.lower()}()") + 1
        assert hit.source_path == "core.py" and hit.start_line <= wanted <= hit.end_line, (name, hit)


@pytest.mark.parametrize("query", ["termui.py", "src/pkg/termui.py", "termui.py:12"])
def test_a_query_that_is_a_file_name_or_path_finds_that_file_first(make_tree, query):
    """`core.py` was the symbol `py`: the chunk saying `Py_buffer` most came first, graded high."""
    files = {"src/pkg/termui.py": "def prompt(text):\n    return input(text)\n",
             "src/pkg/winconsole.py": "import ctypes\nPy_buffer = ctypes.pythonapi.PyBuffer\n"
                                      "PyObject_GetBuffer = Py_buffer\n# py py py\n"}
    files.update({f"src/pkg/mod_{i}.py": f"def helper_{i}():\n    return {i}\n" for i in range(8)})
    root = make_tree(files)
    assert service.search(str(root), query, top_k=3).hits[0].source_path == "src/pkg/termui.py"


def test_an_index_written_by_a_version_that_indexed_differently_is_rebuilt_by_the_next_query(make_tree):
    """An unchanged tree kept answering from the old store: a new chunker or new terms never reached it."""
    root = make_tree({"core.py": "class Group:\n    def invoke(self):\n        return 1\n"})
    service.refresh(str(root))
    path = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    manifest = json.loads(open(path).read())
    manifest["config"]["retriever"]["terms"]["features"] = 1  # as the version before member terms wrote it
    with open(path, "w") as fh:
        json.dump(manifest, fh)
    row = next(r for r in service.status(str(root)) if r["retriever"] == "lexical")
    assert row["state"] == "stale" and "next query rebuilds" in row["reason"]
    service._OPEN.clear()
    service.search(str(root), "Group.invoke")
    assert json.loads(open(path).read())["config"]["retriever"]["terms"]["features"] != 1
    assert next(r for r in service.status(str(root)) if r["retriever"] == "lexical")["state"] == "ready"
    # and a current index is left alone
    before = open(path).read()
    service._OPEN.clear()
    service.search(str(root), "Group.invoke")
    assert open(path).read() == before


def test_a_qualified_query_for_a_bang_method_finds_it(make_tree):
    """`initialize!` was searched as `initialize`: the bang method was never asked for."""
    text = ("module Rails\n  class Application\n" + "".join(f"    def step_{i}\n      {i}\n    end\n\n" for i in range(40))
            + "    def initialize!(group = :default)\n      run_initializers(group)\n    end\n\n"
            + "    def initialize(app)\n      @app = app\n    end\n  end\nend\n")
    root = make_tree({"application.rb": text, "other.rb": "def initialize\nend\n"})
    wanted = text.split("\n").index("    def initialize!(group = :default)") + 1
    for query in ("Rails::Application#initialize!", "initialize!"):
        hit = service.search(str(root), query, top_k=1).hits[0]
        assert hit.source_path == "application.rb" and hit.start_line <= wanted <= hit.end_line, (query, hit)


def test_an_elixir_function_asked_for_with_its_arity_is_found(make_tree):
    """`App.Controller.redirect/2` was read as the path-like symbol `2`: the module's definition
    (its owners' names) came first, not the function's."""
    text = ("defmodule App.Controller do\n  @moduledoc \"Controller helpers.\"\n"
            + "".join(f"  def step_{i}(conn) do\n    conn\n    |> assign(:step, {i})\n  end\n\n" for i in range(40))
            + "  def redirect(conn, opts) when is_list(opts) do\n    {conn, 302, Keyword.fetch!(opts, :to)}\n  end\nend\n")
    # A namesake in another module, whose text names App.Controller more often than the definition
    caller = ("defmodule App.Flow do\n  # the App.Controller redirect, wrapped: App.Controller's options\n"
              "  def redirect(conn, opts) do\n    conn = App.Controller.put_flash(conn, App.Controller.default())\n"
              "    App.Controller.redirect(conn, opts)\n  end\nend\n")
    files = {"lib/app/controller.ex": text, "lib/app/flow.ex": caller}
    root = make_tree(files)
    wanted = text.split("\n").index("  def redirect(conn, opts) when is_list(opts) do") + 1
    hit = service.search(str(root), "App.Controller.redirect/2", top_k=1).hits[0]
    assert hit.source_path == "lib/app/controller.ex" and hit.start_line <= wanted <= hit.end_line, hit


def test_files_an_older_decoder_refused_are_read_again_once(make_tree, monkeypatch):
    """A UTF-16 source skipped as binary by a version without UTF-16 stayed skipped in every
    index built by it (unchanged files are never re-read); the first query after the upgrade
    reads such files again, and only those, and the index is current afterwards."""
    from retrieval import read

    root = make_tree({"Zebra.cs": "class Zebra { int zeta_stripes; }\n".encode("utf-16"),
                      "main.py": "x = 1\n", "blob.py": b"\x00\x01"})
    with monkeypatch.context() as old:  # the version before: NUL bytes, so binary
        old.setattr(read, "decode", lambda data: (None, read.BINARY) if b"\x00" in data else (data.decode(), ""))
        service.refresh(str(root))
    path = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    manifest = json.loads(open(path).read())
    assert manifest["skipped"] == {"binary": 2}
    del manifest["decoder"]  # which that version did not write
    with open(path, "w") as fh:
        json.dump(manifest, fh)
    service._OPEN.clear()
    assert not service.is_current(str(root), manifest)
    assert [h.source_path for h in service.search(str(root), "zeta_stripes").hits] == ["Zebra.cs"]
    assert manifest_of(root)["skipped"] == {"binary": 1}
    assert service.is_current(str(root), manifest_of(root))
    assert service.refresh(str(root)).reread == []


@pytest.mark.parametrize("kwargs, error", [({"query": None}, TypeError), ({"top_k": "3"}, TypeError),
                                           ({"top_k": -2}, ValueError), ({"min_confidence": "hihg"}, ValueError)])
def test_a_wrong_argument_is_an_error_about_the_argument_and_the_index_is_left_alone(sample_repo, kwargs, error):
    """Such calls were taken for a damaged index: rebuilt from the sources, then a StoreError."""
    service.refresh(str(sample_repo), "lexical")
    manifest = layout.read_manifest(layout.store_dir(str(sample_repo)), "lexical")
    call = {"query": "parse config", **kwargs}
    messages = []
    with pytest.raises(error, match=f"^{next(iter(kwargs))} must be"):
        service.search(str(sample_repo), call.pop("query"), progress=messages.append, **call)
    assert not messages
    assert layout.read_manifest(layout.store_dir(str(sample_repo)), "lexical") == manifest


def test_a_mentioned_file_name_is_shared_only_among_the_files_still_indexed(make_tree):
    from retrieval.query import plan_query

    files = {f"src/m{i}.py": f"def run{i}():\n    pass\n" for i in range(30)}  # a removal too small to merge
    root = make_tree({"doc/conf.py": "project = 'a'\n", "site/conf.py": "project = 'b'\n", **files})
    plan = lambda engine: plan_query("the build reads conf.py twice", engine.ranking)
    engine = service.open_index(str(root), "lexical")
    assert engine.mentioned(plan(engine)) == {"doc/conf.py": 0.5, "site/conf.py": 0.5}
    (root / "site" / "conf.py").unlink()
    service.refresh(str(root), "lexical")
    engine = service.open_index(str(root), "lexical")
    assert engine.mentioned(plan(engine)) == {"doc/conf.py": 1.0}


@pytest.mark.parametrize("retriever", ["lexical", pytest.param("treesitter", marks=pytest.mark.extra("treesitter"))])
def test_a_query_of_a_path_and_a_line_finds_the_chunk_holding_that_line(make_tree, retriever):
    """`src/pkg/termui.py:62` names a file and a line: its directories are no definitions asked
    for (pyproject.toml's `src = ["src"]` came first) and the line picks the chunk."""
    functions = "".join(f"def step_{i}(value):\n    total = value + {i}\n    return total\n\n" for i in range(40))
    files = {"src/pkg/termui.py": functions,
             "pyproject.toml": '[tool.ruff]\nsrc = ["src"]\n\n[tool.pkg]\npkg = "src/pkg"\n'}
    files.update({f"src/pkg/mod_{i}.py": f"def helper_{i}():\n    return {i}\n" for i in range(8)})
    root = make_tree(files)
    for query in ("src/pkg/termui.py", "src/pkg/termui.py:62", "termui.py:130"):
        hit = service.search(str(root), query, retriever=retriever, top_k=3).hits[0]
        assert hit.source_path == "src/pkg/termui.py", (query, hit)
        line = int(query.partition(":")[2] or 0)
        assert not line or hit.start_line <= line <= hit.end_line, (query, hit)


def _search_all(root, query, **kwargs):
    from retrieval import multi

    return multi.search_all(root, query, **kwargs)


@pytest.mark.parametrize("search", [service.search, _search_all], ids=["search", "search_all"])
@pytest.mark.parametrize("kwargs, error, message", [
    ({"query": None}, TypeError, "query must be a str, not NoneType"),
    ({"top_k": -1}, ValueError, "top_k must be 0 or more, not -1"),
    ({"min_confidence": "hihg"}, ValueError, "min_confidence must be one of low, medium, high, not 'hihg'"),
    ({"filters": "src/"}, TypeError, "filters must be a QueryFilter, not str")])
def test_a_wrong_search_argument_is_refused_before_any_index_is_built(sample_repo, search, kwargs, error, message):
    # search_all opened (and built) every index first; a filters string was an AttributeError after
    # the build, and search_all took any min_confidence, answering nothing.
    call = {"query": "parse config", **kwargs}
    with pytest.raises(error, match=f"^{message}$"):
        search(str(sample_repo), call.pop("query"), **call)
    assert not os.path.exists(layout.store_dir(str(sample_repo)))


def test_refresh_refuses_options_of_another_type_without_calling_the_index_damaged(sample_repo):
    service.refresh(str(sample_repo))
    manifest = layout.read_manifest(layout.store_dir(str(sample_repo)), "lexical")
    messages = []
    with pytest.raises(TypeError, match=r"^options must be an IndexOptions, not dict$"):
        service.refresh(str(sample_repo), options={"bm25": (0.9, 0.4)}, progress=messages.append)
    assert messages == []  # it said "the lexical index is damaged (...); rebuilding it"
    assert layout.read_manifest(layout.store_dir(str(sample_repo)), "lexical") == manifest


@pytest.mark.parametrize("call", [
    lambda root: service.refresh(root), lambda root: service.search(root, "parse config"),
    lambda root: service.status(root), lambda root: service.clean(root), lambda root: service.open_index(root),
    lambda root: _search_all(root, "parse config"), lambda root: load_chunk_documents(root)],
    ids=["refresh", "search", "status", "clean", "open_index", "search_all", "load_chunk_documents"])
@pytest.mark.parametrize("kind", [bytes, type(None)], ids=["bytes", "None"])
def test_a_root_that_is_not_a_path_is_a_type_error_naming_the_root(sample_repo, call, kind):
    # bytes failed deep in a path join ("Can't mix strings and bytes in path components").
    root = os.fsencode(str(sample_repo)) if kind is bytes else None
    with pytest.raises(TypeError, match=f"^root must be a str or os.PathLike, not {kind.__name__}$"):
        call(root)
    assert not os.path.exists(layout.store_dir(str(sample_repo)))


def test_a_root_given_as_a_pathlib_path_works_like_its_string(sample_repo):
    assert service.refresh(sample_repo).files == service.refresh(str(sample_repo)).files
    assert service.search(sample_repo, "parse config").hits == service.search(str(sample_repo), "parse config").hits
    assert service.clean(sample_repo) and not os.path.exists(layout.store_dir(str(sample_repo)))


def test_rebuilds_killed_one_after_another_leave_only_the_last_ones_files(make_tree, monkeypatch):
    """Each `index --force` killed before its commit left a whole index's segments beside the
    committed one (ten kills: five times the store's files) until a rebuild finished: a rebuild
    clears what earlier killed ones left, and a query answers from the committed index all along."""
    root = make_tree({f"pkg/m{i}.py": f"def handler_{i}(request):\n    return retry_upload(request, {i})\n"
                      for i in range(6)})
    service.refresh(root, "lexical")
    store = root / ".retrieval" / "lexical"
    committed = {n for n in os.listdir(store) if n.startswith("seg-")}
    before = [h.docid for h in service.search(root, "retry upload", top_k=3).hits]

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt  # the new segments are written, the manifest not yet

    monkeypatch.setattr(layout, "commit_manifest", killed)
    # As a SIGKILL leaves them: without the cleanup an interrupted refresh does (below).
    cleanup = service._collect_uncommitted
    monkeypatch.setattr(service, "_collect_uncommitted", lambda *args: None)
    left = []
    for _ in range(4):
        with pytest.raises(KeyboardInterrupt):
            service.refresh(root, "lexical", force=True)
        left.append(len({n for n in os.listdir(store) if n.startswith("seg-")} - committed))
    assert left[0] >= 1 and left == left[:1] * 4, left  # the last killed build's only
    # Interrupted (not killed), a rebuild removes what it wrote.
    monkeypatch.setattr(service, "_collect_uncommitted", cleanup)
    with pytest.raises(KeyboardInterrupt):
        service.refresh(root, "lexical", force=True)
    assert {n for n in os.listdir(store) if n.startswith("seg-")} == committed
    monkeypatch.undo()
    assert [h.docid for h in service.search(root, "retry upload", top_k=3, stale_ok=True).hits] == before


def test_an_engine_kept_open_while_its_segments_are_collected_says_it_was_replaced(make_tree):
    """A Python API user's engine (open_index) outlived the snapshot it opened: after a rebuild by
    another caller its search raised FileNotFoundError for a post.bin; the service's search opens
    the newer snapshot itself."""
    from retrieval.retrievers.base import Released

    root = make_tree({f"pkg/m{i}.py": f"def handler_{i}(request):\n    return retry_upload(request, {i})\n"
                      for i in range(6)})
    service.refresh(root)
    engine = service.open_index(root, "lexical")
    service.refresh(root, force=True)  # the old segments are collected at its commit
    with pytest.raises(Released, match=r"lexical index was replaced by a newer snapshot .*: open it again"):
        engine.search_detailed("retry upload", 3)
    assert [h.source_path for h in service.search(root, "retry upload", top_k=3).hits]


@pytest.mark.extra("local", "turbovec")
def test_a_hybrid_engine_kept_open_while_its_lexical_segments_are_collected_says_it_was_replaced(make_tree):
    from retrieval.retrievers.base import Released

    root = make_tree({f"pkg/m{i}.py": f"def handler_{i}(request):\n    return retry_upload(request, {i})\n"
                      for i in range(6)})
    service.refresh(root, "hybrid")
    engine = service.open_index(root, "hybrid")
    service.refresh(root, "hybrid", force=True)
    with pytest.raises(Released, match=r"hybrid index was replaced by a newer snapshot"):
        engine.search_detailed("retry upload", 3)


def test_search_with_retriever_all_is_the_consolidated_search(sample_repo):
    # the CLI and MCP took "all"; the API said it was an unknown retriever
    result = service.search(str(sample_repo), "LRUCache", retriever="all")
    assert result.retriever == "all"
    assert result.hits[0].source_path == "src/app/cache.py"
    assert "lexical" in result.hits[0].extra["provenance"]
    assert all(h.extra["agreement"] == len(h.extra["provenance"]) for h in result.hits)


def test_an_unknown_retriever_names_all_among_the_choices(sample_repo):
    with pytest.raises(ValueError, match=r"unknown retriever 'bogus'; choose one of: all, "):
        service.search(str(sample_repo), "LRUCache", retriever="bogus")


# -- a refresh lists the tree only when something a walk saw has changed ----------------------------


def _indexed(root, **options):
    """An index of a tree older than a clock tick's margin (freshness.FINE_MARGIN_NS): an edit in
    the tick in which a walk stat'ed a directory leaves its stat as it was, so such a directory is
    listed again. The store made in the tree is such an edit of the root: indexed twice."""
    import time

    for _ in range(2):
        time.sleep(0.06)
        service.refresh(str(root), options=service.IndexOptions(**options))
    return root


def _no_walk(monkeypatch):
    def walk(*args, **kwargs):
        raise AssertionError("the tree was walked")

    monkeypatch.setattr(service, "walk", walk)


def test_a_refresh_of_an_unchanged_tree_lists_no_directory(sample_repo, monkeypatch):
    """Nothing the last walk saw (a directory, an ignore file, a file) has another stat: the walk
    would find the same files, and their stats are all it takes."""
    _indexed(sample_repo)
    before = manifest_of(sample_repo)
    _no_walk(monkeypatch)
    report = service.refresh(str(sample_repo))
    assert report.status == "up to date" and report.reread == []
    assert manifest_of(sample_repo) == before


def test_an_edited_file_is_indexed_again_without_listing_the_tree(sample_repo, copy_tree, rewrite, monkeypatch):
    _indexed(sample_repo)
    rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    def shrink_to_fit(self):\n        pass\n")
    with monkeypatch.context() as patched:
        _no_walk(patched)
        report = service.refresh(str(sample_repo))
    assert report.reprocessed == ["src/app/cache.py"]
    fresh = copy_tree(sample_repo)
    for query in QUERIES + ["shrink to fit"]:
        assert_same_hits(service.search(str(sample_repo), query).hits, service.search(str(fresh), query).hits)


def test_a_data_file_edited_in_place_into_a_script_is_found_by_a_thorough_check(make_tree, rewrite):
    """`bin/deploy`, extension-less data, edited in place into a Python script: no directory changes,
    and neither a query nor a server's check after the edit it was told of looked at it (curl's
    1,980 extension-less test cases would cost every cold query 5 ms of stats: only the thorough
    check a server makes after a change does)."""
    root = _indexed(make_tree({"main.go": "package main\nfunc Main() {}\n", "bin/deploy": "just some data here\n"}))
    rewrite(root / "bin/deploy", "#!/usr/bin/env python\ndef quokka_deploy():\n    pass\n")
    store = layout.store_dir(str(root))
    assert service.is_current(str(root), layout.read_manifest(store, "lexical"))  # (the documented trade-off)
    assert not service.is_current(str(root), layout.read_manifest(store, "lexical"), thorough=True)
    engine = service.open_index(str(root), "lexical", thorough=True)
    assert [h.source_path for h in engine.search_detailed("quokka_deploy", 3)] == ["bin/deploy"]


@pytest.mark.parametrize("change", ["data file gets a #! line", "script loses its #! line", "ignore file edited",
                                    "file added", "file outgrows the cap", "file shrinks under the cap",
                                    "empty script gets a #! line"])
def test_a_refresh_finds_what_a_walk_finds_after_a_change_no_directory_shows(make_tree, rewrite, change):
    """Edits in place change no directory's stat: the files whose contents decide what is eligible
    (ignore files, an extension-less file's first line, a size against the cap) are stat'ed too."""
    root = _indexed(make_tree({
        "main.py": "def main():\n    return 1\n", ".gitignore": "*.log\n", "tests/data/case1": "GET / HTTP/1.1\n",
        "bin/deploy": "#!/bin/sh\necho deploy\n", "bin/empty": "", "big.py": "x = 1\n" * 40, "huge.py": "y = 2\n" * 60,
        "lib/util.py": "def util():\n    pass\n"}), max_bytes=300)
    if change == "data file gets a #! line":
        rewrite(root / "tests/data/case1", "#!/usr/bin/env python3\nprint('case')\n")
    elif change == "script loses its #! line":
        rewrite(root / "bin/deploy", "echo deploy\n")
    elif change == "ignore file edited":
        rewrite(root / ".gitignore", "*.log\nbig.py\n")
    elif change == "file added":
        (root / "lib/new.py").write_text("def new():\n    pass\n")
    elif change == "file outgrows the cap":
        rewrite(root / "big.py", "x = 1\n" * 80)
    elif change == "file shrinks under the cap":
        rewrite(root / "huge.py", "y = 2\n")
    elif change == "empty script gets a #! line":
        rewrite(root / "bin/empty", "#!/bin/bash\necho hi\n")
    service.refresh(str(root))
    walked = service.walk(str(root), service.IndexOptions(max_bytes=300).discovery(layout.store_dir(str(root))))
    assert manifest_of(root)["files"]["path"] == [f.path for f in walked.files]
    assert manifest_of(root)["watch"] == service._watch_json(walked)


def test_a_directory_changed_in_the_tick_it_was_listed_in_is_listed_again(sample_repo, monkeypatch):
    """An entry added in the same clock tick as the walk's stat of its directory leaves that stat
    as it was: such a directory is never taken as unchanged, and the next refresh lists it."""
    _indexed(sample_repo)
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = manifest_of(sample_repo)
    manifest["walked"]["settled"] = False  # as if the walk had begun in the tick `src/` was last changed in
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    walks = []
    real = service.walk
    monkeypatch.setattr(service, "walk", lambda *a, **k: walks.append(1) or real(*a, **k))
    service.refresh(str(sample_repo))
    assert walks == [1]
    service.refresh(str(sample_repo))  # that walk was recorded: the next refresh trusts it
    assert walks == [1]


def test_an_index_written_before_walks_were_recorded_is_walked_once_then_trusted(sample_repo, monkeypatch):
    _indexed(sample_repo)
    path = layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical")
    manifest = manifest_of(sample_repo)
    del manifest["walked"]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    walks = []
    real = service.walk
    monkeypatch.setattr(service, "walk", lambda *a, **k: walks.append(1) or real(*a, **k))
    assert service.refresh(str(sample_repo)).status == "up to date"
    assert walks == [1] and "walked" in manifest_of(sample_repo)
    service.refresh(str(sample_repo))
    assert walks == [1]


def test_status_names_the_language_of_most_code_files_not_of_most_data_files(make_tree):
    """redis, 402 JSON command specifications beside 225 C files, was "mostly json"."""
    files = {f"commands/cmd{i}.json": f'{{"name": "cmd{i}"}}\n' for i in range(5)}
    files.update({"src/server.c": "int main(void) { return 0; }\n", "src/util.c": "int util(void) { return 1; }\n"})
    root = make_tree(files)
    service.refresh(str(root))
    (row,) = [r for r in service.status(str(root)) if r["retriever"] == "lexical"]
    assert row["languages"] == {"json": 5, "c": 2} and row["primary_language"] == "c"
    docs = make_tree({"a.md": "# A\n", "b.md": "# B\n", "c.toml": "x = 1\n"})
    service.refresh(str(docs))
    (row,) = [r for r in service.status(str(docs)) if r["retriever"] == "lexical"]
    assert row["primary_language"] == "markdown"  # no code: the most files of any kind


class Cancelled(RuntimeError):
    """What a host raises from its progress callback to stop a long build."""


@pytest.mark.parametrize("call", ["refresh", "search", "search all"])
def test_an_exception_from_the_callers_progress_callback_is_raised_as_it_is_never_read_as_damage(
        make_tree, monkeypatch, call):
    """Raised to cancel a build, a RuntimeError or ValueError from the callback read as a damaged
    index: the build started again from scratch, and the caller's exception came only after it."""
    root = make_tree({f"m{i}.py": f"def handler_{i}():\n    return {i}\n" for i in range(40)})
    monkeypatch.setattr(service, "FIRST_BUILD_NOTE", 10)  # a first build of 10 files says so: a call
    said = []

    def progress(message):
        said.append(str(message))
        raise Cancelled("the user pressed cancel")

    with pytest.raises(Cancelled, match="the user pressed cancel"):
        if call == "refresh":
            service.refresh(str(root), "lexical", progress=progress)
        else:
            service.search(str(root), "handler", retriever="all" if call == "search all" else "lexical",
                           progress=progress)
    assert len(said) == 1 and "damaged" not in said[0], said


def test_a_progress_callback_that_cannot_be_called_is_refused_before_anything_is_built(make_tree):
    root = make_tree({"a.py": "def handler():\n    return 1\n"})
    for call in (lambda: service.refresh(str(root), progress=5), lambda: service.search(str(root), "x", progress=5)):
        with pytest.raises(TypeError, match="progress must be a callable taking one str, not int"):
            call()
    assert not (root / ".retrieval").exists()


def test_an_open_racing_a_writer_that_commits_again_and_again_opens_its_newest_snapshot_without_a_rebuild(
        make_tree, monkeypatch):
    """Threads searching beside a loop of refreshes: each open read a manifest whose files the next
    commit had collected, spent its three attempts (a forced rebuild among them) and failed with
    "the index could not be opened"."""
    from retrieval.retrievers.lexical import LexicalRetriever

    root = make_tree({"a.py": "def zqrace():\n    pass\n"})
    service.refresh(root)
    manifest = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    real, raced, rebuilds = LexicalRetriever.open_store, [], []

    def replaced_meanwhile(self, directory, state):
        if len(raced) < 6:  # a writer commits (a new manifest) and collects this snapshot's files
            raced.append(1)
            data = open(manifest, "rb").read()
            os.unlink(manifest)
            with open(manifest, "wb") as fh:
                fh.write(data.rstrip() + b" " * len(raced))  # (another size: a key of its own within a clock tick)
            raise FileNotFoundError(2, "No such file or directory", os.path.join(directory, "seg-000001"))
        return real(self, directory, state)

    monkeypatch.setattr(LexicalRetriever, "open_store", replaced_meanwhile)
    monkeypatch.setattr(service, "_rebuilding", lambda *args: rebuilds.append(args))
    service._OPEN.pop((layout.store_dir(str(root)), "lexical"), None)
    engine = service.open_index(root, "lexical", stale_ok=True)
    assert len(raced) == 6 and rebuilds == []
    assert [h.source_path for h in engine.search_detailed("zqrace", 3)] == ["a.py"]


def test_a_missing_answer_names_the_files_left_out_for_their_size(make_tree):
    """A 1.8 MB generated parser defining `wombat_handler` was skipped as too large, and the note
    said no indexed text held the word: the reader concluded the symbol did not exist."""
    big = "def wombat_handler():\n    pass\n" + "x = 1\n" * 200
    root = str(make_tree({"gen.py": big, "small.py": "def retry_handler():\n    pass\n"}))
    service.refresh(root, "lexical", options=service.IndexOptions(max_bytes=len(big) - 1))
    left_out = ("; 1 file larger than the size cap was left out (`retrieval status --skipped` names it; "
                "`retrieval index --max-file-bytes N` raises the cap)")
    assert service.search(root, "wombat").notes == ["no hits: no indexed text contains a word of the query" + left_out]
    assert service.search(root, "WombatHandler").notes == [
        "'WombatHandler' is in no indexed file, in any naming style: these hits only resemble it" + left_out]
    # Filters the file may not pass: not told of (it could not hold the answer asked for there).
    assert service.search(root, "WombatHandler", filters=service.QueryFilter(paths=("small.py",))).notes == [
        "'WombatHandler' is in no indexed file, in any naming style: these hits only resemble it"]
    service.refresh(root, "lexical", options=service.IndexOptions(max_bytes=len(big)))
    assert service.search(root, "WombatHandler").notes == []  # in the index now
    assert service.search(root, "RetryHandlerWombat").notes == [
        "'RetryHandlerWombat' is in no indexed file, in any naming style: these hits only resemble it"]


def test_a_note_quotes_the_start_of_a_long_name_no_file_holds(make_tree):
    """A pasted 24,000-character word came back whole in the note (on stderr, and in --json far
    over --max-tokens): a note quotes a name's first characters and says how long it is."""
    root = str(make_tree({"redirects.py": "def resolve_redirects(resp):\n    return resp\n"}))
    (note,) = service.search(root, "resolveRedirects" * 1500).notes
    assert note.startswith("'resolveRedirectsresolveRedirectsresolveR...lveRedirects' (24,000 characters) "
                           "is in no indexed file")
    assert len(note) < 300
    (note,) = service.search(root, "resolveRedirectz").notes  # (a name as typed, whole)
    assert note.startswith("'resolveRedirectz' is in no indexed file")


def test_hits_that_only_resemble_an_identifier_no_file_holds_are_rated_low(make_tree):
    """`isTrustedProxi`: the chunk defining `isTrustedProxy` holds the stems of every part of it,
    and was rated `medium` beside a note saying the name is in no file."""
    from retrieval.multi import search_all

    root = str(make_tree({"gin.go": "func (e *Engine) isTrustedProxy(ip net.IP) bool {\n\treturn trusted(ip)\n}\n",
                          "other.go": "func main() {\n\tserve()\n}\n"}))
    assert [h.confidence for h in service.search(root, "isTrustedProxy").hits][:1] != ["low"]  # the name itself
    for result in (service.search(root, "isTrustedProxi"), search_all(root, "isTrustedProxi")):
        assert result.hits and {h.confidence for h in result.hits} == {"low"}
        assert any("only resemble it" in note for note in result.notes)
    assert service.search(root, "isTrustedProxi", min_confidence="medium").hits == []
    for query in ("isTrustedProxi ip", "func (e *Engine) isTrustedProxi(ip net.IP) bool"):  # asking for it too
        assert {h.confidence for h in service.search(root, query).hits} == {"low"}, query
    # A trace naming it is no question about the name: its own frame's chunk keeps its level.
    trace = ('goroutine 1 [running]:\nmain.(*Engine).isTrustedProxy(...)\n\t/src/app/gin.go:2 +0x1d\n'
             "panic: undefined: isTrustedProxi")
    result = service.search(root, trace)
    assert any("only resemble it" in note for note in result.notes)
    assert result.hits[0].source_path == "gin.go" and result.hits[0].confidence != "low"


def test_a_query_naming_a_file_is_not_told_its_extension_is_in_no_file(make_tree):
    """`app.py:8` was told "'py' is in no indexed file": an extension or a directory is no identifier."""
    root = str(make_tree({"app.py": "def connect(url):\n    return url\n"}))
    for query in ("app.py:2", "app.py", "docs/app.py:1", "app.py:1-2"):
        result = service.search(root, query)
        assert [h.source_path for h in result.hits] == ["app.py"] and result.notes == [], query
    # A file no indexed file is named as: its hits only resemble it, as said of an identifier in no file.
    for query in ("connect.py", "src/connect.py:12"):
        result = service.search(root, query)
        assert result.hits and result.notes == ["no indexed file is named 'connect.py': these hits only resemble it"]
    # Nor when nothing resembles it: said with the empty answer (it said only that no word was found).
    for query in ("README.md", "Makefile"):
        assert service.search(root, query).notes == [
            f"no hits: no indexed text contains a word of the query, nor is an indexed file named '{query}'"]
    # A sentence ending in a file's name is a question, not a file's name.
    assert service.search(root, "where is connect in app.py").notes == []
    # Every retriever at once says so too, of a file and of an identifier no file holds.
    from retrieval.multi import search_all

    assert "no indexed file is named 'connect.py': these hits only resemble it" in search_all(root, "connect.py").notes
    assert search_all(root, "Makefile").notes[-1] == (
        "no hits: no indexed text contains a word of the query, nor is an indexed file named 'Makefile'")
    assert "'ConnectWombat' is in no indexed file, in any naming style: these hits only resemble it" in search_all(
        root, "ConnectWombat url").notes


def test_a_pasted_trace_is_not_told_its_paths_parts_are_in_no_file(make_tree):
    """Every Node stack trace was told `'node_modules' is in no indexed file`: a directory of the
    paths it pastes, no name it asks for."""
    root = str(make_tree({"lib/router/index.js": "function handle(req, res) {\n  throw new Error('boom')\n}\n"}))
    trace = "Error: boom\n    at handle (/srv/app/node_modules/express/lib/router/index.js:2:9)\n"
    result = service.search(root, trace)
    assert result.hits and not any("node_modules" in note for note in result.notes), result.notes


def test_a_missing_answer_counts_every_file_left_out_that_was_meant_to_be_read(make_tree):
    """A source file with a NUL byte, one in no text encoding and a too-large one were all left out, and the
    note named only the one over the size cap: raising the cap would not have found the others."""
    root = make_tree({"small.py": "def retry_handler():\n    pass\n",
                      "gen.py": "def wombat_handler():\n    pass\n" + "x = 1\n" * 2000,
                      ".gitignore": "ignored/\n", "ignored/w.py": "def wombat_handler():\n    pass\n"})
    (root / "nul.py").write_bytes(b"def wombat_handler():\n    return b'\x00'\x00\n")
    (root / "undecodable.py").write_bytes(bytes(range(128, 256)) * 4 + b"\ndef wombat_handler():\n    pass\n")
    root = str(root)
    service.refresh(root, "lexical", options=service.IndexOptions(max_bytes=5000))
    assert service.search(root, "wombat").notes == [
        "no hits: no indexed text contains a word of the query; 3 files were left out (1 larger than the size "
        "cap, 1 binary, 1 not UTF-8: `retrieval status --skipped` names them; `retrieval index --max-file-bytes N` "
        "raises the cap)"]
    os.remove(os.path.join(root, "gen.py"))
    service.refresh(root, "lexical", options=service.IndexOptions(max_bytes=5000))
    assert service.search(root, "wombat").notes == [  # (nothing about the cap: no file is over it)
        "no hits: no indexed text contains a word of the query; 2 files were left out (1 binary, 1 not UTF-8: "
        "`retrieval status --skipped` names them)"]
    os.remove(os.path.join(root, "undecodable.py"))
    service.refresh(root, "lexical", options=service.IndexOptions(max_bytes=5000))
    assert service.search(root, "wombat").notes == [  # (one reason: said as English says it)
        "no hits: no indexed text contains a word of the query; 1 binary file was left out "
        "(`retrieval status --skipped` names it)"]


@pytest.mark.parametrize("name", ["lexical", pytest.param("treesitter", marks=pytest.mark.extra("treesitter"))])
def test_a_misspelt_identifier_is_told_the_defined_names_spelt_like_it(make_tree, name):
    """`expireGenricCommand` had look-alike hits and `splitlnk` none, each with a note saying the
    name was nowhere, and no name to ask for next: the agent gave up on a one-letter typo."""
    root = str(make_tree({"expire.py": "def expireGenericCommand(client):\n    return client.expire()\n",
                          "links.py": "def splitLink(left, right):\n    return left\n",
                          "gone.py": "def expireGenericCommando():\n    pass\n"}))
    service.refresh(root, name)
    os.remove(os.path.join(root, "gone.py"))  # a name only a deleted file defined is offered no more
    result = service.search(root, "expireGenricCommand", retriever=name)
    assert result.hits and result.notes == [
        "'expireGenricCommand' is in no indexed file, in any naming style: these hits only resemble it; "
        "did you mean `expireGenericCommand`?"]
    assert service.search(root, "splitlnk", retriever=name).notes == [
        "no hits: no indexed text contains a word of the query; did you mean `splitLink`?"]
    assert service.search(root, "zorblax", retriever=name).notes == [
        "no hits: no indexed text contains a word of the query"]  # nothing spelt like it: nothing offered
    # One word of a qualified name, a name a sentence writes as code: said, and offered too.
    assert service.search(root, "links.splitLnk", retriever=name).notes == [
        "'splitLnk' is in no indexed file, in any naming style: these hits only resemble it; did you mean `splitLink`?"]
    assert service.search(root, "where is expire_genric_command called", retriever=name).notes[0].endswith(
        "did you mean `expireGenericCommand`?")
    # Under a filter the empty answer may be the filter's doing, and a name offered may lie outside it.
    filtered = service.QueryFilter(paths=("links.py",))
    assert service.search(root, "splitlnk", retriever=name, filters=filtered).notes == [
        "no hits: no indexed text of the files the filters admit contains a word of the query"]
    assert "did you mean" not in service.search(root, "expireGenricCommand", retriever=name, filters=filtered).notes[0]


@pytest.mark.parametrize("name", ["lexical", pytest.param("hybrid", marks=pytest.mark.extra("local", "turbovec"))])
def test_hits_for_an_identifier_no_file_holds_say_they_only_share_its_parts(make_tree, name):
    """After the one file defining `RetryLimiter` was deleted, its query still had hits (code using
    `retry` and `limiter` apart), which an agent took for the answer."""
    root = str(make_tree({"net/retry.py": "def retry(call):\n    return call()\n",
                          "net/limits.py": "class Limiter:\n    def acquire(self):\n        pass\n",
                          "net/web.py": "class ClientIP:\n    def get_params(self):\n        return self.parse_qs_Args\n"}))
    result = service.search(root, "RetryLimiter", retriever=name)
    assert result.hits and result.notes == ["'RetryLimiter' is in no indexed file, in any naming style: these hits "
                                            "only resemble it"]
    assert service.search(root, "def RetryLimiter", retriever=name).notes == result.notes
    # Another naming style of a name that is there is that name (`client_ip` finds `ClientIP`).
    for held in ("Limiter", "retry", "Limiter.acquire", "client_ip", "getParams", "GetParams", "parse_qs_Args"):
        assert service.search(root, held, retriever=name).notes == [], held
