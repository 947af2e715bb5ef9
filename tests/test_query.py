"""How a query is read: bare identifiers, short questions, and long pasted reports."""
from __future__ import annotations

import pytest

from retrieval import build_retriever
from retrieval.lexical.features import DEF, def_term, exact_def_term
from retrieval.query import code_words, plan_query
from retrieval.ranking import RankingConfig
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever

CONFIG = RankingConfig()
FILLER_WORDS = " ".join(f"word{i}" for i in range(CONFIG.long_query_words))


def report(title: str, body: str) -> str:
    return f"{title}\n{body}\n{FILLER_WORDS}\n"


def test_a_short_question_is_not_long_and_keeps_raw_counts():
    plan = plan_query("retry retry the request", CONFIG)
    assert not plan.long and plan.symbol is None
    assert plan.weights["retri"] == 2.0


def test_a_question_word_asks_for_the_abbreviation_code_writes_for_it_at_half_its_weight():
    """express's `process.env.NODE_ENV` held no word of "which environment variable sets the mode"."""
    plan = plan_query("which environment variable sets the maximum size", CONFIG)
    assert plan.weights["env"] == CONFIG.abbreviation_weight * plan.weights["environ"] > 0
    assert plan.weights["max"] == CONFIG.abbreviation_weight * plan.weights["maximum"]
    assert plan_query("the env and max", CONFIG).weights["env"] == 1.0  # written so: as written
    assert plan_query("the connections and directories", CONFIG).weights["dir"] == CONFIG.abbreviation_weight
    # The word and its forms (plurals, verb forms), not another word of its stem (`specific` is no
    # `spec`, `refer` no `ref`).
    forms = plan_query("indexes of addresses while configuring connected directories", CONFIG).weights
    assert {"idx", "addr", "config", "conn", "dir"} <= forms.keys()
    assert not {"spec", "ref", "init"} & plan_query("the specific initial value they refer to", CONFIG).weights.keys()
    assert "env" not in plan_query("environment", CONFIG).weights  # a name is asked for as it is spelt
    docs = [doc("lib/application.js", "this.set('mode', process.env.NODE_ENV || 'development');\n"),
            doc("lib/view.js", "function View(name) {\n  this.name = name;\n}\n")]
    retriever = LexicalRetriever()
    retriever.index(docs)
    assert [h.source_path for h in retriever.search_detailed("which environment variable does it read", 2)] == [
        "lib/application.js"]


def test_a_bare_identifier_is_a_symbol_query_that_names_its_definition():
    plan = plan_query("HTTPException", CONFIG)
    assert plan.symbol == "HTTPException"
    assert plan.weights[DEF + "httpexception"] == CONFIG.symbol_definition_weight
    assert plan.weights[exact_def_term("HTTPException")] > 0


def test_a_long_report_damps_repeated_words_and_favours_its_title():
    plan = plan_query(report("cache eviction is wrong", "array " * 30), CONFIG)
    assert plan.long
    assert plan.weights["array"] < 5  # thirty mentions, damped to 1 + ln 30
    assert plan.weights["evict"] >= 1 + CONFIG.long_query_title_weight


def test_a_long_report_mentioning_tests_and_docs_does_not_ask_for_them():
    plan = plan_query(report("crash on save", "I ran the tests and read the docs"), CONFIG)
    assert plan.asked == frozenset()
    assert "tests" in plan_query("tests for save", CONFIG).asked


def test_only_words_written_as_code_name_definitions_in_a_long_report():
    plan = plan_query(report("crash on save", "calling `flush` then store.sync() and write_all fails"), CONFIG)
    for name in ("flush", "sync", "write_all"):
        assert def_term(name) in plan.weights
    for word in ("fails", "calling", "save", "crash"):  # prose, in the body or the title
        assert def_term(word) not in plan.weights


def test_code_words_are_calls_attributes_compounds_and_quoted_names():
    assert code_words("use obj.attr and run() with snake_case, camelCase, `plain` but not prose") == [
        "attr", "run", "snake_case", "camelCase", "plain"]


