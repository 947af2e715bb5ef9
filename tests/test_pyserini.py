"""The `pi-serini` retriever on a real Lucene index (the JVM starts once, in this process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval import Document, build_retriever
from retrieval import service

pytestmark = pytest.mark.extra("pyserini")

CODE = {
    "src/router.py": "class Router:\n    def add_route(self, path, handler):\n        self.routes[path] = handler\n",
    "src/auth/tokens.py": "def refresh_token(token):\n    \"\"\"Exchange an expired token for a new one.\"\"\"\n    return issue(token.user)\n",
    "src/cache.py": "class LRUCache:\n    def evict_oldest(self):\n        del self.items[next(iter(self.items))]\n",
    "tests/test_router.py": "from src.router import Router\n\ndef test_add_route():\n    Router().add_route('/', None)\n",
    "docs/routing.md": "# Routing\n\nRoutes are added to the router with add_route.\n",
}


def documents(files: dict) -> list[Document]:
    out = []
    for path, text in files.items():
        n = text.count("\n")
        kind = "docs" if path.endswith(".md") else "code"
        out.append(Document(f"{path}:1-{n}", text, source_path=path, start_line=1, end_line=n,
                            language="markdown" if kind == "docs" else "python", kind=kind))
    return out


@pytest.fixture(scope="module")
def code_index():
    retriever = build_retriever("pi-serini")
    retriever.index(documents(CODE))
    return retriever


def test_a_symbol_query_finds_its_definition_with_the_span_from_the_document(code_index):
    hits = code_index.search_detailed("refresh_token", top_k=3)
    assert hits[0].source_path == "src/auth/tokens.py"
    assert (hits[0].start_line, hits[0].end_line) == (1, 3)
    assert hits[0].docid == "src/auth/tokens.py:1-3"
    assert hits[0].confidence == "high"
    assert (hits[0].language, hits[0].kind) == ("python", "code")  # every hit says both, as lexical's do


def test_a_syntax_chunk_s_label_reaches_its_hit_as_lexical_reports_it():
    # Documents as load_ast_chunk_documents makes them: two chunks of one file, each its own label.
    text = CODE["src/router.py"]
    chunks = [
        Document("src/router.py:1-1", text.splitlines()[0], source_path="src/router.py", start_line=1,
                 end_line=1, context="Router", language="python", kind="code", symbol="Router",
                 chunk_kind="class", scope=(1, 3)),
        Document("src/router.py:2-3", "\n".join(text.splitlines()[1:]), source_path="src/router.py",
                 start_line=2, end_line=3, context="Router.add_route", language="python", kind="code",
                 symbol="add_route", chunk_kind="method", scope=(1, 3)),
    ]
    labels = {}
    for name in ("pi-serini", "lexical"):
        retriever = build_retriever(name)
        retriever.index(chunks)
        hit = retriever.search_detailed("routes handler", top_k=1)[0]
        labels[name] = (hit.docid, hit.context, hit.kind, hit.symbol, hit.scope)
    assert labels["pi-serini"] == ("src/router.py:2-3", "Router.add_route", "method", "add_route", (1, 3))
    assert labels["pi-serini"] == labels["lexical"]


def test_code_terms_split_identifiers_as_lexical_does(code_index):
    # `evict` appears only inside evict_oldest: found because the whitespace-analysed terms carry
    # the identifier's parts, as lexical's do.
    assert code_index.search("evict", top_k=1) == ["src/cache.py:1-3"]


def test_the_ranking_signals_apply_after_lucene(code_index):
    from retrieval.ranking import RankingConfig

    hits = code_index.search_detailed("add_route", top_k=3)
    assert hits[0].source_path == "src/router.py"  # the definition, before its test and its docs
    plain = build_retriever("pi-serini", ranking=RankingConfig().replace(test_penalty=1.0))
    plain.index(documents(CODE))
    penalised = {h.source_path: h.score for h in code_index.search_detailed("router route", 5)}
    unpenalised = {h.source_path: h.score for h in plain.search_detailed("router route", 5)}
    assert penalised["tests/test_router.py"] == pytest.approx(0.6 * unpenalised["tests/test_router.py"])
    assert penalised["src/router.py"] == pytest.approx(unpenalised["src/router.py"])


def test_the_same_ranking_as_lexical_on_the_same_terms(code_index):
    lexical = build_retriever("lexical")
    lexical.index(documents(CODE))
    for query in ("add_route", "how are routes added", "expired token", "LRUCache evict"):
        assert code_index.search(query, 5) == lexical.search(query, 5), query


def test_english_analyzer_stems_and_drops_stop_words():
    retriever = build_retriever("pi-serini", analyzer="english")
    retriever.index(documents(CODE))
    # "expiring" and "tokens" reach "expired" and "token" through Porter stemming.
    assert retriever.search("the expiring tokens", 1) == ["src/auth/tokens.py:1-3"]
    assert retriever.search("the of and", 3) == []


@pytest.mark.parametrize("options", [{"analyzer": "english"}, {"profile": "prose"}])
def test_a_query_of_more_words_than_lucene_s_default_clause_limit_is_answered(options):
    """Anserini's English analyzer makes a clause of each distinct word, and Lucene refused more
    than 1024: a pasted page was "TooManyClauses", which the service took for a damaged index
    (rebuilt, then the same error)."""
    retriever = build_retriever("pi-serini", **options)
    retriever.index(documents(CODE))
    query = " ".join(f"word{i}" for i in range(1100)) + " expiring tokens"
    assert retriever.search(query, 1) == ["src/auth/tokens.py:1-3"]


def test_a_word_after_the_first_thousand_of_a_query_is_searched_as_lexical_searches_it():
    """Lucene's query held the first 1000 of the query's terms (its default limit is 1024
    clauses): a pasted page of words the index does not hold, then the one it does, found nothing
    where lexical found it."""
    from itertools import islice, product
    from string import ascii_lowercase

    unknown = ("q" + "".join(letters) for letters in product(ascii_lowercase, repeat=3))
    query = " ".join(islice(unknown, 1100)) + " evict"
    lexical = build_retriever("lexical")
    lexical.index(documents(CODE))
    retriever = build_retriever("pi-serini")
    retriever.index(documents(CODE))
    assert retriever.search(query, 3) == lexical.search(query, 3) == ["src/cache.py:1-3"]


def test_k1_and_b_reach_lucene():
    docs = [Document("short", "alpha beta"), Document("long", "alpha " + "gamma " * 40)]
    normalised = build_retriever("pi-serini", k1=1.2, b=0.75, profile="prose")
    normalised.index(docs)
    scores = {h.docid: h.score for h in normalised.search_detailed("alpha", 2)}
    assert scores["short"] > scores["long"]
    flat = build_retriever("pi-serini", k1=1.2, b=0.0, profile="prose")
    flat.index(docs)
    scores = {h.docid: h.score for h in flat.search_detailed("alpha", 2)}
    # b = 0: no length normalisation, so equal term frequencies score (nearly: Anserini breaks
    # ties by id, a step of 1e-6) alike.
    assert abs(scores["short"] - scores["long"]) < 1e-4


def test_prose_profile_ranks_as_lexical_prose():
    docs = [Document(f"D{i}", text) for i, text in enumerate([
        "Parsing of algebraic expressions by a recursive descent parser.",
        "A compiler for algebraic languages; parsing and code generation.",
        "Sorting records on magnetic tape with a merge sort.",
        "Storage allocation in a time-sharing system.",
        "The parser generator reads a grammar and writes a parser.",
    ])]
    lucene = build_retriever("pi-serini", profile="prose")
    lucene.index(docs)
    prose = build_retriever("lexical", profile="prose")
    prose.index(docs)
    for query in ("parsing algebraic expressions", "sorting tape", "grammar parser generator"):
        assert lucene.search(query, 5) == prose.search(query, 5), query
    assert lucene.statistics()["documents"] == 5


def test_searching_before_indexing_is_an_error():
    with pytest.raises(RuntimeError, match="index"):
        build_retriever("pi-serini").search("x")


# -- the persistent index ---------------------------------------------------------------------


def lucene_versions(root: Path) -> list[str]:
    rdir = root / ".retrieval" / "pi-serini"
    return sorted(n for n in os.listdir(rdir) if n.startswith("lucene-"))


def test_the_store_updates_only_what_changed_and_keeps_one_version(make_tree, rewrite):
    root = make_tree(CODE)
    first = service.refresh(root, "pi-serini")
    assert first.status == "indexed" and first.files == 5
    assert lucene_versions(root) == ["lucene-000001"]
    hits = service.search(root, "refresh_token", retriever="pi-serini").hits
    assert hits[0].source_path == "src/auth/tokens.py"

    rewrite(root / "src/cache.py", "def rotate_credentials():\n    pass\n")
    (root / "src/auth/tokens.py").unlink()
    second = service.refresh(root, "pi-serini")
    assert second.reprocessed == ["src/cache.py"]
    assert second.removed == ["src/auth/tokens.py"]
    assert lucene_versions(root) == ["lucene-000002"]
    result = service.search(root, "rotate_credentials", retriever="pi-serini")
    assert result.hits[0].source_path == "src/cache.py"
    assert all(h.source_path != "src/auth/tokens.py" for h in service.search(root, "token", retriever="pi-serini").hits)
    assert all(h.source_path != "src/cache.py" for h in service.search(root, "evict oldest", retriever="pi-serini").hits)

    # An update gives the same answers as a clean build of the same tree.
    queries = ("router route", "rotate credentials", "add_route", "evict")
    updated = [[(h.docid, round(h.score, 4)) for h in service.search(root, q, retriever="pi-serini").hits] for q in queries]
    assert service.refresh(root, "pi-serini", force=True).status == "indexed"
    assert lucene_versions(root) == ["lucene-000003"]
    rebuilt = [[(h.docid, round(h.score, 4)) for h in service.search(root, q, retriever="pi-serini").hits] for q in queries]
    assert rebuilt == updated


def test_a_full_disk_while_lucene_writes_is_one_line_and_the_index_stays_as_it_was(make_tree, run, monkeypatch):
    from retrieval.lucene import index as lucene_index
    from retrieval.lucene import jvm

    root = make_tree(CODE)
    assert run("index", "--root", root, "--retriever", "pi-serini").exit_code == 0
    (root / "src/new.py").write_text("def fresh_feature():\n    pass\n")
    jnius = jvm.start()  # not `import jnius`: that would start a JVM without Anserini on its class path
    system = jnius.autoclass("java.lang.System")

    def disk_full(indexer, batch):
        # What Lucene does on ENOSPC: a merge thread prints its stack trace, the writer throws.
        system.err.println('Exception in thread "Lucene Merge Thread #0" java.io.IOException: No space left on device')
        raise jnius.JavaException("JVM exception occurred: java.io.IOException: No space left on device")

    monkeypatch.setattr(lucene_index, "_add", disk_full)
    result = run("index", "--root", root, "--retriever", "pi-serini")
    assert result.exit_code == 1
    # One line: not Java's stack trace, and not "damaged; rebuilding" (a rebuild needs more disk still).
    assert result.stderr.splitlines() == [
        f"error: pi-serini: cannot update the index at {root / '.retrieval'}: No space left on device"]
    assert lucene_versions(root) == ["lucene-000001"]

    monkeypatch.undo()
    assert run("index", "--root", root, "--retriever", "pi-serini").exit_code == 0
    assert service.search(root, "fresh_feature", retriever="pi-serini").hits[0].source_path == "src/new.py"


def test_a_garbled_document_table_is_rebuilt_by_the_next_query(make_tree, run):
    root = make_tree(CODE)
    assert run("index", "--root", root, "--retriever", "pi-serini").exit_code == 0
    (table,) = (root / ".retrieval" / "pi-serini").glob("lucene-*/docs.json")
    table.write_bytes(table.read_bytes()[:10])  # cut short: the version check sees the file, not its size
    result = run("query", "--root", root, "--retriever", "pi-serini", "--json", "refresh_token")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["path"] == "src/auth/tokens.py"
    assert "the pi-serini index is damaged" in result.stderr


def _rewrite_table(root, change, *, checked: bool) -> None:
    """Edit the document table's columns into other valid JSON: keeping its checksum, or in the
    form written before it had one."""
    from retrieval.lucene.index import _read_columns

    (table,) = (root / ".retrieval" / "pi-serini").glob("lucene-*/docs.json")
    columns = _read_columns(str(table.parent))
    change(columns)
    body = json.dumps(columns, separators=(",", ":")).encode()
    data = table.read_bytes()
    at = data.find(b',"columns":') + len(b',"columns":')
    table.write_bytes(data[:at] + body + b"}" if checked else body)


def _swap_first_paths(c):
    c["paths"][0], c["paths"][1] = c["paths"][1], c["paths"][0]


def _answers_around(root, edit):
    """A query's (docid, score) pairs before and after `edit(root)` (read by a fresh open), and
    the notes the second search gave."""
    def answer(**kwargs):
        hits = service.search(root, "token route", retriever="pi-serini", **kwargs).hits
        return [(h.docid, round(h.score, 4)) for h in hits]

    before = answer()
    edit(root)
    service._OPEN.clear()
    notes: list[str] = []
    return before, answer(progress=notes.append), notes


@pytest.mark.parametrize("change, checked", [
    (_swap_first_paths, True),
    (lambda c: c["end"].__setitem__(0, -5), False),
    (lambda c: c["start"].__setitem__(0, "x"), False),
    (lambda c: c["file"].__setitem__(0, 99), False),
    (lambda c: c.__setitem__("id", "x"), False),
], ids=["paths-swapped", "negative-end", "start-a-string", "file-out-of-range", "ids-a-string"])
def test_a_document_table_edited_into_other_files_or_lines_is_rebuilt_not_answered(make_tree, change, checked):
    """The table names each hit's file and lines: edited, hits went to the other file, to line -5,
    or silently vanished (their ids unknown)."""
    before, after, notes = _answers_around(make_tree(CODE), lambda root: _rewrite_table(root, change, checked=checked))
    assert after == before
    assert len(notes) == 1 and "docs.json is damaged" in notes[0] and "rebuilding" in notes[0], notes


def test_a_document_table_written_before_its_checksum_is_read_as_it_was(make_tree):
    before, after, notes = _answers_around(make_tree(CODE), lambda root: _rewrite_table(root, lambda c: None, checked=False))
    assert after == before and notes == []


def test_a_state_edited_to_name_no_lucene_version_is_rebuilt_not_an_empty_answer(make_tree):
    """A state naming no version read as an empty index: no hits, and no word why."""
    def no_version(root):
        manifest = root / ".retrieval" / "pi-serini" / "manifest.json"
        data = json.loads(manifest.read_text())
        data["state"]["index"] = None
        manifest.write_text(json.dumps(data))

    before, after, notes = _answers_around(make_tree(CODE), no_version)
    assert after == before
    assert len(notes) == 1 and "damaged" in notes[0] and "rebuilding" in notes[0], notes


def test_what_java_prints_on_stderr_while_held_is_passed_on_after_success(capfd):
    from retrieval.lucene import jvm

    system = jvm.start().autoclass("java.lang.System")
    with jvm.java_stderr_held():
        system.err.println("a warning worth reading")
    assert "a warning worth reading" in capfd.readouterr().err


def test_an_updated_index_scores_exactly_as_a_clean_build_of_the_same_tree(make_tree, rewrite):
    words = ["token", "refresh", "route", "cache", "parse", "config", "retry", "upload", "session", "handler"]
    files = {f"src/m{i:02d}.py": "".join(f"def f{i}_{j}():\n    return '{words[(i + j) % 10]} {words[(i * j) % 10]}'\n\n"
                                         for j in range(12)) for i in range(60)}
    root = make_tree(files)
    service.refresh(root, "pi-serini")
    for i in (3, 17, 41):
        (root / f"src/m{i:02d}.py").unlink()
    rewrite(root / "src/m05.py", "def moved():\n    return 'token token session'\n")
    assert service.refresh(root, "pi-serini").status == "indexed"
    queries = ("token refresh", "route handler", "session")
    updated = [[(h.docid, h.score) for h in service.search(root, q, retriever="pi-serini").hits] for q in queries]
    service.refresh(root, "pi-serini", force=True)
    rebuilt = [[(h.docid, h.score) for h in service.search(root, q, retriever="pi-serini").hits] for q in queries]
    assert updated == rebuilt  # the deleted documents no longer count in BM25's statistics


def test_an_unfinished_version_is_collected_and_never_replaces_the_live_one(make_tree, touch):
    root = make_tree(CODE)
    service.refresh(root, "pi-serini")
    rdir = root / ".retrieval" / "pi-serini"
    # A writer that died after publishing its version but before committing the manifest.
    (rdir / "lucene-000002").mkdir()
    (rdir / ".tmp-dead").mkdir()
    (rdir / ".tmp-dead.jsonl").write_text('{"id": "x", "contents": "spooled"}\n')  # its spool, a file
    (root / "src/new.py").write_text("def fresh_feature():\n    pass\n")
    service.refresh(root, "pi-serini")
    assert lucene_versions(root) == ["lucene-000002"]
    assert not (rdir / ".tmp-dead").exists() and not (rdir / ".tmp-dead.jsonl").exists()
    assert service.search(root, "fresh_feature", retriever="pi-serini").hits[0].source_path == "src/new.py"


def test_filters_apply_before_ranking(make_tree):
    root = make_tree(CODE)
    hits = service.search(root, "add_route", retriever="pi-serini",
                          filters=service.QueryFilter(kind="docs")).hits
    assert [h.source_path for h in hits] == ["docs/routing.md"]


def test_bm25_option_is_remembered_and_reaches_the_retriever(make_tree, run):
    root = make_tree(CODE)
    result = run("index", "--root", root, "--retriever", "pi-serini", "--bm25", "0.9,0.4")
    assert result.exit_code == 0, result.output
    engine = service.open_index(root, "pi-serini")
    assert (engine.k1, engine.b) == (0.9, 0.4)
    assert run("index", "--root", root, "--bm25", "zero").exit_code == 2


def test_builds_killed_one_after_another_leave_only_the_last_ones_temporary_directory(make_tree):
    """A killed build's unfinished Lucene version (a `.tmp-*` directory) was removed only by a build
    that committed: while each was killed (out of memory, every time), they piled up."""
    import signal
    import time

    root = make_tree(CODE)
    service.refresh(root, "pi-serini")
    rdir = root / ".retrieval" / "pi-serini"

    def temp_dirs() -> set:
        return {p.name for p in rdir.iterdir() if p.name.startswith(".tmp-") and p.is_dir()}

    command = [sys.executable, "-m", "retrieval.cli", "index", "--root", str(root), "--retriever", "pi-serini",
               "--force"]
    for _ in range(3):
        before = temp_dirs()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        try:
            while not temp_dirs() - before:  # killed once its own temporary directory exists
                assert child.poll() is None, "the build finished before it could be killed"
                assert time.monotonic() < deadline
                time.sleep(0.005)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert len(temp_dirs()) == 1, temp_dirs()
    assert service.search(root, "refresh_token", retriever="pi-serini", stale_ok=True).hits
    service.refresh(root, "pi-serini")
    assert not temp_dirs()


def test_a_fresh_process_prints_only_results_and_leaves_java_home_alone(make_tree, tmp_path):
    """Also when the user has the JVM log: its warnings and its log printed to stdout by default
    (`-XX:+UseLargePages` without large pages configured is a warning on every start), and the
    JSON that followed could not be read."""
    root = make_tree(CODE)
    env = dict(os.environ)
    env.pop("JAVA_HOME", None)
    env["RETRIEVAL_INDEX_DIR"] = str(tmp_path / "index")
    env["JAVA_TOOL_OPTIONS"] = "-Xlog:gc -XX:+UseLargePages"
    code = ("import os, runpy, sys; sys.argv = ['retrieval', 'query', '--root', sys.argv[1], '--retriever', "
            "'pi-serini', '--json', 'refresh_token'];\n"
            "try:\n    runpy.run_module('retrieval.cli', run_name='__main__')\n"
            "finally:\n    print('JAVA_HOME' in os.environ, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)  # nothing but the results on stdout: Java's logging went to stderr
    assert payload["results"][0]["path"] == "src/auth/tokens.py"
    assert done.stderr.strip().endswith("False")


@pytest.mark.parametrize("variable, options", [("_JAVA_OPTIONS", "-Xlog:gc"), ("JAVA_TOOL_OPTIONS", "-verbose:gc"),
                                               ("_JAVA_OPTIONS", "-XX:+PrintGCDetails")])
def test_jvm_logging_the_user_asked_for_goes_to_stderr_whichever_way_it_was_asked(make_tree, tmp_path, variable,
                                                                                   options):
    """The JVM applies these after our options that send its logging to stderr: GC lines led and
    split the JSON on stdout."""
    root = make_tree(CODE)
    env = {**os.environ, variable: options, "RETRIEVAL_INDEX_DIR": str(tmp_path / "index"), "RETRIEVAL_NO_SERVER": "1"}
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--retriever",
                           "pi-serini", "--json", "refresh_token"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["path"] == "src/auth/tokens.py"
    assert "[gc" in done.stderr  # what was asked for is still there, where diagnostics go


def test_a_program_using_the_api_keeps_its_stdout_whatever_java_options_the_user_has(make_tree):
    """For the command line, descriptor 1 is pointed at stderr before the JVM starts with the
    user's logging options; a program of the user's found its own prints on stderr after a search."""
    root = make_tree(CODE)
    code = ("import os, retrieval, sys\n"
            "r = retrieval.build_retriever('pi-serini')\n"
            "r.index(retrieval.load_chunk_documents(sys.argv[1]))\n"
            "assert r.search('refresh_token', 1)\n"
            "print('printed', flush=True)\n"
            "os.write(1, b'written\\n')\n")
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-Dretrieval.test=1"}
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "printed\nwritten\n"
    assert "Picked up JAVA_TOOL_OPTIONS" in done.stderr  # the JVM did see them


def test_java_starts_in_a_process_whose_working_directory_was_removed(make_tree, tmp_path):
    """The JVM ended the whole process ("Could not determine current working directory"): no
    exception, no `finally` of the caller's."""
    root = make_tree(CODE)
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, shutil, sys, retrieval\n"
            "shutil.rmtree(os.getcwd())\n"
            "r = retrieval.build_retriever('pi-serini')\n"
            "r.index(retrieval.load_chunk_documents(sys.argv[1]))\n"
            "print(r.search('refresh_token', 1))\n"
            "try:\n    os.getcwd()\nexcept FileNotFoundError:\n    print('back in the removed directory')\n")
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, cwd=gone,
                          env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['src/auth/tokens.py:1-3']\nback in the removed directory\n"


