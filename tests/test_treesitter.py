"""The `treesitter` retriever: AST chunks through the service, the store, the CLI and status."""
from __future__ import annotations

import json
import os
import time

import pytest

from conftest import dedent

pytestmark = pytest.mark.extra("treesitter")

ROUTER = dedent(
    '''
    """Routing."""
    import re


    class Router:
        """Keeps the routes of an application."""

        def __init__(self):
            self.routes = []

        def add_route(self, path, endpoint):
            """Register an endpoint for a path pattern, compiled once."""
            pattern = re.compile(path)
            self.routes.append((pattern, endpoint))
            return pattern

        def match(self, path):
            for pattern, endpoint in self.routes:
                if pattern.match(path):
                    return endpoint
            return None
    '''
)

FILES = {
    "app/routing.py": ROUTER,
    "app/util.py": "def slugify(text):\n    return text.lower().replace(' ', '-')\n",
    "docs/guide.md": "# Guide\n\n## Routing\n\nRoutes are matched in order.\n",
    "notes.txt": "plain notes about nothing in particular\n",
}


@pytest.fixture
def repo(make_tree):
    return make_tree(FILES, name="ts")


def test_the_registry_builds_it_as_a_lexical_retriever_over_ast_chunks():
    from retrieval import build_retriever
    from retrieval.retrievers.lexical import LexicalRetriever

    retriever = build_retriever("treesitter")
    assert isinstance(retriever, LexicalRetriever)
    assert retriever.fingerprint()["chunker"] == "ast"


def test_in_memory_hits_report_scope_kind_symbol_and_language(repo):
    from retrieval import build_retriever, load_ast_chunk_documents

    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(repo), policy=_small()))
    hit = retriever.search_detailed("add_route", top_k=1)[0]
    assert hit.source_path == "app/routing.py"
    assert (hit.context, hit.kind, hit.symbol, hit.language) == ("Router.add_route", "method", "add_route", "python")


@pytest.mark.parametrize("duplicate", ["deepcopy", "pickle"])
def test_a_copied_or_pickled_retriever_answers_as_the_original(repo, duplicate):
    import copy
    import pickle

    from retrieval import build_retriever, load_ast_chunk_documents

    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(repo), policy=_small()))
    twin = copy.deepcopy(retriever) if duplicate == "deepcopy" else pickle.loads(pickle.dumps(retriever))
    assert twin.search_detailed("add_route", top_k=3) == retriever.search_detailed("add_route", top_k=3)


def _small():
    from retrieval.chunking import ChunkingPolicy

    return ChunkingPolicy(code=200)


def test_the_scope_path_is_indexed_with_the_text(repo):
    from retrieval import build_retriever, load_ast_chunk_documents

    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(repo), policy=_small()))
    # `Router` appears in the method's breadcrumb, not in its text
    hits = retriever.search_detailed("Router match", top_k=3)
    assert any(h.symbol == "match" and "Router" not in _lines(repo, h) for h in hits)


def _lines(root, hit):
    text = (root / hit.source_path).read_text()
    return "".join(text.splitlines(keepends=True)[hit.start_line - 1 : hit.end_line])


def test_definitions_come_from_the_tree_and_feed_the_definition_signal(repo):
    from retrieval.lexical.features import DEF, chunk_terms, def_term

    counts = chunk_terms("app/util.py", "slugify = 1\n", definitions=("make_slug",))
    assert counts[def_term("make_slug")] == 1 and def_term("slugify") not in counts
    assert DEF + "slugify" in chunk_terms("app/util.py", "slugify = 1\n")  # no tree: the patterns


def test_cli_index_query_json_expand_scope_and_status(run, repo, rewrite):
    result = run("index", "--root", repo, "--retriever", "treesitter")
    assert result.exit_code == 0, result.output
    result = run("query", "--root", repo, "--retriever", "treesitter", "add_route", "--json", "-k", "1")
    hit = json.loads(result.output)["results"][0]
    assert hit["path"] == "app/routing.py"
    assert hit["language"] == "python"
    assert hit["symbol"] == "add_route" or hit["context"].startswith("Router")
    # --expand scope widens the snippet to the enclosing scope when the hit has one
    result = run("query", "--root", repo, "--retriever", "treesitter", "Routes are matched in order", "--json",
                 "--expand", "scope", "--kind", "docs")
    doc_hit = json.loads(result.output)["results"][0]
    # the small sections merged into one chunk, labelled by the heading its words are under
    assert doc_hit["context"] == "Guide > Routing" and doc_hit["kind"] == "section"
    assert doc_hit["snippet"].startswith("# Guide")  # no wider scope: the hit itself
    result = run("status", "--root", repo, "--json")
    row = [r for r in json.loads(result.output)["retrievers"] if r["retriever"] == "treesitter"][0]
    assert row["chunking"]["python"] == "ast" and row["chunking"]["markdown"] == "headings"
    assert row["chunking"]["text"] == "lines"
    text = run("status", "--root", repo).output
    assert "chunking: " in text and "python ast" in text


