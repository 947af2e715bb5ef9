"""Every RankingConfig setting that no other test switches: its effect, and that switching it off
(or changing it) removes that effect."""
from __future__ import annotations

from retrieval.query import plan_query
from retrieval.ranking import RankingConfig

from test_query import report
from test_ranking import FILLER, doc, ranked_paths


def test_evidence_chunks_caps_how_much_a_hub_file_gains_from_many_weak_chunks():
    strong = [doc("a.py", "render template render template\n", start=s) for s in (1, 11)]
    hub = [doc("hub.py", "render template\n" + "other words here\n" * 8, start=i * 100 + 1) for i in range(12)]
    docs = FILLER + strong + hub
    assert ranked_paths(docs, "render template")[0] == "a.py"
    assert ranked_paths(docs, "render template", evidence_chunks=0)[0] == "hub.py"  # 0: every chunk counts


def test_diversify_puts_each_file_once_before_any_second_chunk():
    hub = [doc("hub.py", "parse token parse token parse token\n", start=i * 10 + 1) for i in range(5)]
    docs = hub + [doc("other.py", "parse token\n")]
    assert ranked_paths(docs, "parse token")[:2] == ["hub.py", "other.py"]
    assert ranked_paths(docs, "parse token", diversify=False)[:5] == ["hub.py"] * 5


def test_a_pasted_report_sees_its_best_files_further_chunks_before_weaker_files():
    """A report is about the code to change, most often in its best file: that file's further chunks
    compete at their own score instead of waiting behind every other file's best. A short question's
    at half their score (below)."""
    hub = [doc("src/session.py", "def merge_settings(session):\n    merge settings session\n", start=1),
           doc("src/session.py", "merge settings session\n" + "x = 1\n" * 6, start=11),
           doc("src/session.py", "merge settings\n" + "x = 1\n" * 6, start=21)]
    weak = [doc(f"src/m{i}.py", "drops headers\n" + "y = 2\n" * 6) for i in range(3)]
    docs = FILLER + hub + weak
    text = report("merge settings drops the session headers", "session merge settings")
    assert ranked_paths(docs, text)[:4] == ["src/session.py"] * 3 + ["src/m0.py"]
    assert ranked_paths(docs, text, long_query_repeat_discount=0.0)[:3] == ["src/session.py", "src/m0.py", "src/m1.py"]
    assert ranked_paths(docs, "merge settings drops session", repeat_discount=0.0)[:3] == [
        "src/session.py", "src/m0.py", "src/m1.py"]


def test_a_pasted_reports_best_file_lends_its_further_chunks_a_share_of_its_score():
    """A report's best file is most often the one to change, and the lines to change may sit in a
    chunk that matched less than another file's best: lifted a quarter of the way to its file's
    score, that chunk comes before the other file, which still comes after the best file as it did.
    A question's ranking is left alone."""
    unrelated = [doc(f"lib/u{i}.py", f"def unrelated_{i}():\n    return {i}\n") for i in range(40)]
    best = [doc("src/session.py", "def merge_settings(session):\n    merge settings session headers\n", start=1),
            doc("src/session.py", "merge settings session\n" + "x = 1\n" * 6, start=11),
            doc("src/session.py", "merge settings\n" + "x = 1\n" * 6, start=21),
            doc("src/session.py", "merge session\n" + "x = 1\n" * 6, start=31)]
    other = [doc("src/adapters.py", "merge settings session headers drops\n" + "y = 2\n" * 6)]
    docs = FILLER + unrelated + best + other
    text = report("merge settings drops the session headers", "session merge settings headers")
    assert ranked_paths(docs, text)[:5] == ["src/session.py"] * 4 + ["src/adapters.py"]
    assert ranked_paths(docs, text, long_query_file_share=0.0)[:5] == ["src/session.py"] * 3 + [
        "src/adapters.py", "src/session.py"]
    question = "merge settings drops the session headers"
    assert ranked_paths(docs, question) == ranked_paths(docs, question, long_query_file_share=0.0)