def test_an_in_memory_index_leaves_no_files_once_its_retriever_is_gone(make_tree):
    """Its Lucene files stayed in the temporary directory until the process ended: a program making
    many in-memory indexes filled it (and a killed one left them for good)."""
    import gc

    from retrieval import build_retriever, load_chunk_documents
    from retrieval.retrievers import pyserini

    documents = load_chunk_documents(str(make_tree(CODE)))
    retriever = build_retriever("pi-serini")
    retriever.index(documents)
    first = retriever._scratch
    retriever.index(documents)  # again: the first index's files go at once
    second = retriever._scratch
    assert retriever.search("refresh_token", 1) and not os.path.exists(first) and os.path.isdir(second)
    del retriever
    gc.collect()
    assert not os.path.exists(second) and second not in pyserini._SCRATCH


def _installed_java(newer_than: int) -> str:
    from retrieval.lucene import jvm

    for release in sorted(Path("/usr/lib/jvm").glob("*/release")) + sorted(Path("/opt").glob("*/release")):
        home = str(release.parent)
        if jvm.java_major(home) > newer_than and jvm.has_jvm(home):
            return home
    return ""


def test_a_java_newer_than_lucene_knows_is_used_without_a_word_on_stderr(make_tree, tmp_path):
    """A Java 25 JAVA_HOME printed eight lines of warnings on every query: the incubator module
    added for Lucene (whose 9.9 uses it on Java 21 only), Unsafe's deprecation, and Lucene asking
    to be updated."""
    home = _installed_java(22)
    if not home:
        pytest.skip("no Java 22 or newer installed in /usr/lib/jvm or /opt")
    root = make_tree(CODE)
    env = {**os.environ, "JAVA_HOME": home, "RETRIEVAL_INDEX_DIR": str(tmp_path / "index"), "RETRIEVAL_NO_SERVER": "1"}
    for name in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS"):  # the JVM says it picked them up, on stderr
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--retriever",
                           "pi-serini", "refresh_token"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("src/auth/tokens.py:1-3")
    assert done.stderr == ""