def test_an_extensionless_script_is_parsed_as_the_language_its_first_line_names(run, make_tree):
    body = "".join(f"    step_{i} = prepare({i})\n" for i in range(60))
    source = f"#!/usr/bin/env python3\nimport sys\n\n\ndef rotate_signing_keys(vault):\n{body}    return vault\n"
    root = make_tree({"bin/rotate": source, "lib/other.py": "def unrelated():\n    pass\n"})
    result = run("query", "--root", root, "--retriever", "treesitter", "rotate_signing_keys", "--json", "-k", "1")
    hit = json.loads(result.output)["results"][0]
    assert (hit["path"], hit["language"], hit["symbol"], hit["start_line"]) == ("bin/rotate", "python",
                                                                               "rotate_signing_keys", 5)


def _engine(lines: int) -> str:
    """A class whose first method is `lines` lines long and whose last, `stop`, is short."""
    body = "".join(f"        value_{i} = compute_something({i}, 'an argument')\n" for i in range(lines))
    return f"class Engine:\n    def start(self):\n{body}        return 1\n\n    def stop(self):\n        pass\n"


def test_expand_scope_gives_the_enclosing_class(run, make_tree):
    source = _engine(80)
    root = make_tree({"engine.py": source})
    result = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "scope", "-k", "1")
    hit = json.loads(result.output)["results"][0]
    assert hit["symbol"] == "stop" and hit["context"] == "Engine.stop"
    assert hit["snippet_start"] == 1 and hit["snippet_end"] == source.count("\n")
    result = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "2", "-k", "1")
    hit = json.loads(result.output)["results"][0]
    assert hit["snippet_start"] == hit["start_line"] - 2


def test_expand_scope_over_treesitter_hits_without_a_scope_does_not_send_the_user_to_treesitter(run, make_tree):
    root = make_tree({"engine.py": _engine(3), "guide.md": "# Guide\n\nStop the engine before leaving.\n"})
    for retriever in ("treesitter", "all"):
        assert run("index", "--root", root, "--retriever", "treesitter").exit_code == 0
        result = run("query", "--root", root, "--retriever", retriever, "stop the engine", "--json", "--expand",
                     "scope", "--kind", "docs")
        assert result.exit_code == 0 and json.loads(result.stdout)["results"], result.stderr
        assert "--expand scope" not in result.stderr, retriever  # it asked treesitter already


def test_expand_scope_with_snippet_lines_shows_the_lines_of_the_scope_around_the_hit(run, make_tree):
    """The first N lines of a long class never showed a method near its end."""
    source = _engine(80)
    root = make_tree({"engine.py": source})
    result = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "scope",
                 "--snippet-lines", "10", "-k", "1")
    hit = json.loads(result.output)["results"][0]
    assert hit["context"] == "Engine.stop"
    assert hit["snippet_end"] - hit["snippet_start"] == 9
    assert hit["snippet_start"] <= hit["start_line"] <= hit["end_line"] <= hit["snippet_end"]


def test_the_long_scope_note_counts_only_the_hits_a_token_budget_keeps(run, make_tree):
    """`--expand scope --max-tokens` read up to 100 hits, kept one and said "13 scope(s) longer than 200
    lines": the count was of hits the budget then left out."""
    root = make_tree({f"engine{i}.py": _engine(300) for i in range(3)})
    result = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "scope",
                 "--max-tokens", "2500")
    assert len(json.loads(result.stdout)["results"]) == 1
    assert "note: 1 scope longer than 200 lines" in result.stderr


def test_expand_scope_with_fewer_snippet_lines_than_the_hit_shows_its_lines_holding_the_query(run, make_tree):
    """Centred on a long hit, five lines of `--expand scope --snippet-lines 5` showed its opening,
    none of the query's words; without `scope` the same five lines hold them."""
    body = "".join(f"        step_{i} = self.state + {i}\n" for i in range(30))
    source = (_engine(40) + "\n    def run(self):\n" + body
              + "        followed = redirect_target(step_0)\n        return followed\n")
    root = make_tree({"engine.py": source})
    shown = {}
    for extra in ((), ("--expand", "scope")):
        result = run("query", "--root", root, "--retriever", "treesitter", "redirect", "target", "followed",
                     "--json", "--snippet-lines", "5", "-k", "1", *extra)
        hit = json.loads(result.stdout)["results"][0]
        shown[extra] = hit["snippet"]
    assert "redirect_target" in shown[()] and shown[("--expand", "scope")] == shown[()]


def test_expand_scope_shows_at_most_200_lines_of_a_long_scope_around_the_hit_unless_told(run, make_tree):
    """A namespace or module can be a whole file: serde's `mod content` printed 92,217 characters."""
    source = _engine(300)
    root = make_tree({"engine.py": source})
    result = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "scope", "-k", "1")
    hit = json.loads(result.stdout)["results"][0]
    assert hit["context"] == "Engine.stop"
    assert hit["snippet_end"] - hit["snippet_start"] + 1 == 200
    assert hit["snippet_start"] <= hit["start_line"] <= hit["end_line"] <= hit["snippet_end"]
    assert "1 scope longer than 200 lines" in result.stderr
    told = run("query", "--root", root, "--retriever", "treesitter", "stop", "--json", "--expand", "scope",
               "--snippet-lines", "1000", "-k", "1")
    hit = json.loads(told.stdout)["results"][0]
    assert (hit["snippet_start"], hit["snippet_end"]) == (1, source.count("\n"))
    assert "scope(s)" not in told.stderr