def test_a_questions_best_file_shows_a_much_stronger_further_chunk_before_files_that_barely_match():
    """A big file's second chunk scoring several times what the other files' best chunks do waited
    behind all of them: in a small repository of long files the answer fell out of the first ten.
    It now competes at half its score; a second chunk only as strong as the others still follows."""
    big = [doc("src/core.py", "def invoke(ctx):\n    invoke command context\n", start=1),
           doc("src/core.py", "invoke command context callback\n" + "x = 1\n" * 4, start=21),
           doc("src/core.py", "callback\n" + "x = 1\n" * 4, start=41)]
    weak = [doc(f"src/m{i}.py", "callback\n" + "y = 2\n" * 30) for i in range(3)]
    docs = FILLER + big + weak
    query = "invoke the command context callback"
    assert ranked_paths(docs, query)[:2] == ["src/core.py", "src/core.py"]
    assert ranked_paths(docs, query, repeat_discount=0.0)[:4] == ["src/core.py", "src/m0.py", "src/m1.py", "src/m2.py"]
    assert ranked_paths(docs, query)[2:5] == ["src/m0.py", "src/m1.py", "src/m2.py"]  # the weak third chunk waits


def test_example_files_rank_below_source_unless_switched_off():
    body = "def render_page(view):\n    return view.render_page()\n"
    docs = FILLER + [doc("examples/demo.py", body + "render_page(view)\n"), doc("src/views.py", body)]
    assert ranked_paths(docs, "render page") == ["src/views.py", "examples/demo.py"]
    assert ranked_paths(docs, "render page example")[0] == "examples/demo.py"
    assert ranked_paths(docs, "render page", example_penalty=1.0)[0] == "examples/demo.py"


def test_prose_ranks_below_source_unless_switched_off():
    docs = FILLER + [doc("guide.md", "render the page: render page view\n", kind="docs"),
                     doc("src/views.py", "def render_page(view):\n    pass\n")]
    assert ranked_paths(docs, "render page") == ["src/views.py", "guide.md"]
    assert ranked_paths(docs, "render page", docs_penalty=1.0)[0] == "guide.md"


def test_candidates_is_how_deep_the_signals_look_into_the_first_stage():
    many = [doc(f"src/m{i}.py", "session cookie session cookie\n") for i in range(12)]
    named = doc("src/session.py", "cookie\n" + "x\n" * 10)  # weak in BM25, lifted by its file name
    docs = FILLER + many + [named]
    assert ranked_paths(docs, "session cookie")[0] == "src/session.py"
    assert "src/session.py" not in ranked_paths(docs, "session cookie", candidates=10)


def test_long_query_damping_logs_repeated_words_and_ignores_mentions_of_tests():
    text = report("cache eviction is wrong", "array " * 30 + "see the tests")
    damped = plan_query(text, RankingConfig())
    raw = plan_query(text, RankingConfig(long_query_damping=False))
    assert damped.weights["array"] < 5 and raw.weights["array"] == 30
    assert damped.asked == frozenset() and "tests" in raw.asked


def test_long_query_code_weight_adds_to_words_a_report_writes_as_code():
    text = report("crash in `frobnicate_widget`", "it fails when called twice")
    weighted = plan_query(text, RankingConfig()).weights["frobnicate_widget"]
    plain = plan_query(text, RankingConfig(long_query_code_weight=0.0)).weights["frobnicate_widget"]
    assert weighted == plain + RankingConfig().long_query_code_weight


def test_long_query_min_idf_drops_words_most_files_have():
    common = [doc(f"lib/common{i}.py", "value = compute(value)\n") for i in range(8)]
    docs = FILLER + common + [doc("src/frob.py", "def frobnicate(x):\n    return x\n")]
    text = report("frobnicate the value", "value " * 5)
    assert ranked_paths(docs, text) == ["src/frob.py"]
    assert "lib/common0.py" in ranked_paths(docs, text, long_query_min_idf=0.0)