def test_a_root_named_in_unicode_is_indexed_under_the_c_locale(make_tree, tmp_path):
    """The JVM encodes file names in the locale's character set, and Python (UTF-8 mode) does not:
    under LC_ALL=C (a container, cron, ssh without a locale) the index of a root named `café` was
    "unmappable", called damaged, rebuilt, and failed again."""
    root = make_tree({"a.py": "def cafe_order():\n    return 1\n"}, name="café")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LC_", "LANG")) and k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
    env.update(LC_ALL="C", RETRIEVAL_NO_SERVER="1")
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--retriever",
                           "pi-serini", "cafe_order"], capture_output=True, text=True, env=env, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("a.py:1-2")


def test_java_home_older_than_21_falls_back_to_the_bundled_java(monkeypatch, tmp_path):
    from retrieval.lucene import jvm

    old = tmp_path / "jdk17"
    (old / "lib").mkdir(parents=True)
    (old / "release").write_text('JAVA_VERSION="17.0.15"\n')
    monkeypatch.setenv("JAVA_HOME", str(old))
    home, why = jvm.find_java()
    assert why == "" and home == jvm._bundled_home() and jvm.java_major(home) >= 21


def test_java_home_without_a_jvm_library_falls_back_to_the_bundled_java(monkeypatch, tmp_path):
    """A partial copy of a Java 21 (no lib/server/libjvm): the JVM failed to start, the index was
    called damaged and rebuilt, and the error line was blank."""
    from retrieval.lucene import jvm

    partial = tmp_path / "jdk21"
    (partial / "lib").mkdir(parents=True)
    (partial / "release").write_text('JAVA_VERSION="21.0.2"\n')
    monkeypatch.setenv("JAVA_HOME", str(partial))
    home, why = jvm.find_java()
    assert why == "" and home == jvm._bundled_home()