def test_refresh_is_incremental_and_the_store_keeps_chunk_metadata(repo, rewrite):
    from retrieval import service

    first = service.refresh(str(repo), "treesitter")
    assert first.status == "indexed"
    rewrite(repo / "app/util.py", "def make_slug(text):\n    return text.lower()\n")
    second = service.refresh(str(repo), "treesitter")
    assert second.reprocessed == ["app/util.py"]
    hits = service.search(str(repo), "make_slug", retriever="treesitter", top_k=1).hits
    assert hits[0].source_path == "app/util.py" and hits[0].symbol == "make_slug" and hits[0].kind == "function"


def test_a_scope_changed_in_the_store_is_damage_the_query_repairs_not_a_breadcrumb_it_shows(repo, copy_tree):
    """A hit reads its own metadata row: a renamed scope there was shown in silence."""
    from retrieval import service

    expected = [(h.docid, h.context, h.symbol) for h in service.search(
        copy_tree(repo), "add_route", retriever="treesitter", top_k=3).hits]
    service.refresh(str(repo), "treesitter")
    store = repo / ".retrieval" / "treesitter"
    (meta,) = store.glob("seg-*/meta.bin")
    assert b"Router" in meta.read_bytes()
    meta.write_bytes(meta.read_bytes().replace(b"Router", b"Rooter"))
    service._OPEN.clear()  # a new process
    said = []
    got = service.search(str(repo), "add_route", retriever="treesitter", top_k=3, progress=said.append).hits
    assert [(h.docid, h.context, h.symbol) for h in got] == expected
    assert any("damaged" in line for line in said)


def test_a_file_that_fails_to_parse_is_listed_as_line_chunked(repo, monkeypatch):
    from retrieval import service
    from retrieval.chunking import parsing

    real = parsing.parser_for

    def flaky(grammar):
        if grammar == "python":
            raise ValueError("simulated parser failure")
        return real(grammar)

    monkeypatch.setattr(parsing, "parser_for", flaky)
    service.refresh(str(repo), "treesitter")
    row = [r for r in service.status(str(repo)) if r["retriever"] == "treesitter"][0]
    assert row["chunking"]["python"] == "lines"
    assert row["chunking"]["markdown"] == "headings"


def test_chunk_metadata_survives_segment_merges(repo, rewrite, monkeypatch):
    from retrieval import service
    from retrieval.lexical import index

    monkeypatch.setattr(index, "MAX_SEGMENTS", 1)  # every refresh merges what it can
    service.refresh(str(repo), "treesitter")
    for n in range(3):
        rewrite(repo / "app/util.py", f"def make_slug_{n}(text):\n    return text.lower()\n")
        service.refresh(str(repo), "treesitter")
    hit = service.search(str(repo), "add_route", retriever="treesitter", top_k=1).hits[0]
    assert hit.context.startswith("Router") and hit.language == "python"
    hit = service.search(str(repo), "make_slug_2", retriever="treesitter", top_k=1).hits[0]
    assert hit.symbol == "make_slug_2"


def test_a_qualified_name_finds_that_class_s_method_before_the_class_or_a_namesake(make_tree):
    from retrieval import build_retriever, load_ast_chunk_documents

    # As in fastapi: the class header talks about its methods, and another class has a method of the
    # same name. `Router.add_route` asks for one place: the method whose scope path is that name.
    header = dedent(
        '''
        class Router:
            """A Router groups routes. Router.add_route registers one; Router
            add_route also compiles it; see Router for add_route details."""

            prefix = "/"
            routes = ()
        '''
    )
    method = "\n".join(f"    # step {i}: compile, store, return" for i in range(12))
    files = {
        "app/router.py": header + "\n    def add_route(self, path):\n" + method + "\n        return path\n",
        "app/application.py": "class Application:\n    def add_route(self, path):\n        return path\n",
    }
    for n in range(6):  # enough other files that every term is informative
        files[f"app/other{n}.py"] = f"def helper{n}(value):\n    return value + {n}\n"
    root = make_tree(files)
    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(root), policy=_small()))
    for query in ("Router.add_route", "Router::add_route", "Router#add_route"):
        hit = retriever.search_detailed(query, top_k=3)[0]
        assert (hit.source_path, hit.context, hit.kind) == ("app/router.py", "Router.add_route", "method"), query
    # Without a qualifier the name alone decides: both definitions before the class header. The
    # whole of the small Application is one chunk, labelled the class; the hit names the method the
    # query asked for.
    hits = retriever.search_detailed("add_route", top_k=2)
    assert {(h.source_path, h.context, h.kind) for h in hits} == {
        ("app/router.py", "Router.add_route", "method"), ("app/application.py", "Application.add_route", "method")}
    assert retriever.search_detailed("Application", top_k=1)[0].context == "Application"