def test_a_long_query_whose_every_word_is_that_common_still_searches_for_them():
    """With every word skipped the answer was empty, and its note said no file held a word of it."""
    docs = [doc(f"lib/handler{i}.py", f"def process_request_{i}(handler):\n    process request handler\n")
            for i in range(8)]
    text = report("process request handler", "process the request handler " * 5)
    assert len(ranked_paths(docs, text)) == 8
    # A rarer word among them is still all that is searched for.
    rare = docs + [doc("src/frob.py", "def frobnicate(x):\n    return x\n")]
    assert ranked_paths(rare, report("frobnicate the request handler", "process the request handler " * 5)) == ["src/frob.py"]


def test_a_page_and_its_translations_are_one_result():
    page = "Dependencies are resolved before the path operation runs: resolve dependencies\n"
    docs = FILLER + [doc(f"docs/{lang}/tutorial/dependencies.md", page, kind="docs")
                     for lang in ("en", "ja", "es", "zh-hant", "pt_BR")]
    docs += [doc("docs/en/tutorial/other.md", "dependencies are resolved once\n", kind="docs"),
             doc("src/resolve.py", "def solve_dependencies(operation):\n    pass\n")]
    paths = ranked_paths(docs, "how are dependencies resolved for a path operation")
    assert len([p for p in paths[:3] if p.endswith("tutorial/dependencies.md")]) == 1
    assert {"docs/en/tutorial/other.md", "src/resolve.py"} <= set(paths[:3])
    switched = ranked_paths(docs, "how are dependencies resolved for a path operation", one_page_per_translation=False)
    assert len([p for p in switched[:3] if p.endswith("tutorial/dependencies.md")]) == 3


def test_a_page_whose_translation_scores_higher_is_shown_in_english_at_the_translation_s_place():
    english = ("Dependencies are resolved before the path operation runs, then cached for the request, so that each "
               "one runs once and its value is shared by every dependant of the request that asks for it again later.\n")
    # Shorter, and stemmed alike (resolver -> resolv): the Spanish copy outscores the original.
    spanish = "Dependencias resueltas: resolved dependencies, path operation.\n"
    docs = FILLER + [doc("docs/en/docs/tutorial/dependencies.md", english, kind="docs"),
                     doc("docs/es/docs/tutorial/dependencies.md", spanish, kind="docs")]
    query = "dependencies resolved path operation"
    assert ranked_paths(docs, query, one_page_per_translation=False)[0] == "docs/es/docs/tutorial/dependencies.md"
    assert ranked_paths(docs, query)[:2] == ["docs/en/docs/tutorial/dependencies.md", "docs/es/docs/tutorial/dependencies.md"]


def test_a_message_catalog_in_thirty_languages_is_one_result():
    """Thirty locale files holding the same `login.form` labels filled ranks 2-10 under the form."""
    form = doc("web/LoginForm.vue", "<form @submit.prevent=\"onSubmit\">\n<script>\nfunction onSubmit(login) {}\n")
    catalog = '{"login": {"form": {"submit": "Log in", "title": "Login form"}}}\n'
    langs = ("en", "fr", "de", "es", "it", "ja", "ko", "pt-BR", "zh_Hans", "ru", "nl", "sv")
    others = [doc(f"web/api/{name}.js", f"export function {name}(form) {{ return login(form) }}\n")
              for name in ("session", "token", "signup", "audit")]
    docs = FILLER + [form] + others
    docs += [doc(f"web/locales/{lang}.json", catalog, kind="config", language="json") for lang in langs]
    paths = ranked_paths(docs, "login form submit")
    # One copy of the catalog among the files; the others after every file's best chunk.
    assert len([p for p in paths[:6] if p.startswith("web/locales/")]) == 1
    assert {"web/LoginForm.vue"} | {o.source_path for o in others} <= set(paths[:6])
    # Files named by other two-letter words are no catalog (`db.json` beside `io.json`), nor are two
    # files named by codes alone (`ca.yaml` beside `ml.yaml`: a certificate authority, a model).
    docs = FILLER + [doc(f"conf/{name}.json", catalog, kind="config", language="json") for name in ("db", "ui", "js")]
    assert len([p for p in ranked_paths(docs, "login form submit")[:3] if p.startswith("conf/")]) == 3
    docs = FILLER + others + [doc(f"conf/{name}.yaml", catalog, kind="config", language="yaml") for name in ("ca", "ml")]
    assert len([p for p in ranked_paths(docs, "login form submit")[:2] if p.startswith("conf/")]) == 2
    langs3 = [doc(f"conf/{name}.yaml", catalog, kind="config", language="yaml") for name in ("ca", "ml", "fr")]
    assert len([p for p in ranked_paths(FILLER + others + langs3, "login form submit")[:3] if p.startswith("conf/")]) == 1