def test_a_call_is_read_from_the_start_of_its_word_only():
    """Tried from every letter of a word, the call pattern rescanned the rest of the word each
    time: a 40 KB run of hex digits in a pasted report took 20 s to read. From a word's start only,
    it reads the same names from real reports (982 swebench-dev and semble-dev queries, identical)."""
    assert code_words("call load(x) and 9load(y)") == ["load"]
    long_run = "0123456789abcdef" * 5000
    assert code_words(f"dump {long_run} then fetch_all()") == ["fetch_all"]


def doc(path, text, kind="code"):
    return Document(docid=path, text=text, source_path=path, start_line=1, end_line=text.count("\n") + 1, kind=kind)


def test_a_long_report_ranks_source_above_an_issue_template_that_shares_its_words():
    text = report("Saving a model crashes", "Steps to reproduce: save the model. Expected behaviour: it saves.")
    template = "Steps to reproduce\nExpected behaviour\nsave the model crashes\n"
    source = "def save_model(model):\n    write(model)\n"
    docs = [doc(".github/ISSUE_TEMPLATE/bug.yml", template, kind="config"), doc("app/persist.py", source)]
    docs += [doc(f"other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    ranked = LexicalRetriever()
    ranked.index(docs)
    assert ranked.search_detailed(text, 2)[0].source_path == "app/persist.py"
    plain = LexicalRetriever(ranking=CONFIG.replace(long_query_noncode=1.0))
    plain.index(docs)
    assert plain.search_detailed(text, 2)[0].source_path == ".github/ISSUE_TEMPLATE/bug.yml"


def test_a_word_written_as_code_in_a_question_names_a_definition_as_strongly_as_a_bare_symbol():
    plan = plan_query("why does parse_args() drop flags", CONFIG)
    assert plan.weights[def_term("parse_args")] == CONFIG.code_definition_weight
    assert plan.weights[DEF + "drop"] == CONFIG.definition_weight


def test_a_name_asked_in_the_other_naming_convention_finds_its_definition():
    assert def_term("client_ip") == def_term("ClientIP") == def_term("clientIp")
    docs = [doc("context.go", "func (c *Context) ClientIP() string {\n\treturn c.remoteIP()\n}\n"),
            doc("gin.go", "// the client IP is what ClientIP returns; the client ip of each request\n"
                          "func handle(c *Context) {\n\tip := c.ClientIP()\n\tlog(ip, c.ClientIP())\n}\n"),
            doc("StringUtils.java", "    public static boolean isBlank(final CharSequence cs) {\n        return cs == null;\n    }\n"),
            doc("Other.java", "    public static boolean isNotBlank(final CharSequence cs) {\n        return !isBlank(cs) && !isBlank(cs);\n    }\n")]
    retriever = LexicalRetriever()
    retriever.index(docs)
    assert retriever.search_detailed("client_ip", 1)[0].source_path == "context.go"
    assert retriever.search_detailed("is_blank", 1)[0].source_path == "StringUtils.java"


def test_a_question_naming_a_function_in_code_ranks_its_definition_above_heavier_users():
    users = "flags = parse_args(argv)\nparse_args(flags)\nparse_args(argv, flags)\n"
    docs = [doc("cli/main.py", users), doc("cli/parsing.py", "def parse_args(argv):\n    return argv\n")]
    docs += [doc(f"other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    query = "why does parse_args() drop flags"
    ranked = LexicalRetriever()
    ranked.index(docs)
    assert ranked.search_detailed(query, 2)[0].source_path == "cli/parsing.py"
    plain = LexicalRetriever(ranking=CONFIG.replace(code_definition_weight=0.0, definition_weight=0.0))
    plain.index(docs)
    assert plain.search_detailed(query, 2)[0].source_path == "cli/main.py"


def test_a_report_ranks_the_file_defining_the_symbols_it_names_above_files_that_discuss_them():
    text = report("Rounding is wrong", "calling `round_half` on a `Decimal` gives the wrong digits; rounding "
                  "digits rounding digits rounding digits")
    discussion = "# rounding digits round_half Decimal\n"
    definition = "def round_half(value):\n    return value\n\n\nclass Decimal:\n    pass\n"
    docs = [doc("pkg/notes.py", discussion), doc("pkg/numeric.py", definition)]
    docs += [doc(f"other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    ranked = LexicalRetriever()
    ranked.index(docs)
    assert ranked.search_detailed(text, 2)[0].source_path == "pkg/numeric.py"
    plain = LexicalRetriever(ranking=CONFIG.replace(long_query_definer_boost=0.0))
    plain.index(docs)
    assert plain.search_detailed(text, 2)[0].source_path == "pkg/notes.py"


def test_a_long_report_ranks_code_in_a_docs_directory_below_source():
    text = report("Saving a model crashes", "save the model then load the model")
    body = "def save(model):\n    store(model)\n"
    docs = [doc("doc/conf.py", body + "save(model)\n"), doc("app/persist.py", body)]
    docs += [doc(f"other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    ranked = LexicalRetriever()
    ranked.index(docs)
    assert ranked.search_detailed(text, 2)[0].source_path == "app/persist.py"
    assert ranked.search_detailed("save model", 2)[0].source_path == "doc/conf.py"  # a short query: no rule


ECHO_DOCS = [
    ("src/click/testing.py", "class EchoingStdin:\n    def _echo(self, rv):\n        return rv\n\n"
                             "    def read(self, n=-1):\n        return self._echo(self._input.read(n))\n\n"
                             "    def readline(self, n=-1):\n        return self._echo(self._input.readline(n))\n\n"
                             "    def readlines(self):\n        return [self._echo(x) for x in self._input.readlines()]\n"),
    ("src/click/utils.py", "def echo(message=None, file=None, nl=True):\n    \"\"\"Print a message and newline.\"\"\"\n"
                           "    file.write(message)\n"),
    ("src/click/widgets.py", "class Echo:\n    \"\"\"A widget repeating what it is given.\"\"\"\n\n"
                             "    def show(self, text):\n        return Echo.render(Echo, text)\n"),
]


def echo_retriever() -> LexicalRetriever:
    docs = [doc(path, text) for path, text in ECHO_DOCS]
    docs += [doc(f"other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    retriever = LexicalRetriever()
    retriever.index(docs)
    return retriever


def test_a_bare_identifier_ranks_the_definition_spelled_exactly_so_above_other_spellings_of_it():
    """`_echo`, `Echo` and `echo` share one definition term (so `client_ip` finds `ClientIP`); a
    lower-case name had no exact-spelling term, and the class calling its own `_echo` six times
    outranked click's `def echo`."""
    retriever = echo_retriever()
    assert retriever.search_detailed("echo", 1)[0].source_path == "src/click/utils.py"
    assert retriever.search_detailed("_echo", 1)[0].source_path == "src/click/testing.py"
    assert retriever.search_detailed("Echo", 1)[0].source_path == "src/click/widgets.py"


def test_exact_spellings_do_not_lengthen_a_chunk():
    from retrieval.lexical.features import chunk_terms, document_length, exact_def_term

    counts = chunk_terms("a.py", "def echo(message):\n    return message\n", language="python")
    assert counts[exact_def_term("echo")] == 1
    without = {term: n for term, n in counts.items() if term != exact_def_term("echo")}
    assert document_length(counts) == document_length(without)


def test_a_definition_keyword_before_an_identifier_asks_for_that_definition():
    from retrieval.query import search_text

    for query, name in [("def echo", "echo"), ("fn spawn", "spawn"), ("func NewRouter", "NewRouter"),
                        ("class Router", "Router"), ("function parse_args", "parse_args"), ("struct Foo::Bar", "Foo::Bar")]:
        assert search_text(query) == name
    # English words after a keyword that is an English word too: a question, not a definition.
    for query in ["class hierarchy", "type error", "function composition", "def echo twice", "how echo"]:
        assert search_text(query) == query
    assert echo_retriever().search_detailed("def echo", 1)[0].source_path == "src/click/utils.py"


def test_a_word_before_a_plural_s_is_no_call_so_a_pasted_message_names_no_definition_by_it():
    """`Error: required flag(s) "config" not set` read `flag(` as a call, a name written as code:
    in cobra `func (c *Command) Flag` came first and the code raising the message 15th (first now)."""
    assert code_words("required flag(s) not set; file(s) missing, call run(s) and load(path)") == ["load"]
    plan = plan_query('Error: required flag(s) "config" not set', CONFIG)
    assert plan.weights[def_term("flag")] == CONFIG.definition_weight  # a word of a sentence, no more
    assert CONFIG.code_definition_weight > CONFIG.definition_weight


def keyword_documents() -> list[Document]:
    def code(path, language, text):
        return Document(docid=path, text=text, source_path=path, start_line=1, end_line=text.count("\n") + 1,
                        language=language)

    docs = [
        code("lib/associations/builder/has_many.rb", "ruby",
             "class HasMany < CollectionAssociation\n  def self.macro\n    :has_many\n  end\n\n"
             "  def self.valid_options(options)\n    super + [:counter_cache, :join_table, :through]\n  end\nend\n"),
        code("lib/associations.rb", "ruby",
             "module Associations\n  # Declares a one-to-many association.\n  def has_many(name, scope = nil)\n"
             "    Builder::HasMany.build(self, name, scope)\n  end\nend\n"),
        code("assets/turbo.js", "javascript",
             "class FrameView {\n  async render(callback) {\n    await callback()\n  }\n"
             "  rerender() {\n    this.render(() => this.render())\n  }\n}\n"),
        code("lib/template.rb", "ruby",
             "class Template\n  def render(view, locals)\n    compile(view).call(locals)\n  end\nend\n"),
        code("src/task/spawn.rs", "rust",
             "/// Spawns a new asynchronous task, returning a JoinHandle for it.\n///\n/// The provided future will start "
             "running in the background immediately\n/// when this function is called, even if you don't await the "
             "returned\n/// JoinHandle. There is no guarantee that a spawned task will execute to completion.\n"
             "pub fn spawn<F>(future: F) -> JoinHandle {\n    spawn_inner(future)\n}\n"),
        code("src/runtime/handle.rs", "rust",
             "impl Handle {\n    pub fn spawn<F>(&self, future: F) -> JoinHandle {\n        self.inner.spawn(future)\n    }\n}\n"),
    ]
    return docs + [code(f"other/f{i}.rb", "ruby", "def unrelated\n  nil\nend\n") for i in range(6)]


# The retrievers that know which files define a name (a dense one alone does not).
KEYWORD_RETRIEVERS = ["lexical", pytest.param("pi-serini", marks=pytest.mark.extra("pyserini")),
                      pytest.param("hybrid", marks=pytest.mark.extra("local", "turbovec"))]


@pytest.mark.parametrize("name", KEYWORD_RETRIEVERS)
def test_a_definition_keyword_asks_for_a_file_defining_the_name_not_one_named_after_it(name):
    """rails's `has_many.rb` defines `HasMany`: a bare `has_many` may mean that file, `def has_many`
    means the method (which came second); a file both named so and defining it stays first."""
    retriever = build_retriever(name)
    retriever.index(keyword_documents())
    assert retriever.search_detailed("has_many", 1)[0].source_path == "lib/associations/builder/has_many.rb"
    assert retriever.search_detailed("def has_many", 1)[0].source_path == "lib/associations.rb"
    assert retriever.search_detailed("fn spawn", 1)[0].source_path == "src/task/spawn.rs"


@pytest.mark.parametrize("name", KEYWORD_RETRIEVERS)
def test_a_definition_keyword_asks_for_a_definition_in_a_language_that_keyword_opens(name):
    """`def render` in rails found a bundled JavaScript file's `async render(` first: `def` opens
    Ruby's and Python's definitions, not JavaScript's."""
    retriever = build_retriever(name)
    retriever.index(keyword_documents())
    assert retriever.search_detailed("render", 1)[0].source_path == "assets/turbo.js"
    assert retriever.search_detailed("def render", 1)[0].source_path == "lib/template.rb"


def test_only_a_code_keyword_names_the_languages_a_definition_is_asked_in():
    from retrieval.query import definition_keyword

    plan = plan_query("render", CONFIG, keyword="def")
    assert {"python", "ruby"} <= plan.keyword_languages and "javascript" not in plan.keyword_languages
    assert plan_query("spawn", CONFIG, keyword="fn").keyword_languages >= {"rust", "zig"}
    assert definition_keyword("fn spawn") == "fn" and definition_keyword("func NewRouter") == "func"
    # Keywords that are English words too name no language (`class Router` is a class in many).
    assert definition_keyword("class Router") == "" and definition_keyword("def echo twice") == ""


def message_documents() -> list[Document]:
    def code(path, text):
        return Document(docid=path, text=text, source_path=path, start_line=1, end_line=text.count("\n") + 1,
                        language="rust")

    return [
        code("src/runtime/runtime.rs",
             "/// Runs a future on the Tokio runtime. Must be called from outside the runtime context:\n"
             "/// the reactor keeps running while the runtime is entered, and no task may block it.\n"
             "pub fn block_on<F: Future>(&self, future: F) -> F::Output {\n"
             "    let _enter = self.enter_runtime_context();\n    self.reactor.run(future)\n}\n"),
        code("src/runtime/context.rs",
             "/// The runtime context of the current thread: the reactor handle, if a runtime is running.\n"
             "pub(crate) fn with_current<R>(f: impl FnOnce(&Handle) -> R) -> Result<R, TryCurrentError> {\n"
             "    CONTEXT.with(|ctx| ctx.current.handle.borrow().as_ref().map(f))\n"
             "        .ok_or(TryCurrentError::new_no_context())\n}\n"),
        code("src/util/error.rs",
             "/// Error string explaining that the Tokio context hasn't been instantiated.\n"
             "pub(crate) const CONTEXT_MISSING_ERROR: &str =\n"
             "    \"there is no reactor running, must be called from the context of a Tokio 1.x runtime\";\n\n"
             "/// Error string explaining that the Tokio context is shutting down.\n"
             "pub(crate) const RUNTIME_SHUTTING_DOWN_ERROR: &str =\n"
             "    \"A Tokio 1.x context was found, but it is being shutdown.\";\n"),
    ] + [code(f"src/other/f{i}.rs", "fn unrelated() {}\n") for i in range(6)]


@pytest.mark.parametrize("name", ["lexical", pytest.param("hybrid", marks=pytest.mark.extra("local", "turbovec"))])
def test_a_pasted_message_finds_the_string_that_says_it_before_files_named_by_its_words(name):
    """A panic message copied from a log: the words `runtime` and `context` name two files, whose
    comments use most of its words apart; the constant writes them in the message's order."""
    retriever = build_retriever(name)
    retriever.index(message_documents())
    message = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
    assert retriever.search_detailed(message, 1)[0].source_path == "src/util/error.rs"


def test_a_sentence_of_few_word_pairs_is_no_phrase_to_quote():
    assert plan_query("reactor running context", CONFIG).phrase == ()  # two pairs: a question
    assert len(plan_query("no reactor running in context", CONFIG).phrase) == 3  # quoted only whole
    assert len(plan_query("there is no reactor running, must be called from a runtime", CONFIG).phrase) >= 4
    assert plan_query("reactor running must be called", CONFIG).phrase == plan_query("reactor running must called",
                                                                                  CONFIG).phrase  # stop words skipped


def test_a_phrase_is_words_written_one_after_another_not_pairs_held_apart():
    """A test naming `SetTrustedProxies`, `ClientIP` and `RemoteIPHeaders` holds four of the pairs of
    `set trusted proxies for the client ip header`, none in a run: it came before `SetTrustedProxies`."""
    from retrieval.retrievers.lexical import phrase_factors

    docs = [Document("t.go", "func TestProxies(t *testing.T) {\n\tr.SetTrustedProxies(nil)\n\tc.ClientIP()\n"
                             "\tr.RemoteIPHeaders = nil\n}\n", source_path="t.go", start_line=1, end_line=5, language="go"),
            Document("m.go", 'panic("set trusted proxies for the client ip header first")\n', source_path="m.go",
                     start_line=1, end_line=1, language="go")]
    retriever = LexicalRetriever()
    retriever.index(docs)
    plan, first = retriever.first_stage("set trusted proxies for the client ip header", 10)
    factors = phrase_factors(retriever._views, plan, first, CONFIG)
    paths = {retriever._views[i].segment.files[retriever._views[i].segment.doc_file[d]][0]: f for (i, d), f in factors.items()}
    assert set(paths) == {"m.go"} and paths["m.go"] == 1 + CONFIG.phrase_boost
    trace = "set trusted proxies for the client ip header\n  File \"m.go\", line 1, in main"
    assert plan_query(trace, CONFIG).phrase == ()  # a pasted frame's paths are no sentence


def test_a_short_message_is_quoted_only_by_a_run_of_all_its_words():
    """abseil's `Unknown command line flag` (four words, three pairs): a header naming
    `CommandLineFlag` holds two of them in a run and came before the line printing the message."""
    from retrieval.retrievers.lexical import phrase_factors

    docs = [Document("flag.h", "class CommandLineFlag {\n  bool IsSpecifiedOnCommandLine() const;\n};\n",
                     source_path="flag.h", start_line=1, end_line=3, language="cpp"),
            Document("parse.cc", 'errors.push_back(absl::StrCat("Unknown command line flag \'", name, "\'"));\n',
                     source_path="parse.cc", start_line=1, end_line=1, language="cpp")]
    retriever = LexicalRetriever()
    retriever.index(docs)
    plan, first = retriever.first_stage("Unknown command line flag", 10)
    factors = phrase_factors(retriever._views, plan, first, CONFIG)
    paths = {retriever._views[i].segment.files[retriever._views[i].segment.doc_file[d]][0]: f for (i, d), f in factors.items()}
    assert paths == {"parse.cc": 1 + CONFIG.phrase_boost}
    assert retriever.search_detailed("Unknown command line flag", 1)[0].source_path == "parse.cc"


def test_a_pasted_blob_without_spaces_is_read_in_time_proportional_to_its_length():
    """A 53 KB stylesheet or a hex digest pasted with a question took 18 s (the search for a path's
    slash inside each long word started again at each character), a 900 KB one 10 s more (every
    distinct part of it compared with all before it, to pair a question's first twelve words)."""
    from retrieval.lexical.features import QUESTION_UNITS, question_pairs
    from retrieval.service import _without_paths

    blob = "".join(f".btn-{i}{{color:#{i * 997:06x};margin:0}}" for i in range(4000))  # 130 KB, no slash
    assert _without_paths(f"the session redirect breaks {blob} see /srv/app/x.js:12:3 too") == \
        f"the session redirect breaks {blob} see   too"
    words = ["".join("abcdefghijklmnopqrstuvwxyz"[n // 26 ** k % 26] for k in range(4)) for n in range(100_000)]
    assert len(set(words)) == 100_000  # (a pasted digest's many distinct words)
    assert question_pairs(words) == question_pairs(words[:QUESTION_UNITS])
    assert len(question_pairs(words)) == QUESTION_UNITS * (QUESTION_UNITS - 1) // 2