def test_a_qualified_name_in_its_exact_case_prefers_that_spelling_over_a_case_twin(make_tree):
    """Go's exported `Handle` and unexported `handle` are two methods of one type."""
    from retrieval import build_retriever, load_ast_chunk_documents

    body = "\n".join(f"\t// step {i}: as RouterGroup Handle does, join the path and register" for i in range(10))
    files = {
        # the lower-case twin comes first in the file and holds the query's words more often
        "routergroup.go": ("package gin\n\ntype RouterGroup struct{ base string }\n\n"
                           "func (group *RouterGroup) handle(method, path string) {\n" + body + "\n\t// handle Handle handle\n}\n\n"
                           "func (group *RouterGroup) Handle(method, path string) {\n\tgroup.handle(method, path)\n}\n"),
    }
    for n in range(6):
        files[f"other{n}.go"] = f"package gin\n\nfunc helper{n}(v int) int {{\n\treturn v + {n}\n}}\n"
    root = make_tree(files)
    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(root), policy=_small()))
    # The twin gets no scope boost (boosted, it came first): the exact spelling leads.
    top = [h.symbol for h in retriever.search_detailed("RouterGroup.Handle", top_k=3)]
    assert top[0] == "Handle" and top[1] == "handle"
    assert retriever.search_detailed("RouterGroup.handle", top_k=1)[0].symbol == "handle"
    # A spelling that matches neither exactly still finds both by their scope.
    assert {h.symbol for h in retriever.search_detailed("routergroup.HANDLE", top_k=2)} == {"handle", "Handle"}


def test_a_symbol_query_naming_one_of_a_merged_chunk_s_definitions_is_told_that_one(run, make_tree):
    """gin's small Context methods are merged into one chunk, labelled by the longest (JSONP):
    `Context.JSON` found that chunk first but said `Context.JSONP`. The hit keeps the chunk's span
    and names the definition asked for, from the store as from memory; other queries see the label."""
    def method(name, lines):
        return f"func (c *Context) {name}(code int, obj any) {{\n" + "".join(
            f"\tc.Render(code, render.{name}{{Data: obj, Step: {i}}})\n" for i in range(lines)) + "}\n\n"

    files = {
        "context.go": "package gin\n\n" + method("JSONP", 6) + method("JSON", 2) + method("AsciiJSON", 2),
        # a namesake elsewhere: `Context.JSON` is not this one, `JSON` may be either
        "errors.go": "package gin\n\nfunc (a errorMsgs) JSON() any {\n\treturn a.Last()\n}\n",
    }
    for n in range(6):
        files[f"other{n}.go"] = f"package gin\n\nfunc helper{n}(v int) int {{\n\treturn v + {n}\n}}\n"
    root = make_tree(files)
    assert run("index", "--root", root, "--retriever", "treesitter").exit_code == 0

    def first(query):
        out = run("query", "--root", root, "--retriever", "treesitter", "--json", "-k", "1", query)
        assert out.exit_code == 0, out.output
        (hit,) = json.loads(out.output)["results"]
        return hit["path"], hit["start_line"], hit["context"], hit["symbol"], hit["kind"]

    merged = first("Context.JSONP")
    assert merged[0] == "context.go" and merged[2:] == ("Context.JSONP", "JSONP", "method")
    assert first("Context.JSON") == (*merged[:2], "Context.JSON", "JSON", "method")
    assert first("context.asciijson") == (*merged[:2], "Context.AsciiJSON", "AsciiJSON", "method")
    assert first("AsciiJSON") == (*merged[:2], "Context.AsciiJSON", "AsciiJSON", "method")
    # Letter case decides when the query has some (serde's trait `Serialize` is no `serialize`).
    assert first("ASCIIJSON") == (*merged[:2], "Context.JSONP", "JSONP", "method")
    assert first("render the obj with code")[2:] == ("Context.JSONP", "JSONP", "method")  # words: the label
    assert first("errorMsgs.JSON")[:1] == ("errors.go",)


def test_a_question_in_the_words_of_one_of_a_packed_chunk_s_definitions_is_told_that_one(run, make_tree):
    """sinatra's small `halt`, `pass` and `forward` are one chunk, labelled by the longest
    (`forward`): a question about passing control to the next route found it and said `forward`,
    where an agent looked for the answer in vain. The hit names the definition whose lines hold the
    question's words (the span stays the chunk's); a file changed since indexing keeps the label it
    was indexed with, as its lines may have moved."""
    base = ("import os\n\n\n# Exit the current block, halting any further processing.\ndef halt():\n"
            "    throw('halt')\n\n# Pass control to the next matching route.\ndef pass_():\n    throw('pass')\n\n"
            "def forward(app):\n    status = app.call(os.environ)\n    app.status = status\n"
            "    app.body = status.body\n    app.headers.update(status.headers)\n    return None\n")
    files = {"base.py": base}
    for n in range(6):
        files[f"other{n}.py"] = f"def helper{n}(value):\n    return value + {n}\n"
    root = make_tree(files)
    assert run("index", "--root", root, "--retriever", "treesitter").exit_code == 0

    def first(query, *options):
        out = run("query", "--root", root, "--retriever", "treesitter", "--json", "-k", "1", *options, query)
        assert out.exit_code == 0, out.output
        (hit,) = json.loads(out.stdout)["results"]
        return hit["path"], hit["start_line"], hit["end_line"], hit["context"], hit["symbol"], hit["kind"]

    assert first("how is the status of the app call copied") == ("base.py", 1, 17, "forward", "forward", "function")
    assert first("pass control to the next matching route") == ("base.py", 1, 17, "pass_", "pass_", "function")
    assert first("where is further processing halted")[3:] == ("halt", "halt", "function")
    (root / "base.py").write_text("# moved down a line\n" + base)
    assert first("pass control to the next matching route", "--stale-ok")[3:] == ("forward", "forward", "function")
    assert first("pass control to the next matching route")[1:] == (1, 18, "pass_", "pass_", "function")