def test_two_letter_code_directories_are_not_translations():
    # only prose is collapsed: `io/` and `os/` code files with one name stay two results
    body = "def read_buffer(size):\n    return size\n"
    docs = FILLER + [doc("src/io/buffer.py", body), doc("src/os/buffer.py", body)]
    assert ranked_paths(docs, "read buffer")[:2] == ["src/io/buffer.py", "src/os/buffer.py"]


def test_scope_boost_puts_the_chunk_whose_scope_path_is_the_qualified_name_first():
    from retrieval.records import Document
    from retrieval.retrievers.lexical import LexicalRetriever

    def scoped(path, text, start, context):
        end = start + text.count("\n")
        return Document(docid=f"{path}:{start}-{end}", text=text, source_path=path, start_line=start,
                        end_line=end, context=context)

    header = "class Router:\n    # Router.add_route registers; Router add_route compiles; Router add_route\n"
    method = "    def add_route(self, path):\n" + "        step()\n" * 12
    docs = FILLER + [scoped("app/router.py", header, 1, "Router"),
                     scoped("app/router.py", method, 3, "Router.add_route"),
                     scoped("app/app.py", "    def add_route(self, path):\n        pass\n", 1, "Application.add_route")]

    def first(**config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index(docs)
        return retriever.search_detailed("Router.add_route", 3)[0].context

    assert first() == "Router.add_route"
    # Exact spellings of the query's names point there too (since every name has one); without
    # them, the scope boost alone is what puts the method first.
    assert first(exact_definition_weight=0.0) == "Router.add_route"
    assert first(scope_boost=1.0, exact_definition_weight=0.0) != "Router.add_route"


def ranked_spans(docs, query, **config):
    from retrieval.retrievers.lexical import LexicalRetriever

    retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
    retriever.index(docs)
    return [(h.source_path, h.start_line) for h in retriever.search_detailed(query, 10)]


def _two_invokes():
    """Two methods of one file that raise alike: only a frame's line or function tells them apart."""
    group = doc("app/core.py", "class Group:\n    def dispatch(self, ctx):\n        return ctx.invoke(callback)\n"
                + "        raise UsageError(message)\n" * 3, start=1)
    command = doc("app/core.py", "class Command:\n    def invoke(self, ctx):\n        return ctx.invoke(callback)\n"
                  "        raise UsageError(message)\n" + "        pass\n" * 3, start=101)
    return FILLER + [group, command]


def test_a_pasted_frames_line_picks_the_chunk_it_went_through():
    docs = _two_invokes()
    frame = 'File "/usr/lib/python3.11/site-packages/app/core.py", line 104, in helper\n    raise UsageError(message)'
    assert ranked_spans(docs, frame)[0] == ("app/core.py", 101)
    assert ranked_spans(docs, frame, frame_boost=0.0)[0] == ("app/core.py", 1)
    # Other languages' `path:line` does the same; a line of a file the index does not hold, nothing.
    assert ranked_spans(docs, "UsageError: raise message\n    at run (app/core.py:103:9)")[0] == ("app/core.py", 101)
    assert ranked_spans(docs, 'File "lib/other.py", line 104\n    raise UsageError(message)')[0] == ("app/core.py", 1)


def test_a_pasted_frames_function_picks_its_definition_when_the_line_has_moved():
    docs = _two_invokes()
    frame = 'File "/srv/app/core.py", line 9000, in invoke\n    raise UsageError(message)'  # an older copy's line
    assert ranked_spans(docs, frame)[0] == ("app/core.py", 101)
    assert ranked_spans(docs, frame, frame_boost=0.0)[0] == ("app/core.py", 1)
    # Moved into another function's lines (code added above): that chunk, holding few of the query's
    # words, is not lifted to the definition's score (click's `get_short_help_str` came above `make_context`).
    helper = doc("app/core.py", "def short_help(self):\n    return self.help\n", start=1)
    frame = 'File "/srv/app/core.py", line 2, in invoke\n    raise UsageError(message)'
    assert ranked_spans(FILLER + [helper, docs[-1]], frame)[0] == ("app/core.py", 101)


def test_a_frames_line_inside_its_function_outranks_a_namesake_defined_elsewhere_in_the_file():
    """Both chunks define `invoke`; one holds the frame's line too: both signs at once are surer."""
    body = "    def invoke(self, ctx):\n        return ctx.invoke(callback)\n        raise UsageError(message)\n"
    group = doc("app/core.py", "class Group:\n" + body, start=1)
    command = doc("app/core.py", "class Command:\n" + body + "        pass\n" * 3, start=101)  # (longer: lower BM25)
    frame = 'File "/srv/app/core.py", line 104, in invoke\n    raise UsageError(message)'
    assert ranked_spans(FILLER + [group, command], frame)[0] == ("app/core.py", 101)
    assert ranked_spans(FILLER + [group, command], frame, frame_boost=0.0)[0] == ("app/core.py", 1)
    # However more of the query's words the namesake holds (a short method saying it all three times).
    wordy = doc("app/core.py", "class Group:\n" + body + "        raise UsageError(message)\n" * 3, start=1)
    assert ranked_spans(FILLER + [wordy, command], frame)[0] == ("app/core.py", 101)


def test_the_chunk_holding_a_named_line_is_found_though_it_holds_no_word_of_the_query():
    """`engine.go:2002`: a project's many chunks saying `engine` and `go` filled the candidates, the
    line's chunk holding neither; it comes first, above its file's best chunk."""
    chunks = [doc(f"lib/engine_{n}.go", "// the engine: go engine go\nfunc part() {}\n") for n in range(400)]
    head = doc("app/engine.go", "// Package app: the engine\npackage app\n")
    line = doc("app/engine.go", "func addRoute(method, path string) {\n    tree.insert(path)\n}\n", start=2001)
    docs = FILLER + chunks + [head, line]
    assert ranked_spans(docs, "engine.go:2002")[0] == ("app/engine.go", 2001)
    assert ranked_spans(docs, "undefined: fooBar\n./engine.go:2002:9")[0] == ("app/engine.go", 2001)
    assert ("app/engine.go", 2001) not in ranked_spans(docs, "engine.go:2002", frame_boost=0.0)


def test_a_frames_line_deep_inside_a_long_function_is_found_though_its_chunk_defines_nothing():
    """gin's `getValue` frame at line 520, 100 lines into the function: the chunk holding it defines
    nothing, and was not brought in when only a definer could be (lexical, treesitter alike)."""
    chunks = [doc(f"app/core_{n}/handler.py", "# the request handler: request handler request\ndef part():\n    pass\n")
              for n in range(400)]  # (their paths hold the frame's words too)
    head = doc("app/core.py", "def long_handler(request):\n    state = prepare(request)\n", start=101)
    middle = doc("app/core.py", "    for item in state.items:\n        item.flush()\n", start=150)
    frame = 'File "/srv/app/core.py", line 151, in long_handler\nKeyError: request handler'
    assert ("app/core.py", 150) in ranked_spans(FILLER + chunks + [head, middle], frame)[:2]  # (its head beside it)


def test_a_frames_line_in_a_chunk_scoped_to_its_function_comes_before_the_functions_head():
    """A syntax-aware chunk of a long function's body (`Command.main`, lines 1432-1449) holds the
    frame's line: it is the frame's as surely as a chunk holding both, and came after the function's
    head on the tie. A chunk without a scope (line chunks), or scoped to another function, holding
    the line is where the line has moved to: left at the tie, below the head."""
    from retrieval.records import Document

    def chunk(text, start, context="", scope=None):
        end = start + text.count("\n") - 1
        return Document(docid=f"app/core.py:{start}-{end}", text=text, source_path="app/core.py",
                        start_line=start, end_line=end, context=context, scope=scope)

    head = chunk("def long_handler(request):\n    handler = prepare(request)  # the request handler\n", 101,
                 "long_handler", (101, 151))
    frame = 'File "/srv/app/core.py", line 151, in long_handler\nKeyError: request handler'
    body = "    for item in state.items:\n        item.flush()\n"
    assert ranked_spans(FILLER + [head, chunk(body, 150, "long_handler", (101, 151))], frame)[:2] == \
        [("app/core.py", 150), ("app/core.py", 101)]
    assert ranked_spans(FILLER + [head, chunk(body, 150, "Worker.long_handler", (101, 151))], frame)[0] == \
        ("app/core.py", 150)
    # Moved: a line chunk, one scoped to another function, or one whose context is prose written for
    # it (lexical+ctx: `... as asked by long_handler`, its last word no scope).
    for moved in (chunk(body, 150), chunk("def rotate_logs():\n" + body, 149, "rotate_logs", (149, 151)),
                  chunk(body, 150, "in def rotate_logs()\ndoc: Rotate the logs, as asked by long_handler")):
        assert ranked_spans(FILLER + [head, moved], frame)[0] == ("app/core.py", 101)


def test_stack_frames_are_read_from_the_ways_tracebacks_print_them():
    from retrieval.ranking import frame_mentions

    text = ('Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/click/core.py", line 1414, '
            'in invoke\n  File "<stdin>", line 1, in <module>\n'
            "    at Object.run (C:\\app\\src\\main.js:12:5)\n  src/lib.rs:10:5\n  (Foo.java:123)\nsee ratio 16:9 and v1.2:3")
    assert frame_mentions(text) == (("usr/lib/python3/site-packages/click/core.py", 1414, "invoke", 0),
                                    ("app/src/main.js", 12, "run", 0), ("src/lib.rs", 10, "", 0), ("Foo.java", 123, "", 0))
    assert frame_mentions("x" * 50_000 + ":1") == ()  # one long word: no quadratic search


def test_the_frame_that_raised_outranks_its_callers_in_either_order_traces_print():
    """Every frame's chunk was lifted alike, so a caller could come before the function that
    raised (an ASan trace's `ltrimCommand` above the `lpDeleteRange` that overflowed)."""
    docs = _two_invokes()  # `dispatch` at lines 1-7, `invoke` at 101-107, in app/core.py
    python = ('Traceback (most recent call last):\n  File "/srv/app/core.py", line 3, in dispatch\n'
              '  File "/srv/app/core.py", line 103, in invoke\nUsageError: message\n')
    pytest = "app/core.py:3: in dispatch\n    return ctx.invoke(callback)\napp/core.py:103: in invoke\nE   UsageError\n"
    for trace in (python, pytest):
        assert ranked_spans(docs, trace + "raise UsageError(message)")[0] == ("app/core.py", 101), trace
    # A C trace prints the innermost frame first
    c_docs = FILLER + [doc("src/list.c", "int drop_range(list *l, int a) {\n    check(l, a);\n    return fail(l);\n"
                           + "    return fail(l);\n" * 3 + "}\n", start=1),
                       doc("src/list.c", "int trim_range(list *l, int a) {\n    check(l, a);\n    return fail(l);\n"
                           + "    return 0;\n" * 3 + "}\n", start=101)]
    asan = "    #0 0x55d in trim_range /srv/src/list.c:103\n    #1 0x55e in drop_range /srv/src/list.c:3\n"
    assert ranked_spans(c_docs, asan + "check fail")[0] == ("src/list.c", 101)
    swapped = "    #0 0x55d in drop_range /srv/src/list.c:3\n    #1 0x55e in trim_range /srv/src/list.c:103\n"
    assert ranked_spans(c_docs, swapped + "check fail")[0] == ("src/list.c", 1)


def test_a_node_frame_in_a_packages_build_names_the_function_of_its_typescript_source():
    """trpc: `at callProcedure (.../dist/unstable-core-do-not-import/router.mjs:198:15)` named no
    indexed file (builds are not indexed), and `callProcedure` in `src/.../router.ts` came fifth.
    The build's line says nothing of the source's: the function does."""
    from retrieval.ranking import frame_spots, paths_by_name

    names = paths_by_name(["packages/server/src/unstable-core-do-not-import/router.ts", "packages/server/src/index.ts"])
    frames = (("app/node_modules/@trpc/server/dist/index.mjs", 10, "", 0),  # anonymous: names nothing there
              ("app/node_modules/@trpc/server/dist/unstable-core-do-not-import/router.mjs", 198, "callProcedure", 0),
              ("app/node_modules/@trpc/server/dist/vendor.min.js", 3, "x", 0))
    assert frame_spots(frames, names) == {"packages/server/src/unstable-core-do-not-import/router.ts":
                                          [(0, "callProcedure", 0)]}


def test_each_trace_of_a_chained_report_has_its_own_innermost_frame():
    """`Caused by:` starts the trace of the root cause: counted after the wrapper's frames, its
    innermost frame was weighed less than the wrapper's callers."""
    from retrieval.ranking import frame_mentions

    docs = FILLER + [doc("src/Inner.java", "class Inner {\n  void check(int a) {\n    stop(a);\n  }\n}\n"),
                     doc("src/Main.java", "class Main {\n  void main(int a) {\n    fail(a);\n  }\n}\n"),
                     doc("src/Outer.java", "class Outer {\n  void run(int a) {\n    wrap(a);\n  }\n}\n")]
    chain = ("java.lang.RuntimeException: wrap\n\tat com.x.Outer.run(Outer.java:3)\n\tat com.x.Main.main(Main.java:3)\n"
             "Caused by: java.lang.IllegalStateException: fail\n\tat com.x.Inner.check(Inner.java:3)\n"
             "\tat com.x.Outer.run(Outer.java:3)\n")
    assert [f[3] for f in frame_mentions(chain)] == [0, 0, 1, 1]
    assert ranked_spans(docs, chain + "fail")[1] == ("src/Inner.java", 1)  # beside Outer.run, before Main.main
    python = ('Traceback (most recent call last):\n  File "a/x.py", line 3, in f\nKeyError: 1\n\n'
              "During handling of the above exception, another exception occurred:\n\n"
              'Traceback (most recent call last):\n  File "a/z.py", line 5, in h\n  File "a/w.py", line 7, in k\nValueError\n')
    assert frame_mentions(python) == (("a/w.py", 7, "k", 0), ("a/z.py", 5, "h", 0), ("a/x.py", 3, "f", 1))
    # Node prints an error's cause after its frames, as `[cause]: Error` or a library's `cause: TRPCError`
    for cause in ("  [cause]: Error: no procedure", "  cause: TRPCError: No procedure"):
        node = ("TRPCClientError: No procedure\n    at from (/app/client.mjs:43:16)\n" + cause + "\n"
                "    at callProcedure (/app/router.mjs:198:15)\n    at resolve (/app/resolve.mjs:30:3)\n")
        assert [f[3] for f in frame_mentions(node)] == [0, 1, 1], cause
    for text in ("cause: none given", "    cause: IOException while reading"):  # words, not a cause printed
        assert [f[3] for f in frame_mentions(f"  at f (/a/b.js:1:2)\n{text}\n  at g (/a/c.js:3:4)\n")] == [0, 0]


def test_debugger_sanitizer_ruby_php_elixir_swift_and_zig_frames_give_their_function():
    from retrieval.ranking import frame_mentions

    traces = {
        "    #0 0x55d1e8a3c1b2 in trim_range /home/dev/kv/src/packlist.c:1250": ("home/dev/kv/src/packlist.c", 1250, "trim_range"),
        "#7  0x0000555 in lib::detail::writer<lib::value<> >::escape (this=0x7ffd, s=\"a\") at /usr/include/lib/writer.hpp:513":
            ("usr/include/lib/writer.hpp", 513, "escape"),
        "/gems/orm-8.0.1/lib/orm/validations.rb:87:in 'Orm::Validations#raise_error!'": ("gems/orm-8.0.1/lib/orm/validations.rb", 87, "raise_error!"),
        "#0 /var/www/src/Orm/Concerns/HasAttributes.php(507): Orm\\Model->missingAttribute('email')":
            ("var/www/src/Orm/Concerns/HasAttributes.php", 507, "missingAttribute"),
        "    (web 1.7.14) lib/web/socket/serializer.ex:34: Web.Socket.Serializer.fastlane!/1": ("lib/web/socket/serializer.ex", 34, "fastlane!"),
        "1   Net   0x0000000104f2a1b4 closure #1 in Request.redirect(using:) + 312 (Request.swift:844)": ("Request.swift", 844, "redirect"),
        # Zig's panic: read as a bare `path:line`, the function it names was lost
        "/home/u/zls/src/features/inlay_hints.zig:267:17: 0x1a2b3c4 in features.inlay_hints.writeCallHint (zls)":
            ("home/u/zls/src/features/inlay_hints.zig", 267, "writeCallHint"),
    }
    for text, frame in traces.items():
        assert frame_mentions(text) == ((*frame, 0),), text
    # long texts of these shapes' pieces are read at once (a lazy pattern tried at every letter of a
    # 100,000-letter word took minutes)
    for text in ("a" * 100_000, "a." * 50_000, "#0 " + "/a" * 50_000 + "("):
        assert frame_mentions(text) == ()
    assert frame_mentions("a" * 100_000 + " + 1 (x.swift:1)") == (("x.swift", 1, "", 0),)
    assert frame_mentions("x.ex:1: " * 20_000) == (("x.ex", 1, "", 0),)
    assert frame_mentions("x.zig:1:1: 0x1 in " * 20_000) == (("x.zig", 1, "", 0),)
    assert [f[1:3] for f in frame_mentions("a" * 50_000 + ".rb:1:in 'x'")] == [(1, "")]  # past the path's bound


def test_a_frame_s_function_is_read_where_the_trace_prints_one():
    """Without it a frame whose line moved (another release) fell back to nothing: jackson's
    `handleMissingInstantiator` went 1 -> 4 with every line shifted by 57."""
    from retrieval.ranking import frame_mentions

    java = "\tat com.fasterxml.jackson.databind.DeserializationContext.handleMissingInstantiator(DeserializationContext.java:1402)"
    node = "    at TRPCBuilder.create (file:///srv/app/node_modules/@trpc/server/dist/initTRPC.ts:88:12)"
    csharp = "   at Newtonsoft.Json.JsonTextReader.ReadInternal() in C:\\src\\Json\\JsonTextReader.cs:line 42"
    go = "github.com/gin-gonic/gin.(*node).addRoute(0xc000, {0x1, 0x2})\n\t/root/go/pkg/mod/gin@v1.9/tree.go:230 +0x1d"
    rust = "   3: serde::de::MapAccess::next_value_seed::h0123456789abcdef\n             at ./serde/src/de/mod.rs:1716:39"
    assert [frame_mentions(t) for t in (java, node, csharp, go, rust)] == [
        (("DeserializationContext.java", 1402, "handleMissingInstantiator", 0),),
        (("srv/app/node_modules/@trpc/server/dist/initTRPC.ts", 88, "create", 0),),  # not again from `@trpc/`
        (("src/Json/JsonTextReader.cs", 42, "ReadInternal", 0),),
        (("root/go/pkg/mod/gin@v1.9/tree.go", 230, "addRoute", 0),),
        (("serde/src/de/mod.rs", 1716, "next_value_seed", 0),)]
    # long texts of the shapes' pieces are read at once (the patterns do not backtrack on them)
    assert frame_mentions("at " * 30_000) == frame_mentions("at a(" * 20_000) == ()
    assert frame_mentions("\tx.go:1\n" + ")" * 100_000 + "\n\tx.go:1") == (("x.go", 1, "", 0),)