@pytest.mark.parametrize("variable, options, said", [
    ("JAVA_TOOL_OPTIONS", "-javaagent:{tmp}/missing-agent.jar", "missing-agent.jar"),
    ("_JAVA_OPTIONS", "-Xmx1m", "Too small maximum heap"),
])
def test_jvm_options_the_user_set_that_the_jvm_refuses_are_one_error_line(make_tree, tmp_path, variable, options, said):
    """Every JVM reads JAVA_TOOL_OPTIONS and _JAVA_OPTIONS, ours too: one it refused ended the whole
    process as the JVM started, its words on stdout, no `error:` line. Tried first in a `java -version`
    of its own; the JVM in this process never starts."""
    root = make_tree(CODE)
    options = options.format(tmp=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
    env.update({variable: options, "RETRIEVAL_INDEX_DIR": str(tmp_path / "index"), "RETRIEVAL_NO_SERVER": "1"})
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "--root", str(root), "--retriever",
                           "pi-serini", "--json", "refresh_token"], capture_output=True, text=True, env=env, timeout=300)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: the Java at ") and "could not be started: " in done.stderr
    assert said in done.stderr and f"(with {variable}={options})" in done.stderr
    assert "damaged" not in done.stderr


def test_a_java_that_cannot_start_is_one_line_and_no_index_is_called_damaged(make_tree, tmp_path):
    root = make_tree(CODE)
    broken = tmp_path / "jdk21"
    (broken / "lib" / "server").mkdir(parents=True)
    (broken / "release").write_text('JAVA_VERSION="21.0.2"\n')
    (broken / "lib" / "server" / "libjvm.so").write_text("not a library\n")
    env = {**os.environ, "JAVA_HOME": str(broken), "RETRIEVAL_INDEX_DIR": str(tmp_path / "index"),
           "RETRIEVAL_NO_SERVER": "1"}
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "index", "--root", str(root), "--retriever",
                           "pi-serini"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"the Java at {broken} could not be started" in done.stderr
    assert "damaged" not in done.stderr