def test_a_consolidated_hit_of_a_packed_chunk_is_told_the_definition_its_question_s_words_are_in(
        run, make_tree, monkeypatch):
    """`--retriever all` kept the index's label: the chunk's definitions did not reach its hits."""
    from retrieval import multi

    base = ("import os\n\n\n# Exit the current block, halting any further processing.\ndef halt():\n"
            "    throw('halt')\n\n# Pass control to the next matching route.\ndef pass_():\n    throw('pass')\n\n"
            "def forward(app):\n    status = app.call(os.environ)\n    app.status = status\n"
            "    app.body = status.body\n    app.headers.update(status.headers)\n    return None\n")
    root = make_tree({"base.py": base, **{f"other{n}.py": f"def helper{n}(value):\n    return value + {n}\n"
                                          for n in range(6)}})
    monkeypatch.setattr(multi, "participants", lambda root: (["lexical", "treesitter"], []))
    out = run("query", "--root", root, "--retriever", "all", "--json", "-k", "1",
              "pass control to the next matching route")
    assert out.exit_code == 0, out.output
    (hit,) = json.loads(out.stdout)["results"]
    assert (hit["path"], hit["context"], hit["symbol"]) == ("base.py", "pass_", "pass_")
    assert "treesitter" in hit["provenance"]


def test_a_question_in_the_words_of_a_method_of_a_whole_class_chunk_is_told_that_method(run, repo):
    """A small class is one chunk, labelled the class; a question about one of its methods is told
    that method (the span stays the class's), one about the class itself the class, and a query
    naming the class too."""
    assert run("index", "--root", repo, "--retriever", "treesitter").exit_code == 0

    def first(query):
        out = run("query", "--root", repo, "--retriever", "treesitter", "--json", "-k", "1", query)
        (hit,) = json.loads(out.output)["results"]
        return hit["path"], hit["start_line"], hit["end_line"], hit["context"], hit["kind"]

    whole = first("Router")
    assert whole[0] == "app/routing.py" and whole[3:] == ("Router", "class")
    assert first("register an endpoint for a path pattern") == (*whole[:3], "Router.add_route", "method")
    assert first("keeps the routes of an application") == whole


def test_a_language_whose_definitions_the_tree_tables_miss_keeps_the_patterns_definitions(run, make_tree):
    """Julia's grammar shares `function_definition` with the tables but names its structs and
    short functions otherwise: the tree alone found no definition where the patterns find each,
    so a definition-name query ranked the caller first."""
    from retrieval.chunking.ast import chunk_source

    geometry = ("module Geometry\n\nstruct BoundingBox\n    xmin::Float64\n    xmax::Float64\nend\n\n"
                "function expand(b::BoundingBox, margin)\n    BoundingBox(b.xmin - margin, b.xmax + margin)\nend\n\nend\n")
    tiles = ("using .Geometry: BoundingBox, expand\n\n# a query box is expanded before the lookup\n"
             "function visible_tiles(tiles, view)\n    box = expand(view, 0.5)\n"
             "    [t for t in tiles if t.bbox == box]\nend\n")
    assert all(c.definitions is None for c in chunk_source(geometry, "geometry.jl", language="julia"))
    assert chunk_source(ROUTER, "routing.py", language="python")[0].definitions is not None
    root = make_tree({"src/geometry.jl": geometry, "src/tiles.jl": tiles})
    for name in ("expand", "BoundingBox"):
        payload = json.loads(run("query", "--root", root, "--retriever", "treesitter", name, "--json").stdout)
        assert payload["results"][0]["path"] == "src/geometry.jl", name


def test_status_says_per_language_how_many_files_fell_back_without_running_into_the_next_language():
    from retrieval.chunking.grammars import chunking_by_language

    files = {"path": ["a.vue", "b.vue", "c.clj", "d.md"], "language": ["vue", "vue", "clojure", "markdown"],
             "chunks": [3, 2, 1, 4]}
    assert chunking_by_language(files, ["b.vue", "c.clj"]) == {
        "vue": "ast (1 of 2 files by lines)", "clojure": "lines", "markdown": "headings"}


@pytest.mark.parametrize("retriever", ["lexical", "treesitter"])
def test_a_name_with_overloads_is_answered_by_its_implementation(run, make_tree, retriever):
    """huggingface_hub's `hf_hub_download`: its `@overload` declarations defined the name as the
    implementation does, and the last of them was its first hit."""
    params = "".join(f"    option_{i}: Optional[str] = None,\n" for i in range(20))
    overload = f"@overload\ndef download(\n    repo_id: str,\n    dry_run: Literal[True],\n{params}) -> DryRun: ...\n\n\n"
    body = "".join(f"    value_{i} = resolve(option_{i}, repo_id)\n" for i in range(14))
    implementation = (f"def download(\n    repo_id: str,\n    dry_run: bool = False,\n{params}):\n"
                      f'    """Fetch a file of a repository into the cache."""\n{body}    return value_0\n')
    files = {"hub/file_download.py": "from typing import Literal, Optional, overload\n\n\n"
             + overload * 3 + implementation}
    files.update({f"hub/m{n}.py": f"def helper_{n}(repo_id):\n    return download(repo_id)\n" for n in range(4)})
    root = make_tree(files)
    out = run("query", "--root", root, "--retriever", retriever, "--json", "-k", "1", "download")
    assert out.exit_code == 0, out.output
    (hit,) = json.loads(out.output)["results"]
    start = files["hub/file_download.py"].count("\n", 0, files["hub/file_download.py"].index(implementation)) + 1
    assert hit["path"] == "hub/file_download.py" and hit["start_line"] <= start <= hit["end_line"], hit


def test_a_module_level_chunk_shows_its_module_label_but_is_not_found_by_it(make_tree):
    """The label of code outside any definition (`module pkg.settings`) restates the path words every
    chunk of the file is indexed with already, and its word `module` would match every such chunk of
    every file: a query's `module` finds the code that says it."""
    from retrieval import build_retriever, load_ast_chunk_documents

    root = make_tree({"pkg/settings.py": "import os\nimport sys\n\nVALUE = os.sep + sys.prefix\n",
                      "pkg/loader.py": "def reload_module(name):\n    \"\"\"Reload a module by its name.\"\"\"\n"
                                       "    return name\n"}, name="labels")
    retriever = build_retriever("treesitter")
    retriever.index(load_ast_chunk_documents(str(root), policy=_small()))
    assert [h.source_path for h in retriever.search_detailed("module", top_k=5)] == ["pkg/loader.py"]
    hit = retriever.search_detailed("VALUE prefix", top_k=1)[0]
    assert (hit.source_path, hit.context) == ("pkg/settings.py", "module pkg.settings")


def test_a_consolidated_hit_from_an_index_older_than_its_file_says_stale_though_another_index_is_current(
        run, make_tree, rewrite, monkeypatch):
    """Its file's record came from the first participant (lexical, refreshed), so the old lines
    treesitter found were shown from the file as it is now, as current."""
    from retrieval import multi

    body = "def rebuild_auth(request):\n    # strip the authorization header on redirect\n    return request\n"
    root = make_tree({"auth.py": body, "other.py": "def unrelated():\n    return 1\n"})
    for name in ("lexical", "treesitter"):
        assert run("index", "--root", root, "--retriever", name).exit_code == 0
    rewrite(root / "auth.py", "# padding\n" * 40 + body)
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0  # treesitter's is stale now
    monkeypatch.setattr(multi, "participants", lambda root: (["lexical", "treesitter"], []))
    result = run("query", "--root", root, "--retriever", "all", "--stale-ok", "--json", "--snippet-lines", "3",
                 "rebuild auth redirect")
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)["results"][0]
    assert "treesitter" in top["provenance"] and top.get("stale") is True  # its lines 1-3 are the old version's
    assert "changed since indexing (auth.py)" in result.stderr


def test_threads_chunking_at_once_get_the_chunks_one_thread_gets(make_tree, tmp_path):
    """The parser of a grammar is shared, and its read callback lets another thread in mid-parse: a
    host's threads chunking at once crashed the process (segmentation fault). In a process of its
    own, so that a crash fails this test and not the run."""
    import subprocess
    import sys

    files = {f"pkg/m{i}.py": "".join(f"class Handler{i}_{j}:\n    def handle(self, request):\n"
                                     f"        return request.route_{j}()\n\n" for j in range(30))
             for i in range(20)}
    root = make_tree(files)
    code = dedent("""
        import sys, threading
        from retrieval import load_ast_chunk_documents
        root, wrong = sys.argv[1], []
        sys.setswitchinterval(1e-5)
        alone = load_ast_chunk_documents(root)

        def chunk():
            for _ in range(3):
                if load_ast_chunk_documents(root) != alone:
                    wrong.append(1)

        threads = [threading.Thread(target=chunk) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        print("wrong" if wrong else "ok", len(alone))
    """)
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "ok", done.stdout


# -- a build big enough for worker processes (64 files) chunks there ------------------------------