def test_a_file_ignored_after_indexing_leaves_no_trace_in_the_lucene_files(make_tree):
    secret = "zqpiseriniprivatemarker"
    root = make_tree({"private/keys.py": f"token = '{secret}'\n",
                      **{f"src/m{i}.py": f"def module_{i}():\n    return {i}\n" for i in range(20)}})
    service.refresh(root, "pi-serini")
    rdir = root / ".retrieval" / "pi-serini"

    def stored() -> bytes:
        return b"".join(p.read_bytes() for p in rdir.rglob("*") if p.is_file())

    assert secret.encode() in stored()
    (root / ".gitignore").write_text("private/\n")
    service.refresh(root, "pi-serini")
    # One document deleted out of 21 is below Lucene's own threshold for rewriting a segment.
    assert secret.encode() not in stored()
    assert service.search(root, "module_7", retriever="pi-serini").hits


def test_ctrl_c_and_sigterm_stay_pythons_once_the_jvm_runs():
    """The JVM's own signal handlers ended the process at once on Ctrl-C or SIGTERM: no
    KeyboardInterrupt, no `finally`, no atexit (a build's cleanup, a library user's handlers)."""
    import signal
    import subprocess
    import sys

    child = ("import signal, sys, time\n"
             # Its own Ctrl-C handler, as an interactive Python has: a runner that starts the suite
             # with SIGINT ignored (a background job of a shell without job control) passes that on.
             "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\n"
             "from retrieval import Document, build_retriever\n"
             "r = build_retriever('pi-serini'); r.index([Document('a', 'alpha beta')]); r.search('alpha')\n"
             "try:\n    print('ready', flush=True)\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('interrupted', flush=True); sys.exit(7)\n"
             "finally:\n    print('finally', flush=True)\n")
    for sig, code, said in ((signal.SIGINT, 7, ["interrupted", "finally"]), (signal.SIGTERM, 5, ["finally"])):
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        assert (proc.returncode, out.split()) == (code, said), sig