def _worker_tree(make_tree, name: str = "big"):
    """90 Python modules, a guide, an empty file, a binary one and two JavaScript files: a build
    of it starts worker processes (RETRIEVAL_JOBS=2)."""
    from test_service import module_text

    files = {f"pkg/mod_{i}.py": module_text(i) for i in range(90)}
    files.update({"docs/guide.md": "# Guide\n\n## Handlers\n\nEvery handler renders a response.\n",
                  "pkg/empty.py": "", "pkg/blob.bin.py": b"\x00\x01\x02binary\x00",
                  "web/widget.js": "function renderWidget(total) {\n  return total + 1;\n}\n",
                  "web/panel.js": "class Panel {\n  render() { return 'panel'; }\n}\n"})
    return make_tree(files, name=name)


def _chunking_recorded(monkeypatch, tmp_path, action=None):
    """Record the process that chunks each file (a line `pid path` in a file: a worker's memory is
    its own); `action(path)` runs in a worker process before it chunks `path`. The path of the file."""
    from retrieval.retrievers import treesitter

    log = tmp_path / "chunked-by"
    real, here = treesitter.chunk_source, os.getpid()

    def recording(text, path, **kwargs):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {path}\n")
        if action is not None and os.getpid() != here:
            action(path)
        return real(text, path, **kwargs)

    monkeypatch.setattr(treesitter, "chunk_source", recording)
    return log


def _chunkers(log) -> set[int]:
    pids = {int(line.split()[0]) for line in log.read_text().splitlines()} if log.exists() else set()
    log.unlink(missing_ok=True)
    return pids


def _store_files(index_dir) -> dict:
    """{path under the index directory: bytes}, the manifest without the fields that say when."""
    out = {}
    for path in sorted(index_dir.rglob("*")):
        if path.is_file() and path.name != "lock":
            data = path.read_bytes()
            if path.name == "manifest.json":
                manifest = json.loads(data)
                for when in ("created", "updated", "checked_ns"):
                    manifest.pop(when, None)
                data = json.dumps(manifest, sort_keys=True).encode()
            out[str(path.relative_to(index_dir))] = data
    return out


def test_a_build_big_enough_for_workers_chunks_there_and_stores_what_a_build_in_this_process_does(
        make_tree, tmp_path, monkeypatch):
    """Chunk counts, empty and skipped files, and the files that fell back to line chunks (one
    whose tree the parser gave up on, a language whose grammar is missing) come back from the
    workers: the store, the report and `status` are those of a build without workers."""
    from retrieval import freshness, parallel, service
    from retrieval.chunking import ast, parsing

    root = _worker_tree(make_tree)
    # Both builds must find the tree's stamps settled (see discover.walk_record): a build within
    # the racy margin of the tree's creation records an unsettled walk, one byte longer.
    time.sleep(freshness.FINE_MARGIN_NS / 1e9 + 0.02)
    real_parse, real_parser = ast.parse, parsing.parser_for

    def gives_up_on_mod_3(grammar, source, allowance=None):
        return None if b"handler_3(" in source else real_parse(grammar, source, allowance)

    def no_javascript(grammar):
        if grammar == "javascript":
            raise LookupError("simulated missing grammar")
        return real_parser(grammar)

    monkeypatch.setattr(ast, "parse", gives_up_on_mod_3)
    monkeypatch.setattr(parsing, "parser_for", no_javascript)
    log = _chunking_recorded(monkeypatch, tmp_path)
    built = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv(parallel.ENV_JOBS, jobs)
        monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / f"jobs-{jobs}"))
        report = service.refresh(str(root), "treesitter")
        row = [r for r in service.status(str(root)) if r["retriever"] == "treesitter"][0]
        for when in ("created", "updated"):
            row.pop(when)
        built[jobs] = (_chunkers(log), (report.files, report.chunks, report.new_chunks, report.empty,
                                        report.skipped), row, _store_files(tmp_path / f"jobs-{jobs}"))
    assert built["1"][0] == {os.getpid()}
    assert built["2"][0] and os.getpid() not in built["2"][0]
    assert built["2"][1:] == built["1"][1:]
    files, chunks, _, empty, skipped = built["2"][1]
    assert (files, empty, skipped) == (93, 1, {"binary": 1}) and chunks >= files
    chunking = built["2"][2]["chunking"]
    assert chunking["python"] == "ast (1 of 90 files by lines)"
    assert chunking["javascript"] == "lines" and chunking["markdown"] == "headings"


def test_a_tree_the_chunker_mishandles_in_a_worker_is_reported_in_this_process(make_tree, tmp_path, monkeypatch):
    """The test suite fails on any such tree (conftest): a worker's list of them was its own."""
    from retrieval import parallel, service
    from retrieval.chunking import ast

    root = _worker_tree(make_tree)
    real = ast._annotate

    def fails_on_mod_7(spans, defs, path, *args, **kwargs):
        if path == "pkg/mod_7.py":
            raise IndexError("simulated chunker bug")
        return real(spans, defs, path, *args, **kwargs)

    monkeypatch.setattr(ast, "_annotate", fails_on_mod_7)
    log = _chunking_recorded(monkeypatch, tmp_path)
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    service.refresh(str(root), "treesitter")
    assert os.getpid() not in _chunkers(log)
    mishandled = list(ast.MISHANDLED)
    ast.MISHANDLED.clear()
    assert mishandled == ["pkg/mod_7.py: IndexError: simulated chunker bug"]
    row = [r for r in service.status(str(root)) if r["retriever"] == "treesitter"][0]
    assert row["chunking"]["python"] == "ast (1 of 90 files by lines)"


def _built_then_all_touched(make_tree, monkeypatch):
    """The tree indexed without workers, then every file changed: (root, its hits before)."""
    from retrieval import parallel, service

    root = _worker_tree(make_tree)
    monkeypatch.setenv(parallel.ENV_JOBS, "1")
    service.refresh(str(root), "treesitter")
    before = service.search(str(root), "handler_50", retriever="treesitter", top_k=5).hits
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    for path in (root / "pkg").glob("mod_*.py"):
        path.write_text(path.read_text() + "\n# touched\n")
    return root, before


def test_a_worker_killed_while_chunking_fails_the_build_as_a_lost_worker_and_keeps_the_index(
        make_tree, tmp_path, monkeypatch):
    import multiprocessing
    import signal

    from retrieval import parallel, service
    from test_service import assert_same_hits

    root, before = _built_then_all_touched(make_tree, monkeypatch)

    def killed_on_mod_50(path):
        if path == "pkg/mod_50.py":
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer, or a grammar's crash, would

    log = _chunking_recorded(monkeypatch, tmp_path, killed_on_mod_50)
    said = []
    with pytest.raises(parallel.WorkerLost):
        service.refresh(str(root), "treesitter", progress=said.append)
    assert os.getpid() not in _chunkers(log)
    assert not any("damaged" in line for line in said)
    assert multiprocessing.active_children() == []
    got = service.search(str(root), "handler_50", retriever="treesitter", top_k=5, stale_ok=True)
    assert_same_hits(got.hits, before)
    monkeypatch.undo()  # workers that live
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    assert service.refresh(str(root), "treesitter").status == "indexed"


def test_a_worker_hung_while_chunking_is_ended_with_the_build_when_it_is_interrupted(make_tree, tmp_path, monkeypatch):
    """Ctrl-C on a build waiting for a worker that ignores SIGTERM and never finishes: the build
    stops, the worker is killed, and the writer lock is free for the next build."""
    import multiprocessing
    import signal
    import threading
    import time

    from retrieval import parallel, service

    root, _ = _built_then_all_touched(make_tree, monkeypatch)
    hung = tmp_path / "hung"

    def hangs_on_mod_5(path):
        if path == "pkg/mod_5.py":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            hung.touch()
            time.sleep(3600)

    log = _chunking_recorded(monkeypatch, tmp_path, hangs_on_mod_5)
    finished = threading.Event()

    def interrupt_once_hung():
        while not finished.is_set() and not hung.exists():
            time.sleep(0.05)
        if not finished.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    watcher = threading.Thread(target=interrupt_once_hung, daemon=True)
    watcher.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            service.refresh(str(root), "treesitter")
    finally:
        finished.set()
        signal.signal(signal.SIGINT, previous)
    assert hung.exists() and os.getpid() not in _chunkers(log)
    assert time.monotonic() - started < 60
    assert multiprocessing.active_children() == []
    monkeypatch.undo()
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    assert service.refresh(str(root), "treesitter", lock_timeout=5).status == "indexed"


def test_in_all_a_span_only_line_chunks_found_is_labelled_by_the_syntax_chunk_it_overlaps_most(repo, rewrite):
    """`--retriever all` hits that lexical or pi-serini alone found (line chunks) had no label: a
    quarter of gin's. They take the treesitter chunk's, when treesitter indexed that version."""
    from retrieval import service
    from retrieval.multi import _indexed, _labelled_by_syntax
    from retrieval.records import SearchHit

    service.refresh(str(repo), "lexical")
    service.refresh(str(repo), "treesitter")
    engines = {name: service.open_index(str(repo), name) for name in ("lexical", "treesitter")}
    found = SearchHit("app/routing.py:11-16", "app/routing.py", 11, 16, 1, 1.0, kind="code", language="python",
                      extra={"provenance": ["lexical"]})
    (hit,) = _labelled_by_syntax(str(repo), engines, [found], _indexed(str(repo), engines, [found]))
    syntax = engines["treesitter"].chunk_labels(["app/routing.py"])["app/routing.py"]
    best = max(syntax, key=lambda row: min(16, row[1]) - max(11, row[0]))
    assert (hit.context, hit.symbol, hit.kind) == (best[2], best[4], best[3]) and hit.symbol
    assert (hit.source_path, hit.start_line, hit.end_line, hit.score) == ("app/routing.py", 11, 16, 1.0)  # as found
    # Indexed by treesitter from another version of the file: no label from it.
    rewrite(repo / "app" / "routing.py", ROUTER.replace("compiled once", "compiled at once"))
    service.refresh(str(repo), "lexical")
    engines["lexical"] = service.open_index(str(repo), "lexical")
    (kept,) = _labelled_by_syntax(str(repo), engines, [found], _indexed(str(repo), {"lexical": engines["lexical"]},
                                                                           [found]))
    assert (kept.context, kept.symbol) == ("", "")