def test_a_chunk_without_a_term_is_no_document_and_fails_no_build(make_tree, rewrite):
    """Anserini refuses a document of no term (stop words or punctuation only); the build failed
    whole ("Lucene indexed 1 of 3 documents")."""
    root = make_tree({"a.txt": "the and of\n", "c.md": "...\n", "b.txt": "zebras graze\n"})
    report = service.refresh(str(root), "pi-serini")
    assert report.files == 3
    assert [h.source_path for h in service.search(str(root), "zebras", retriever="pi-serini").hits] == ["b.txt"]
    rewrite(root / "a.txt", "zebras sleep\n")
    service.refresh(str(root), "pi-serini")
    assert sorted(h.source_path for h in service.search(str(root), "zebras", retriever="pi-serini").hits) == \
        ["a.txt", "b.txt"]
    retriever = build_retriever("pi-serini")
    retriever.index([Document("1", "zebras graze"), Document("2", "")])
    assert retriever.search("zebras") == ["1"]


def test_a_lucene_file_damaged_where_its_size_does_not_show_is_rebuilt_by_the_query_that_meets_it(make_tree):
    """Bytes changed in the stored fields (`_0.fdt`) fail only when a search reads them: every
    query was a Java traceback, for good, while `status` said ready."""
    files = {f"pkg/mod{i}.py": f"def handler_{i}(request):\n    '''Handle request kind {i}.'''\n    return {i}\n"
             for i in range(30)}
    root = make_tree(files)
    before = [(h.docid, round(h.score, 4)) for h in service.search(str(root), "handle request", retriever="pi-serini",
                                                                     top_k=5).hits]
    (fdt,) = Path(root, ".retrieval", "pi-serini").glob("lucene-*/_0.fdt")
    data = bytearray(fdt.read_bytes())
    for i in range(len(data) // 4, 3 * len(data) // 4):
        data[i] ^= 0x13
    fdt.write_bytes(bytes(data))
    after = service.search(str(root), "handle request", retriever="pi-serini", top_k=5).hits
    assert [(h.docid, round(h.score, 4)) for h in after] == before


def test_a_file_a_report_names_by_its_path_ranks_above_its_namesake_as_in_lexical():
    from retrieval.ranking import RankingConfig

    files = {"src/pkg/session.py": "def merge(self, other):\n    return self.settings\n",
             "src/vendor_like/session.py": "def merge(settings):\n    merge settings merge settings\n",
             **{f"other/unrelated{i}.py": "def unrelated():\n    return 1\n" for i in range(6)}}
    text = ("merge settings fails\n"
            'File "/usr/lib/python3/site-packages/pkg/session.py", line 2, in merge\n'
            + " ".join(f"word{i}" for i in range(40)))
    for boost, first in ((1.0, "src/pkg/session.py"), (0.0, "src/vendor_like/session.py")):
        retriever = build_retriever("pi-serini", ranking=RankingConfig(path_mention_boost=boost))
        retriever.index(documents(files))
        assert retriever.search_detailed(text, 3)[0].source_path == first, boost


def test_a_refreshed_index_releases_the_lucene_snapshot_it_replaced(make_tree):
    """Lucene's memory maps and files live until its readers are closed, not until Python drops
    them: a server refreshing after each edit gained 28 maps of deleted segment files per refresh
    (the kernel allows 65,530)."""
    root = make_tree({"a.py": "def zqalpha():\n    return 1\n"})

    def deleted_maps() -> int:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            return sum(1 for line in fh if str(root) in line and line.rstrip().endswith("(deleted)"))

    first = service.open_index(str(root), "pi-serini")
    for i in range(4):
        (root / "a.py").write_text(f"def zqalpha():\n    return {i + 2}\n")
        engine = service.open_index(str(root), "pi-serini")
        assert [h.source_path for h in engine.search_detailed("zqalpha", 1)] == ["a.py"]
    assert engine is not first and first._searcher is None  # released when replaced
    assert deleted_maps() == 0


def test_a_forked_worker_drops_an_inherited_snapshot_without_calling_into_java(make_tree):
    """An evaluation's process pool forks with pi-serini open: the worker inherits the readers but
    not the JVM's threads, and closing them there (room made in its open-index cache) never returned."""
    import time

    root = make_tree({"a.py": "def zqalpha():\n    return 1\n"})
    engine = service.open_index(str(root), "pi-serini")
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            engine.release()
        finally:
            os._exit(0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
        time.sleep(0.1)
    try:
        assert time.monotonic() < deadline, "the forked worker hung releasing the snapshot"
    finally:
        if time.monotonic() >= deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert [h.source_path for h in engine.search_detailed("zqalpha", 1)] == ["a.py"]  # ours still open


def test_a_root_whose_path_is_not_utf8_gets_one_clear_error_not_a_rebuild_loop(tmp_path, run, monkeypatch):
    """Java takes paths as text: the index under `caf\\xe9/` was called damaged, rebuilt, and failed
    again with a codec's message. Kept elsewhere (RETRIEVAL_INDEX_DIR) it works."""
    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(root)
    with open(os.path.join(root, b"a.py"), "w") as fh:
        fh.write("def cafe_order():\n    return 1\n")
    result = run("index", "--root", os.fsdecode(root), "--retriever", "pi-serini")
    assert result.exit_code == 1 and "damaged" not in result.stderr
    assert "not UTF-8" in result.stderr and "RETRIEVAL_INDEX_DIR" in result.stderr
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    assert run("index", "--root", os.fsdecode(root), "--retriever", "pi-serini").exit_code == 0
    result = run("query", "--root", os.fsdecode(root), "--retriever", "pi-serini", "cafe_order")
    assert result.stdout.startswith("a.py:1-2")


def test_threads_searching_while_another_refreshes_get_the_hits_every_time(make_tree, tmp_path):
    """A host's threads (an agent's parallel tool calls) share the engine the service keeps open, and
    a refresh releases it for the newer snapshot: the Lucene readers were closed under a search in
    flight (a StoreError, after a needless rebuild), a search after that answered no hits, and jnius
    called from threads at once crashed the JVM (SIGSEGV), the host process with it. In a process of
    its own, so that a crash fails this test and not the run."""
    root = make_tree(CODE)
    code = textwrap.dedent("""
        import sys, threading, time
        from retrieval import service
        root, wrong = sys.argv[1], []
        service.refresh(root, "pi-serini")
        stop = time.monotonic() + 8

        def ask():
            while time.monotonic() < stop and not wrong:
                try:
                    hits = service.search(root, "refresh token", retriever="pi-serini", stale_ok=True).hits
                    if not hits or hits[0].source_path != "src/auth/tokens.py":
                        wrong.append([h.docid for h in hits])
                except Exception as exc:
                    wrong.append(repr(exc))

        threads = [threading.Thread(target=ask) for _ in range(3)]
        for t in threads:
            t.start()
        i = 0
        while time.monotonic() < stop and not wrong:
            i += 1
            with open(root + "/src/cache.py", "a") as fh:
                fh.write(f"\\ndef grow_{i}():\\n    return {i}\\n")
            service.refresh(root, "pi-serini")
        for t in threads:
            t.join(60)
        print(wrong[:3] if wrong else "ok", i)
    """)
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path)  # where a crashing JVM writes its report
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.split()[0] == "ok", done.stdout


def test_a_file_marked_generated_ranks_below_the_code_it_mocks_as_lexical_ranks_it(make_tree):
    """By its header or by .gitattributes, in the store and through the in-memory API: a mock
    that repeats the interface's words outranked the implementation until its mark was read."""
    import retrieval
    from test_generated import MOCKGEN, POSTGRES, QUERY, _mock

    root = make_tree({"store/postgres.go": POSTGRES, "mocks/store_mock.go": _mock("")})

    def ranked(name):
        return [h.source_path for h in service.search(root, QUERY, retriever=name, top_k=2).hits]

    assert ranked("pi-serini") == ranked("lexical") == ["mocks/store_mock.go", "store/postgres.go"]
    (root / "mocks/store_mock.go").write_text(_mock(MOCKGEN))
    assert ranked("pi-serini") == ranked("lexical") == ["store/postgres.go", "mocks/store_mock.go"]
    (root / "mocks/store_mock.go").write_text(_mock(""))
    (root / ".gitattributes").write_text("mocks/** linguist-generated\n")
    assert ranked("pi-serini") == ranked("lexical") == ["store/postgres.go", "mocks/store_mock.go"]

    (root / ".gitattributes").unlink()
    (root / "mocks/store_mock.go").write_text(_mock(MOCKGEN))
    retriever = build_retriever("pi-serini")
    retriever.index(retrieval.load_chunk_documents(str(root)))
    assert [h.source_path for h in retriever.search_detailed(QUERY, 2)] == ["store/postgres.go", "mocks/store_mock.go"]
