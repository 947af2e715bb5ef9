"""Each ranking signal has its intended effect on a tiny corpus, and switching it off removes it."""
from __future__ import annotations

import pytest

from retrieval.lexical.features import (chunk_terms, defined_names, definitions_and_members, document_length, path_terms,
                                        weak_def_term, weak_definitions)
from retrieval.ranking import RankingConfig, is_symbol_query
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever


def doc(path, text, start=1, kind="code", language=""):
    end = start + text.count("\n")
    return Document(docid=f"{path}:{start}-{end}", text=text, source_path=path, start_line=start,
                    end_line=end, kind=kind, language=language)


def ranked_paths(docs, query, **config):
    retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
    retriever.index(docs)
    return [h.source_path for h in retriever.search_detailed(query, 10)]


USES = "x = TokenCache()\ny = TokenCache()\nz = TokenCache()\nTokenCache().refresh()\n"
DEFINITION = "class TokenCache:\n    pass\n"


def test_a_symbol_query_ranks_the_defining_chunk_above_heavier_users():
    docs = [doc("app/use.py", USES), doc("app/cache.py", DEFINITION)]
    assert ranked_paths(docs, "TokenCache")[0] == "app/cache.py"
    assert ranked_paths(docs, "TokenCache", definition_weight=0, symbol_definition_weight=0)[0] == "app/use.py"


def test_definitions_are_recognised_across_languages():
    text = (
        "def parse_args(argv):\n"
        "class Config:\n"
        "func (s *Server) ServeHTTP(w http.ResponseWriter) {\n"
        "pub fn spawn_blocking<F>(f: F) {\n"
        "export function createRouter(opts) {\n"
        "int redisCommand(redisContext *c, const char *format) {\n"
        "#define MAX_RETRIES 3\n"
        "defmodule Ecto.Repo do\n"
    )
    names = defined_names(text)
    for name in ["parse_args", "Config", "ServeHTTP", "spawn_blocking", "createRouter", "redisCommand",
                 "MAX_RETRIES", "Repo"]:
        assert name in names
    assert "print" not in defined_names("    return print(x)\n")


@pytest.mark.parametrize("language,text,names", [
    ("c", "typedef struct {\n  int fd;\n} smtpstate;\n", {"smtpstate"}),
    ("lua", "local on_win = function(_, buf)\n  output.clear_lines = function(self)\n", {"on_win", "clear_lines"}),
    ("javascript", "defineGetter(req, 'query', function query() {\n  const transformChunk = (chunk, cb) => {\n"
                   "  text: function () {\n", {"query", "transformChunk", "text"}),
    ("rust", "pub(crate) mod orphan;\nmacro_rules! num_as_self {\n", {"orphan", "num_as_self"}),
])
def test_definition_forms_a_keyword_pattern_missed_are_recognised(language, text, names):
    """A helper's sample of 800 bare names (25 repositories): 60 of lexical's 86 misses were
    definitions no pattern read, and the chunk using the name most ranked first."""
    assert names <= defined_names(text, language)


@pytest.mark.parametrize("language,text,names", [
    ("swift", "    public var centerY: ConstraintItem {\n    internal static let topMargin = 8\n", {"centerY", "topMargin"}),
    ("kotlin", "    override val localAddress: SocketAddress\n    private const val MAX = 3\n", {"localAddress", "MAX"}),
    ("scala", "  implicit val catsStdShowForString: Show[String] = Show.fromToString\n", {"catsStdShowForString"}),
    ("csharp", "    public bool IsReadable { get; set; }\n    public int Depth => _depth;\n", {"IsReadable", "Depth"}),
    ("cpp", "using json = basic_json<>;\n", {"json"}),
    ("elixir", "defmodule Ecto.Changeset.Relation do\n", {"Relation"}),
    ("ruby", "class Sinatra::Helpers::Stream\n", {"Stream"}),
    # Fields and properties, where a class keeps its defaults and settings
    ("php", "    public const HISTORY_HEADER = 'X';\n    public static $defaultSettings = [\n    protected int $count = 0;\n",
     {"HISTORY_HEADER", "defaultSettings", "count"}),
    ("java", "    public static final int DEFAULT_TIMEOUT = 30;\n    private final Map<String, List<Integer>> cache;\n",
     {"DEFAULT_TIMEOUT", "cache"}),
    ("csharp", "    private static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(5);\n", {"DefaultTimeout"}),
    ("typescript", "  static defaultTimeout = 5;\n  private interceptors: Interceptors;\n  timeout?: number;\n",
     {"defaultTimeout", "interceptors", "timeout"}),
    ("javascript", "  static defaults = {};\n  #count = 0;\n", {"defaults", "count"}),
    ("ruby", "  class Base\n    DEFAULT_PORT = 4567\n", {"DEFAULT_PORT"}),
    ("python", "class ClientTimeout:\n    total: Optional[float] = None\n\nclass Session:\n    def __init__(self):\n"
               "        self.max_redirects = DEFAULT_REDIRECT_LIMIT\n", {"total", "max_redirects"}),
    ("python", "class WebSocketResponse:\n    def __init__(\n        self,\n        heartbeat: float = 1,\n    ) -> None:\n"
               "        self._pong_heartbeat = heartbeat / 2\n", {"_pong_heartbeat"}),  # (a signature over lines)
    ("go", "type Engine struct {\n\tRouterGroup\n\t// how much\n\tMaxMultipartMemory int64\n\ttrees, other methodTrees\n}\n",
     {"MaxMultipartMemory", "trees"}),
])
def test_weak_definitions_are_read_apart_from_definitions(language, text, names):
    """Member properties, type aliases and a qualified definition's last part: a bare identifier
    means them, a sentence's words (`value`, `relation`) seldom do."""
    assert names <= weak_definitions(text, language)
    assert not names & defined_names(text, language)


KOTLIN_PROPERTY = "class Connection {\n    override val localAddress: SocketAddress\n        get() = socket.local\n}\n"
KOTLIN_USES = "fun log(c: Connection) {\n    print(c.localAddress)\n    check(c.localAddress)\n    dump(c.localAddress)\n}\n"


def test_a_bare_identifier_finds_the_property_it_names_above_its_users():
    docs = [doc("src/Log.kt", KOTLIN_USES, language="kotlin"),
            doc("src/Connection.kt", KOTLIN_PROPERTY, language="kotlin")]
    assert ranked_paths(docs, "localAddress")[0] == "src/Connection.kt"
    assert ranked_paths(docs, "localAddress", weak_definition_weight=0)[0] == "src/Log.kt"


@pytest.mark.parametrize("language,text", [
    ("java", "    void m() {\n        final int local = 3;\n        return run(x);\n    }\n    public abstract void run();\n"),
    ("typescript", "  constructor() {\n    count = count + 1;\n    const a: number = 3;\n  }\n"
                   "const cfg = {\n  timeout: 0,\n};\n"),
    ("python", "class A:\n    def run(self):\n        x: int = 3\n        self.y = 2\n"),
    ("ruby", "def run\n  total = 3\n  Foo = 1\nend\n"),
    ("go", "func (e *Engine) X() {\n\tvar y int\n\tz := 1\n}\n"),
    # (From a review: a PHP function's static locals, a switch's `default:`, C#'s and Dart's locals,
    # a docstring's `Note:` line, what a later method or class sets on `self`.)
    ("php", "function f() {\n    static $count = 0;\n    static $cache = [];\n}\n"),
    ("typescript", "switch (x) {\n  default: return null;\n}\n"),
    ("csharp", "    void M() {\n        const int Limit = 10;\n    }\n"),
    ("dart", "  void f() {\n    late String name;\n  }\n"),
    ("python", 'class A:\n    """Doc.\n\n    Note: this is not thread safe\n    """\n    def __init__(self):\n        pass\n\n'
               "    def reset(self):\n        self.cache = {}\n\nclass B:\n    def run(self):\n        self.result = 3\n"),
])
def test_a_function_s_locals_are_no_fields(language, text):
    assert weak_definitions(text, language) == set()


def test_a_syntax_tree_s_chunk_is_indexed_under_its_weak_definitions_too():
    """A tree names no field nor alias a definition: abseil's `using CordRep = ...` vanished from the
    first hits for its name when the tree's chunks were indexed under the tree's names alone."""
    counts = chunk_terms("src/Client.php", "    public static $defaultSettings = [\n        'max' => 5,\n    ];\n",
                         language="php", definitions=("RedirectMiddleware",))
    assert counts[weak_def_term("defaultSettings")] == 1
    assert weak_def_term("RedirectMiddleware") not in counts


def test_a_bare_identifier_finds_the_field_holding_a_default_above_the_code_using_it():
    """guzzle's `public static $defaultSettings = [...]` was 14th for its own name."""
    declaring = "class RedirectMiddleware\n{\n    public static $defaultSettings = [\n        'max' => 5,\n    ];\n}\n"
    using = ("class Client\n{\n    public function send($options)\n    {\n"
             "        $a = RedirectMiddleware::$defaultSettings;\n        $b = RedirectMiddleware::$defaultSettings;\n"
             "        return array_merge(RedirectMiddleware::$defaultSettings, $options);\n    }\n}\n")
    docs = [doc("src/Client.php", using, language="php"), doc("src/RedirectMiddleware.php", declaring, language="php")]
    assert ranked_paths(docs, "defaultSettings")[0] == "src/RedirectMiddleware.php"
    assert ranked_paths(docs, "defaultSettings", weak_definition_weight=0)[0] == "src/Client.php"


def test_weak_definitions_change_no_sentence_score_nor_any_chunk_length():
    docs = [doc("src/Log.kt", KOTLIN_USES, language="kotlin"),
            doc("src/Connection.kt", KOTLIN_PROPERTY, language="kotlin")]

    def scores(**config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index(docs)
        return [(h.source_path, h.score) for h in retriever.search_detailed("the local address of a connection", 10)]

    assert scores() == scores(weak_definition_weight=0)
    counts = chunk_terms("src/Connection.kt", KOTLIN_PROPERTY, language="kotlin")
    assert counts[weak_def_term("localAddress")] == 1
    assert document_length(counts) == document_length({t: n for t, n in counts.items()
                                                       if t != weak_def_term("localAddress")})


def test_a_value_bound_in_a_body_is_no_definition_but_a_function_bound_there_is():
    text = "  const total = items.length\n  result = run(function () {\n  const step = (x) => x + 1\n"
    assert defined_names(text, "javascript") == {"step"}


JAVA_CLASS = ("/**\n * Assists in implementing hashCode for any class, with the rules laid out in\n"
              " * Effective Java: a long Javadoc and a licence make the class's first chunk heavy.\n */\n"
              "public class HashCodeBuilder implements Builder<Integer> {\n"
              + "".join(f"    private static final int PRIME_{i} = {i};\n" for i in range(12)))
JAVA_CONSTRUCTOR = "    public HashCodeBuilder(final int initial) {\n        total = initial;\n    }\n"


def test_a_constructor_is_its_class_s_member_not_a_definition_of_the_class_name():
    from retrieval.lexical.features import definitions_and_members, member_owners

    owners = member_owners([JAVA_CLASS, JAVA_CONSTRUCTOR], "java")
    assert definitions_and_members(JAVA_CONSTRUCTOR, "java", owners[1]) == (set(), {"HashCodeBuilder.HashCodeBuilder"})
    assert "HashCodeBuilder" in definitions_and_members(JAVA_CLASS, "java", owners[0])[0]
    assert defined_names("Router::Router(int n) {\n", "cpp") == set()  # out of its class, by its qualifier
    retriever = LexicalRetriever()
    end = JAVA_CLASS.count("\n")
    retriever.index([doc("src/HashCodeBuilder.java", JAVA_CLASS), doc("src/HashCodeBuilder.java", JAVA_CONSTRUCTOR, end + 1)])
    assert retriever.search_detailed("HashCodeBuilder", 2)[0].start_line == 1  # the class, not its constructor


def test_a_code_block_in_a_page_defines_nothing():
    from retrieval.lexical.features import chunk_terms, def_term

    block = "# Server components\n\n```ts\nexport const createCallerFactory = t.createCallerFactory;\n```\n"
    assert def_term("createCallerFactory") not in chunk_terms("docs/server.mdx", block, language="markdown")
    assert def_term("createCallerFactory") in chunk_terms("src/router.ts", block.split("\n")[3], language="typescript")
    docs = [doc("docs/server.md", block, kind="docs"),
            doc("src/router.ts", "export function createCallerFactory() {\n  return (router) => router;\n}\n")]
    assert ranked_paths(docs, "createCallerFactory")[0] == "src/router.ts"


def test_a_typescript_method_whose_parameters_are_wrapped_is_a_definition_and_a_wrapped_call_is_not():
    text = ("export class TRPCClientError extends Error {\n"
            "  public static from<T extends Inferrable>(\n    cause: Error | object,\n"
            "    opts: { meta?: Record<string, unknown> } = {},\n  ): TRPCClientError<T> {\n"
            "    expect(\n      cause,\n    );\n    if (\n      opts\n    ) {\n      report();\n    }\n  }\n}\n")
    assert defined_names(text, "typescript") == {"TRPCClientError", "from"}


def test_test_files_rank_below_source_unless_the_query_asks_for_tests():
    body = "def retry_request(session):\n    return session.retry_request()\n"
    # (names the query does not spell out, so no file-name boost) the test file matches a little better (it says the words once more) and ranks first unpenalised
    docs = [doc("tests/test_client.py", body + "assert retry_request(session)\n"), doc("src/client.py", body)]
    assert ranked_paths(docs, "retry request") == ["src/client.py", "tests/test_client.py"]
    assert ranked_paths(docs, "retry request tests")[0] == "tests/test_client.py"
    assert ranked_paths(docs, "retry request", test_penalty=1.0)[0] == "tests/test_client.py"


def test_a_query_asking_for_tests_takes_no_test_penalty():
    body = "def retry_request(session):\n    return session.retry_request()\n"
    docs = [doc("tests/test_client.py", body + "assert retry_request(session)\n"), doc("src/client.py", body)]

    def scores(query, **config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index(docs)
        return {h.source_path: h.score for h in retriever.search_detailed(query, 10)}

    assert scores("retry request tests") == scores("retry request tests", test_penalty=1.0)
    # (discriminating: without the word the test file is penalised)
    assert scores("retry request")["tests/test_client.py"] < scores("retry request", test_penalty=1.0)["tests/test_client.py"]


def test_a_test_word_the_project_s_own_code_writes_as_often_as_its_tests_does_not_ask_for_tests():
    """vitest is a test runner: `test` and `mock` are in its source as much as in its tests, and
    "test watcher for file changes" found test files before `watcher.ts`."""
    watcher = "export class Watcher {\n  onFileChange(file) {\n    this.rerunTest(file)\n  }\n}\n"
    runner = [doc("packages/vitest/src/node/watcher.ts", "// test watcher: reruns a test on file changes\n" + watcher),
              doc("packages/vitest/src/node/pool.ts", "export function runTest(test) {\n  return test.run()\n}\n"),
              doc("test/watch/watcher.test.ts", "test('test watcher reruns on file changes', () => {\n"
                  "  // file changes: the watcher reruns the changed file's test\n"
                  "  expect(watcher.onFileChange(file)).toBe(true)\n  expect(watcher.test).toBeDefined()\n})\n"),
              doc("test/core/pool.test.ts", "test('pool runs a test', () => {\n  runTest(test)\n})\n")]
    def scores(docs, query, **config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index(docs)
        return {h.source_path: h.score for h in retriever.search_detailed(query, 10)}

    query, test = "test watcher for file changes", "test/watch/watcher.test.ts"
    assert scores(runner, query)[test] < scores(runner, query, test_penalty=1.0)[test]  # penalised
    assert ranked_paths(runner, query)[0] == "packages/vitest/src/node/watcher.ts"
    # Where only the tests write the word, it asks for them, as before: no penalty.
    app = [doc("src/watcher.ts", "// watcher: reruns on file changes\n" + watcher.replace("rerunTest", "rerun")),
           doc("src/pool.ts", "export function runJob(job) {\n  return job.run()\n}\n"),
           runner[2], doc("test/pool.test.ts", "test('pool runs a job', () => {\n  runJob(job)\n})\n")]
    assert scores(app, query)[test] == scores(app, query, test_penalty=1.0)[test]


def test_path_words_find_a_file_whose_body_does_not_say_them():
    docs = [doc("net/websockets.py", "class Connection:\n    def send(self, frame):\n        pass\n"),
            doc("net/other.py", "def unrelated():\n    pass\n")]
    assert ranked_paths(docs, "websocket")[:1] == ["net/websockets.py"]
    assert ranked_paths(docs, "websocket", path_weight=0) == []
    assert path_terms("src/net/HttpClient.kt") == ["src", "net", "httpclient", "http", "client"]


def test_a_tools_file_is_found_by_the_tools_name():
    """`docker` found no Dockerfile (its path term was `dockerfile` alone) and `migrate.Dockerfile`
    lost the word to its extension (a probe of infrastructure questions)."""
    docs = [doc("services/api/Dockerfile", "FROM python:3.12-slim\nRUN pip install .\n"),
            doc("build/migrate.Dockerfile", "FROM alpine\nCOPY migrations /m\n"),
            doc("ci/Jenkinsfile", "pipeline {\n  agent any\n}\n"), doc("src/app.py", "x = 1\n")]
    assert sorted(ranked_paths(docs, "docker image")) == ["build/migrate.Dockerfile", "services/api/Dockerfile"]
    assert ranked_paths(docs, "jenkins pipeline")[:1] == ["ci/Jenkinsfile"]
    assert "docker" in path_terms("Dockerfile.dev") and "pro" not in path_terms("src/Profile.java")
    assert "docker" in path_terms("deploy/api.dockerfile")  # (any case, as the walk takes it)


def test_the_top_of_the_list_covers_distinct_files_before_second_chunks():
    hub = [doc("hub.py", "parse token parse token parse token\n", start=i * 10 + 1) for i in range(5)]
    other = [doc("other.py", "parse token\n")]
    paths = ranked_paths(hub + other, "parse token")
    assert paths[:2] == ["hub.py", "other.py"]
    assert paths.count("hub.py") == 5


def test_several_matching_chunks_in_one_file_add_evidence_to_it():
    one_strong = [doc("a.py", "render template render template\n")]
    many_weak = [doc("b.py", "render template\n", start=i * 10 + 1) for i in range(5)]
    assert ranked_paths(one_strong + many_weak, "render template")[0] == "b.py"
    assert ranked_paths(one_strong + many_weak, "render template", file_evidence=0)[0] == "a.py"


def test_bare_identifiers_are_symbol_queries_and_sentences_are_not():
    assert is_symbol_query("HTTPException")
    assert is_symbol_query("os.path.join")
    assert not is_symbol_query("how are routes registered")


# Unrelated files, so that the words of the test corpora have realistic (high) idf.
FILLER = [doc(f"other/unrelated{i}.py", "def unrelated():\n    return 1\n") for i in range(6)]


def test_an_identifier_s_parts_are_paired_in_one_term_each_and_a_plain_word_adds_none():
    from retrieval.lexical.features import PAIR, chunk_terms, pair_terms, question_pairs

    assert pair_terms("self.conn_pool_size = 2\nconn_pool_size += 1\nreturn value") == {
        PAIR + "conn&pool": 2, PAIR + "conn&size": 2, PAIR + "pool&size": 2}
    assert PAIR + "connect&pool" in chunk_terms("a.py", "pool = ConnectionPool()")
    assert PAIR + "connect&pool" in chunk_terms("net/connection_pool.py", "pool = 1")  # a file's name
    assert not any(t.startswith(PAIR) for t in chunk_terms("a.py", "pool = ConnectionPool()", pairs=False))
    # A question pairs its words as an identifier's parts are paired, stop words left out.
    assert question_pairs("how is the connection pool sized".split()) == [
        PAIR + "connect&pool", PAIR + "connect&size", PAIR + "pool&size"]


def test_a_question_whose_words_one_identifier_joins_ranks_the_code_naming_that_thing_first():
    """`connection pool` asks for the pool of connections (`connection_pool`), not for code that
    holds a connection and, apart from it, some pool."""
    joined = doc("src/joined.py", "def refill(self, connection):\n    self.connection_pool.fill(connection)\n")
    apart = doc("src/apart.py", "def refill(self, connection):\n    self.pool.fill(connection)\n    connection.open()\n")
    docs = FILLER + [apart, joined]
    question = "how is the connection pool refilled"
    assert ranked_paths(docs, question)[0] == "src/joined.py"
    assert ranked_paths(docs, question, identifier_pair_weight=0.0)[0] == "src/apart.py"


def test_the_words_a_string_literal_writes_next_to_each_other_are_paired_not_its_placeholders():
    from retrieval.lexical.features import PAIR, chunk_terms, literal_pairs

    code = 'raise ValueError(f"{value!r} is not in the range {lo}..{hi}.")\nlog("%(user)s logged in twice")\n'
    assert literal_pairs(code) == {PAIR + "not&rang": 1, PAIR + "log&twice": 1}
    assert PAIR + "not&rang" in chunk_terms("a.py", code, language="python")
    # A data file's strings are its contents, and prose quotes words: neither says what code raises.
    for path, language in (("a.json", "json"), ("a.md", "markdown")):
        assert PAIR + "not&rang" not in chunk_terms(path, code, language=language)


def test_a_template_literal_or_a_go_raw_string_is_a_string_whose_words_are_paired():
    """trpc's `No "${type}"-procedure on path "${path}"` was read as two quoted placeholders."""
    from retrieval.lexical.features import PAIR, literal_pairs

    template = 'throw new TRPCError({ message: `No "${type}"-procedure on path "${path}"` });\n'
    assert literal_pairs(template, "typescript") == {PAIR + "no&procedur": 1, PAIR + "path&procedur": 1}
    assert literal_pairs('return fmt.Errorf(`required flag "%s" not set`, name)\n', "go") == {
        PAIR + "flag&requir": 1, PAIR + "flag&not": 1, PAIR + "not&set": 1}
    # elsewhere a backtick quotes code in a comment, or runs a shell command (Ruby)
    assert literal_pairs("# see `retry the request` here\n", "python") == {}


def test_a_string_continued_past_a_line_end_by_a_backslash_is_one_literal():
    """tokio's panic message, written over four lines with `\\` continuations, gave no pair: a pasted
    copy of it ranked the raising site fifth, `low`."""
    from retrieval.lexical.features import PAIR, literal_pairs

    code = ('panic!(\n    "Cannot start a runtime from within a runtime. This happens \\\n'
            '    because a function attempted to block the current thread.\"\n);\n')
    pairs = literal_pairs(code, "rust")
    assert {PAIR + "cannot&start", PAIR + "becaus&happen", PAIR + "block&current"} <= set(pairs)
    # A quote left open at a line end is no string across lines: nothing is paired past it.
    assert literal_pairs('x = "unclosed words here\ny = "other words"\n', "python") == {PAIR + "other&word": 1}


def test_a_pasted_error_message_ranks_the_line_that_raises_it_first():
    """The message's words are everywhere in a codebase about them; written next to each other,
    in a string, only where it is raised."""
    def code(path, text):
        return Document(docid=path, text=text, source_path=path, start_line=1, end_line=text.count("\n"),
                        language="python")

    raises = code("src/keywords.py", "def check(keys):\n    for key in keys:\n"
                  "        yield ValidationError(f\"{key!r} is a required property\")\n")
    talks = code("src/schema.py", "def describe(schema):\n    # required\n    if schema.get('property') is None:\n"
                 "        raise ValidationError(schema)\n")
    docs = [code(f"other/m{i}.py", f"def unrelated_{i}():\n    return {i}\n") for i in range(40)] + [talks, raises]
    message = "ValidationError: 'name' is a required property"
    assert ranked_paths(docs, message)[0] == "src/keywords.py"
    assert ranked_paths(docs, message, identifier_pair_weight=0.0)[0] == "src/schema.py"


def test_only_a_question_asks_for_pair_terms_not_an_identifier_or_a_pasted_report():
    from retrieval.lexical.features import PAIR
    from retrieval.query import plan_query

    def pairs(query):
        return {t for t in plan_query(query, RankingConfig()).weights if t.startswith(PAIR)}

    assert pairs("connection pool size") == {PAIR + "connect&pool", PAIR + "connect&size", PAIR + "pool&size"}
    assert pairs("ConnectionPool") == set()  # its definition and whole-word terms already say it
    assert pairs("connection pool " + " ".join(f"word{i}" for i in range(40))) == set()
    assert not {t for t in plan_query("connection pool", RankingConfig().replace(identifier_pair_weight=0)).weights
                if t.startswith(PAIR)}


def test_with_the_pair_weight_0_nothing_asks_for_pairs_and_the_index_holds_none():
    from retrieval.lexical.features import PAIR

    def pair_terms_indexed(**config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index([doc("a.py", "pool = ConnectionPool()\n")])
        return {t for v in retriever._views for t in v.segment.terms() if t.startswith(PAIR)}

    assert pair_terms_indexed() == {PAIR + "connect&pool"}
    assert pair_terms_indexed(identifier_pair_weight=0.0) == set()


def test_pair_terms_lengthen_no_chunk_so_identifiers_and_reports_rank_exactly_as_without_them():
    docs = FILLER + [doc("src/pool.py", "class ConnectionPool:\n    max_size = 10\n    def get_conn(self): ...\n"),
                     doc("src/conn.py", "def connect(pool_size):\n    return open_connection(pool_size)\n")]
    report = "ConnectionPool max_size ignored when pool_size set " + " ".join(f"word{i}" for i in range(40))

    def answers(query, **config):
        retriever = LexicalRetriever(ranking=RankingConfig().replace(**config))
        retriever.index(docs)
        return [(h.docid, h.score) for h in retriever.search_detailed(query, 10)], list(retriever._views[0].segment.lens)

    for query in ("ConnectionPool", "get_conn", report):
        assert answers(query) == answers(query, identifier_pair_weight=0.0)


def test_a_file_whose_name_the_query_spells_out_ranks_first():
    body = "def start(self):\n    self.poll_changes()\n"
    docs = FILLER + [doc("src/loop.py", body + "# watcher watcher\n"), doc("src/watcher.py", body)]
    assert ranked_paths(docs, "watcher poll changes")[0] == "src/watcher.py"
    assert ranked_paths(docs, "watcher poll changes", filename_boost=1.0)[0] == "src/loop.py"


def test_a_file_name_only_partly_spelled_by_the_query_gets_no_file_name_boost():
    body = "def start(self):\n    self.poll_changes()\n"
    docs = FILLER + [doc("src/loop.py", body + "# watcher watcher\n"), doc("src/watcher_state.py", body)]
    assert ranked_paths(docs, "watcher poll changes")[0] == "src/loop.py"
    assert ranked_paths(docs, "watcher state poll changes")[0] == "src/watcher_state.py"  # every word of it


def test_a_bare_identifier_names_the_code_defining_it_not_a_test_example_or_docs_page_named_so():
    """aeson's benchmark, example and test `Options.hs` ranked above its `Options` type, and
    alamofire's rendered `docs/Structs/GoogleXSSIPreprocessor.html` (and its docset copy) above
    the struct: the name prior boosted them all as the type's own files."""
    definition = "data Options = Options\n" + "".join(f"  , field{i} :: String -> Bool\n" for i in range(30)) + "  }\n"
    uses = "import Options\n\nmain = run Options { verbose = True }\n-- Options Options\n"
    page = "<html><title>Options Structure Reference</title>\n<h1>Options</h1>\n<p>Options</p></html>\n"
    docs = FILLER + [doc("src/Data/Aeson/Types/Internal.hs", definition), doc("tests/Options.hs", uses),
                     doc("examples/src/Options.hs", uses), doc("benchmarks/bench/Options.hs", uses),
                     doc("docs/Structs/Options.html", page)]
    assert ranked_paths(docs, "Options")[0] == "src/Data/Aeson/Types/Internal.hs"
    # Without a definition, a source file named so is still the name's own file.
    named = FILLER + [doc("src/Run.hs", uses), doc("src/Options.hs", uses), doc("tests/Options.hs", uses)]
    assert ranked_paths(named, "Options")[0] == "src/Options.hs"


def test_a_query_spells_a_file_name_when_one_of_its_words_is_that_name():
    from retrieval.ranking import spells_file_name

    assert spells_file_name("how does JsonReader skip comments", "src/Newtonsoft.Json/JsonReader.cs")
    assert spells_file_name("where json_reader skips comments", "src/JsonReader.cs")
    assert spells_file_name("the config.lua defaults", "lua/telescope/config.lua")
    assert not spells_file_name("how does the reader skip comments", "src/JsonReader.cs")
    assert not spells_file_name("which api is public", "pkg/api.py")  # too short to be a name


def test_a_symbol_query_prefers_the_file_named_after_it():
    docs = FILLER + [doc("lib/http.js", "const a = new Axios()\nAxios.create()\nAxios.get()\nAxios.put()\n"),
            doc("lib/Axios.js", "function request(config) {\n  return dispatch(config, defaults)\n}\n")]
    assert ranked_paths(docs, "Axios")[0] == "lib/Axios.js"
    assert ranked_paths(docs, "Axios", symbol_filename_boost=1.0)[0] == "lib/http.js"


def test_a_file_named_after_a_qualified_names_member_yields_to_one_named_after_its_owner():
    """cats: `Kleisli.andThen` put `AndThen.scala` (named after the member alone) above the method
    in `Kleisli.scala`. Under the owner's directory (tokio's `task/spawn.rs` for `task::spawn`) the
    member's file keeps its boost."""
    member = ("final class AndThen[-T, +R] {\n  def andThen[A](g: R => A): AndThen[T, A] =\n"
              "    AndThen(this).andThen(g)\n}\n")
    owner = ("final case class Kleisli[F[_], A, B](run: A => F[B]) {\n"
             + "".join(f"  def step{i}(a: A): F[B] = run(a)\n" for i in range(12))
             + "  def andThen[C](k: Kleisli[F, B, C]): Kleisli[F, A, C] =\n    Kleisli(a => k.run(a))\n}\n")
    docs = FILLER + [doc("data/AndThen.scala", member), doc("data/Kleisli.scala", owner)]
    assert ranked_paths(docs, "Kleisli.andThen")[0] == "data/Kleisli.scala"
    assert ranked_paths(docs, "andThen")[0] == "data/AndThen.scala"  # the member alone: its file
    spawn = "pub fn spawn<F>(future: F) -> JoinHandle<F::Output> {\n    context::spawn(future)\n}\n"
    task = ("pub struct Task {\n" + "".join(f"    field{i}: usize,\n" for i in range(12))
            + "}\nimpl Task {\n    pub fn spawn(&self) {}\n}\n")
    docs = FILLER + [doc("src/task/spawn.rs", spawn), doc("src/task.rs", task)]
    assert ranked_paths(docs, "task::spawn")[0] == "src/task/spawn.rs"
    # The nearest owner only: every file of `ActiveRecord::Base.transaction` is under `active_record/`.
    other = ("module ActiveRecord\n  class Transaction\n" + "".join(f"    def step{i}; end\n" for i in range(12))
             + "  end\nend\n")
    base = ("module ActiveRecord\n  class Base\n" + "".join(f"    def helper{i}; end\n" for i in range(12))
            + "    def transaction(options = {})\n      connection.transaction(options)\n    end\n  end\nend\n")
    docs = FILLER + [doc("active_record/connection/transaction.rb", other), doc("active_record/base.rb", base)]
    assert ranked_paths(docs, "ActiveRecord::Base.transaction")[0] == "active_record/base.rb"
    # A file named after the member that does not define it is no answer: rails's builder
    # `associations/builder/has_many.rb` (class HasMany) came first for `Associations.has_many`.
    builder = "module Associations\n  class HasMany < CollectionAssociation\n    def self.macro\n      :has_many\n    end\n  end\nend\n"
    owner = ("module Associations\n  def has_many(name, scope = nil, **options)\n"
             "    Builder::HasMany.build(self, name, scope, options)\n  end\nend\n")
    docs = FILLER + [doc("associations/builder/has_many.rb", builder, language="ruby"),
                     doc("associations.rb", owner, language="ruby")]
    assert ranked_paths(docs, "Associations.has_many")[0] == "associations.rb"


def test_a_symbol_s_own_file_ranks_before_the_other_parts_of_a_partial_class():
    """Both define the class under its exact spelling, in chunks of about one length: the file
    named for it is its own (the name's whole stem), the other one part of it."""
    part = ("public abstract partial class JToken\n{\n"
            + "".join(f"    public Task WriteTo{i}Async() {{ return null; }}\n" for i in range(2)) + "}\n")
    main = ("/// <summary>Represents an abstract JSON token.</summary>\n"
            "public abstract partial class JToken : IJEnumerable<JToken>, IJsonLineInfo, ICloneable\n{\n"
            + "".join(f"    private JToken _field{i};\n" for i in range(2)) + "}\n")
    docs = FILLER + [doc("Linq/JToken.Async.cs", part), doc("Linq/JToken.cs", main)]
    assert ranked_paths(docs, "JToken")[0] == "Linq/JToken.cs"
    assert ranked_paths(docs, "JToken", exact_filename_boost=1.0)[0] == "Linq/JToken.Async.cs"


def test_the_exact_spelling_of_a_file_name_breaks_a_case_insensitive_tie():
    docs = FILLER + [doc("lib/axios.js", "Axios.create()\n"), doc("lib/core/Axios.js", "Axios.create()\n")]
    assert ranked_paths(docs, "Axios")[0] == "lib/core/Axios.js"
    assert ranked_paths(docs, "Axios", exact_filename_boost=1.0)[0] == "lib/axios.js"  # tie: path order


def test_a_symbol_query_prefers_the_definition_with_its_exact_spelling():
    docs = FILLER + [doc("src/a.ts", "export const vitest = vitest\n"), doc("src/b.ts", "export class Vitest {\n}\n")]
    assert ranked_paths(docs, "Vitest")[0] == "src/b.ts"
    assert ranked_paths(docs, "Vitest", exact_definition_weight=0, capitalised_exact_weight=0)[0] == "src/a.ts"


def test_a_capitalised_identifier_finds_the_type_spelled_so_above_a_short_method_of_its_folded_name():
    """`Deserialize` asks for the trait: a short `impl Deserialize for Bound` defines `deserialize`,
    whose case-folded term is the trait's, and outranked the trait's long chunk on length alone."""
    trait = ("pub trait Deserialize<'de>: Sized {\n" + "    /// Deserialize this value from the given deserializer.\n" * 20
             + "    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>\n    where\n        D: Deserializer<'de>;\n}\n")
    impl = "impl<'de> Deserialize<'de> for Bound {\n    fn deserialize<D>(d: D) -> Result<Self, D::Error> {\n        todo!()\n    }\n}\n"
    docs = FILLER + [doc("src/de/mod.rs", trait), doc("src/de/impls.rs", impl)]
    assert ranked_paths(docs, "Deserialize")[0] == "src/de/mod.rs"
    assert ranked_paths(docs, "deserialize")[0] == "src/de/impls.rs"  # the method's own spelling: as before
    assert ranked_paths(docs, "Deserialize", capitalised_exact_weight=0.5)[0] == "src/de/impls.rs"


def test_locals_calls_imports_and_trait_impls_are_not_definitions():
    assert defined_names("function f() {\n  const vitest = 1\n}\n", "typescript") == {"f"}
    assert defined_names("x: Annotated[Creds, Depends(security)]\n", "python") == set()
    assert defined_names("import {\n  type inferInput,\n} from './x'\n", "typescript") == set()
    # a Rust impl adds to a type defined elsewhere: neither the trait nor the type (the syntax tree's reading)
    assert defined_names("impl Serialize for Config {\n", "rust") == set()
    assert defined_names("impl<T> Deserialize<'de> for Vec<T> {\n", "rust") == set()
    assert defined_names("fun launch(block: () -> Unit) {\n", "kotlin") == {"launch"}
    assert defined_names("nvm_install() {\n", "bash") == {"nvm_install"}
    # a call with type arguments on a wrapped argument line (only C# and Dart declare `name<T>(`)
    assert defined_names("        v, static_cast<size_t>(n),\n", "cpp") == set()
    assert defined_names("    a: new Set<string>(),\n", "typescript") == set()


@pytest.mark.parametrize("language, unmarked, marked", [
    ("haskell", "gridTableWith :: Int -> Int\ngridTableWith x = gridTableWith' x\n",
     "gridTableWith' :: Int -> Int\ngridTableWith' x = x + 1\n"),
    ("ruby", "def save\n  save!\nrescue StandardError\n  false\nend\n", "def save!\n  raise unless valid?\nend\n"),
])
def test_a_name_with_a_prime_or_bang_finds_its_own_definition_before_the_unmarked_one(language, unmarked, marked):
    """pandoc's `gridTableWith'` ranked `gridTableWith` first, rated high: the query asked for the
    unmarked name's definition as strongly as for its own."""
    symbol = marked.split()[1] if language == "ruby" else marked.split()[0]
    docs = FILLER + [doc("src/a", unmarked, language=language), doc("src/b", marked, language=language)]
    assert ranked_paths(docs, symbol)[0] == "src/b"
    assert ranked_paths(docs, symbol.rstrip("!'"))[0] == "src/a"


def test_a_qualified_query_finds_the_definition_named_so_whole():
    """`Phoenix.Socket` ranked phoenix's JavaScript client first, rated high: it defines a `Phoenix`
    and a `Socket` apart, and `defmodule Phoenix.Socket` counted as a definition of `Socket` only."""
    client = ("var Phoenix = (() => {\n  class Socket {\n    constructor(endPoint) { this.socket = null }\n"
              "    connect() { this.socket = new WebSocket(this.endPoint) }\n  }\n"
              "  return { Socket: Socket, Channel: Channel }\n})();\n")
    module = ('defmodule Phoenix.Socket do\n  @moduledoc """\n  A socket implementation.\n  """\n'
              "  def connect(params, socket), do: {:ok, socket}\nend\n")
    docs = FILLER + [doc("priv/static/phoenix.js", client, language="javascript"),
                     doc("lib/phoenix/socket.ex", module, language="elixir")]
    assert ranked_paths(docs, "Phoenix.Socket")[0] == "lib/phoenix/socket.ex"
    assert definitions_and_members("class ActiveStorage::Blob < Base\n", "ruby")[1] == {"ActiveStorage.Blob"}


def test_a_shell_function_named_with_hyphens_is_defined_and_found_by_its_whole_name():
    """bash-it's `_bash-it-search-help` was defined as `_bash` (the keyword pattern stopped at the
    hyphen), and its query asked for definitions of `_bash`, `search`, `help` apart: a function
    defining `_bash-it-erase-term` came first, rated high, and the definition was not in the top 5."""
    assert defined_names("function _bash-it-search-help() {\n", "bash") == {"_bash-it-search-help"}
    assert defined_names("function bash-it {\n  :\n}\n", "bash") == {"bash-it"}
    assert defined_names("alias git-root='git rev-parse'\nalias gs='git status'\n", "bash") == {"git-root", "gs"}
    assert defined_names("function cht.sh() {\n}\n", "bash") == {"cht.sh"}  # (not `cht`, nor `sh`)
    assert defined_names("Function Get-Item {\n}\nfunction global:Get-Thing {\n}\n", "powershell") == \
        {"Get-Item", "Get-Thing"}
    callers = [doc(f"lib/search{i}.bash", f"function _bash-it-search-{i}() {{\n  _bash-it-search-help\n"
                                        "  echo 'search help: search the help, search it'\n}\n", language="bash")
               for i in range(4)]
    definition = doc("lib/helpers.bash", "function _bash-it-search-help() {\n  echo usage\n}\n", language="bash")
    assert ranked_paths(FILLER + callers + [definition], "_bash-it-search-help")[0] == "lib/helpers.bash"
    # A hyphenated file name asks for the file, not for a function named like it.
    script = doc("scripts/build-docs.sh", "#!/bin/sh\nmake -C docs html\n", language="bash")
    task = doc("lib/tasks.sh", "build-docs() {\n  make -C docs html\n}\n", language="bash")
    assert ranked_paths(FILLER + [script, task], "build-docs.sh")[0] == "scripts/build-docs.sh"


@pytest.mark.parametrize("language,text,names", [
    ("go", "type S struct {\n\tfn func() error\n\tdata map[string]any\n}\n", {"S"}),
    ("csharp", "        object value = formatter.Deserialize(ref reader);\n", set()),
    ("typescript", "const isBinary =\n  data instanceof ArrayBuffer\n", {"isBinary"}),
    ("elixir", "  alias Phoenix.Controller\n  Enum.map(conns,\n    fn conn -> conn end)\n", set()),
    ("python", '    """\n    function to call on each chunk.\n    """\n', set()),
])
def test_a_word_that_is_another_language_s_definition_keyword_defines_nothing(language, text, names):
    """A field, a local or a comment whose first word is a keyword elsewhere (`fn`, `data`, `object`,
    `alias`, `function`): one keyword list for every language defined `map`, `value`, `conn`."""
    assert defined_names(text, language) == names


@pytest.mark.parametrize("language,text,names", [
    ("haskell", "data Maybe a = Nothing | Just a\nnewtype Id = Id Int\ntype family F a\n", {"Maybe", "Id", "F"}),
    ("kotlin", "data class User(val id: Int)\nobject Registry\nenum class Color { RED }\nfun interface Action {\n",
     {"User", "Registry", "Color", "Action"}),
    ("perl", "sub parse_args {\n    my ($data) = @_;\n", {"parse_args"}),
    ("go", "func (s *Server) Run() error {\n", {"Run"}),
    ("cpp", "enum class Color { red };\n", {"Color"}),
    ("c", "typedef struct node {\n  int v;\n} node_t;\ntypedef enum {\n  A\n} mode_t;\n", {"node", "node_t", "mode_t"}),
    ("csharp", "public readonly record struct Point(int X, int Y);\n", {"Point"}),
    ("swift", "    override class func canInit(with request: URLRequest) -> Bool {\n", {"canInit"}),
    # Elixir's protocols and delegated functions are definitions; an implementation is not
    ("elixir", "defprotocol Queryable do\n  def to_query(expr)\nend\ndefdelegate fetch(term, key), to: Map\n"
     "defimpl Queryable, for: Atom do\n", {"Queryable", "to_query", "fetch"}),
    # a language's own modifiers: a `const` before `fn` or `enum` is no binding of `fn`
    ("rust", 'pub const fn foo() {}\nconst unsafe fn bar() {}\npub(crate) const fn baz() {}\n'
     'pub unsafe extern "C" fn ext() {}\npub const MAX: usize = 3;\n', {"foo", "bar", "baz", "ext", "MAX"}),
    ("typescript", "export const enum Direction { Up }\n", {"Direction"}),
    ("kotlin", "annotation class Marker\nclass Outer {\n    inner class Inner {\n    }\n    companion object Factory {\n"
     "    }\n}\nexpect class Lock\n", {"Marker", "Outer", "Inner", "Factory", "Lock"}),
    # Kotlin's extension functions: the receiver type (and its arguments) is not the name
    ("kotlin", "public fun <T> Flow<T>.collectLatest(action: suspend (T) -> Unit) {\n"
     "internal actual suspend fun Promise<ArrayBuffer>.awaitBuffer(): ArrayBuffer =\n", {"collectLatest", "awaitBuffer"}),
    # C#'s generic methods: type parameters between the name and its parameters
    ("csharp", "    public override string Serialize<T>(T input)\n    public static TResult Map<TSource, TResult>(\n",
     {"Serialize", "Map"}),
])
def test_a_definition_keyword_defines_in_its_own_language_and_a_run_of_them_names_the_word_after(
        language, text, names):
    """`enum class Color` defined `class`, `type family F` `family`, `typedef enum {` `enum`."""
    assert defined_names(text, language) == names


@pytest.mark.parametrize("language,text,names", [
    # C's `struct`, `enum` before a parameter, a variable or a forward declaration name a type in use
    ("c", "struct Curl_easy *data;\nstatic enum alpnid pick(int a)\nstruct node;\nstruct timeval tv;\n", {"pick"}),
    # a C `const` qualifies a type; no binding of `char`
    ("c", 'const char *name = "x";\n', set()),
    # a label or a statement ending in `:` is no annotation reaching the next `=` below
    ("c", "out:\n  x = 1;\n", set()),
    ("python", "try:\n    import x\nexcept E:\n    pass\nTESTS: tuple[\n    int,\n] = (1,)\n", {"TESTS"}),
    ("cpp", "std::string name(int a) {\n  int x = a;\n", {"name"}),
    # (Haskell's signature `render:: Int` still defines, C++'s `std::string` does not)
    ("haskell", "render:: Int\n  -> Text\nrender n = pack (show n)\n", {"render"}),
    # a binding to an import names another module
    ("zig", 'const std = @import("std");\npub const Server = struct {};\n', {"Server"}),
    ("javascript", "var express = require('express')\n", set()),
    # a call handing over a function, a call in an export or an object: no definitions
    ("javascript", "describe('res', function () {\n  it('works', function (done) {\n", set()),
    ("typescript", "export default defineConfig({\n  date: new Date(),\n  provider: playwright(),\n", set()),
    # an anonymous function's parameters are no receiver; reserved words name nothing
    ("php", "        static function ($r) use (&$h) {\n            get: fn () => 1,\n", set()),
    ("lua", "function (res)\n  return res\nend\n", set()),
    ("c", "static int (*create_fptr)(pthread_t *thread,\n    void *arg);\n", set()),
    # (a doc comment's tag is no annotation outside the languages that write them before a keyword)
    ("cpp", "@brief namespace for Niels\n", set()),
    # Kotlin declares every function with `fun`: a supertype's constructor call, a getter, a function
    # type and a Gradle script's assignment are no definitions; `const val X` is X's
    ("kotlin", "class FlowScopeTest : TestBase() {\n    val x: String get() = content\n"
     "    block: suspend () -> T\n", {"FlowScopeTest"}),
    ("kotlin", 'description = "Ktor"\nrootProject.name = "ktor"\n', set()),
    ("kotlin", "private const val BUFFER_END: Long = 0\n", {"BUFFER_END"}),
    # C#'s `new()` constraint
    ("csharp", "    void Run<T2>() where T2 : IDisposable, new()\n", {"Run"}),
    # a Go receiver is on its keyword's line: a `type (` group is none (it defined the `func` below)
    ("go", "type (\n\tformBinding struct{}\n)\n\nfunc (formBinding) Name() string {\n", {"formBinding", "Name"}),
    # a Rust trait impl's `type Output = T;` binds the trait's associated type (a trait declares one)
    ("rust", "impl Future for Sleep {\n    type Output = ();\n    fn poll(&mut self) {}\n}\n"
     "trait Stream {\n    type Item;\n}\npub type Result<T> = std::result::Result<T, Error>;\n",
     {"poll", "Stream", "Item", "Result"}),
    # an Elixir heredoc's example code is documentation (the chunk may start inside one)
    ("elixir", 'defmodule Repo do\n  @moduledoc """\n  Example:\n\n      defmodule User do\n'
     '        def changeset(user), do: user\n      end\n  """\n  def all(q), do: q\nend\n', {"Repo", "all"}),
    ("elixir", '      def changeset(user), do: user\n  """\n  def insert(s) do\n', {"insert"}),
    ("elixir", '  def render do\n    string =\n      """\n      def fake\n      """\n  end\n', {"render"}),
    # a Rust macro template's metavariables name the macro's arguments
    ("rust", "macro_rules! mk {\n    ($name:ident, $t:ty) => {\n        fn $name() {}\n        struct $t;\n"
     "        pub fn helper_$name() {}\n    };\n}\n", {"mk"}),
    # a Haskell instance and a Swift extension add to a class or type defined elsewhere (as Rust's `impl`)
    ("haskell", "instance FromJSON Value where\n  parseJSON = undefined\ndata instance Fam Int = A\n", set()),
    ("swift", "extension DataRequest {\n}\nextension Int: ConstraintConstantTarget {}\n", set()),
    # C++'s call operator defines no `operator`; a C prototype wrapped over lines is a declaration
    ("cpp", "  To operator()(T&& v) const {\n  bool operator==(const A& other) const {\n", set()),
    ("c", "CURLcode Curl_cf_def_send(struct Curl_cfilter *cf,\n                          int x);\n", set()),
    # a Ruby heredoc is a string: the app file a Rails test writes defines nothing of the test's
    ("ruby", 'class EngineTest\n  def test_x\n    write "a.rb", <<~RUBY\n      class PostsController\n'
     '        def index; end\n      end\n    RUBY\n  end\n  # doc: execute <<~SQL\n  def after; end\nend\n',
     {"EngineTest", "test_x", "after"}),
])
def test_what_the_syntax_tree_reads_as_no_definition_the_patterns_do_not_define(language, text, names):
    """With the syntax tree as the oracle: type uses, labels, imports, calls and keywords were definitions."""
    assert defined_names(text, language) == names


@pytest.mark.parametrize("language,text,names", [
    ("c", "typedef uint32_t WORD;\ntypedef struct ring_s ring_t;\ntypedef char buf_t[16];\n", {"WORD", "ring_t", "buf_t"}),
    ("php", "    public function use(array $middleware)\n", {"use"}),
    # Java's methods with their body on the line, without one, after an annotation; not a call's
    # wrapped arguments, an assertion or a `default:` branch
    ("java", "    public int size() { return size; }\n    public abstract <K, V> Map<K, V[]> m10();\n"
     "    @Override public int hashCode() { return a; }\n                property, handledType());\n"
     "        assert check(x);\n        default: run(x);\n", {"size", "m10", "hashCode"}),
    # annotations and Scala's qualified access before the keyword; Scala's calls are no signatures
    ("scala", "private[http4s] abstract class Cookies(p: P) {\n  @inline final def apply[A](implicit ev: S[A]): S[A] = ev\n"
     "class T extends Suite() {\n    val Left(_) = decoded\n", {"Cookies", "apply", "T"}),
    ("swift", "    @discardableResult public func bar(x: Int) -> Int {\n", {"bar"}),
    # C's and C++'s functions with their body on the line; not a wrapped call, nor a conversion
    # operator's type
    ("cpp", "  void clear() { Size = 0; }\n      a, f(y));\n  explicit operator bool() const { return ok_; }\n"
     "  operator uint32_t() const {\n", {"clear"}),
    ("c", "static int one(void) { return 1; }\nint proto(int a);\n", {"one"}),
    # after C++11 (and C23) attributes on the line; a declaration still defines nothing
    ("cpp", "[[nodiscard]] inline bool SimpleAtoi(absl::string_view s, int* out) {\n"
     "  [[nodiscard, gnu::pure]] [[deprecated(\"no\")]] int size() const { return n_; }\n"
     "[[nodiscard]] std::string StrCat(const AlphaNum& a);\n      [[fallthrough]];\n", {"SimpleAtoi", "size"}),
    ("c", "[[nodiscard]] static int parse(const char *s) {\n", {"parse"}),
    # the Lisps' defining forms, the name as written; Tcl's procedures (a namespaced one's last part),
    # not `namespace eval` nor a `name ::` signature
    ("clojure", "(ns my.app)\n(defn foo [x] x)\n(defn- bar [y] y)\n(defmacro baz [y] y)\n(def x 1)\n  (inc x)\n",
     {"foo", "bar", "baz", "x"}),
    ("elisp", "(defun my-mode-setup ()\n  (setq x 1))\n(defcustom my-opt nil \"doc\")\n(provide 'my-mode)\n",
     {"my-mode-setup", "my-opt"}),
    ("scheme", "(define (square x) (* x x))\n(define-syntax swap!\n", {"square", "swap!"}),
    ("tcl", "proc wait_for_ofs_sync {r1 r2} {\n    wait_for_condition 50 100 {\n    }\n}\n"
     "proc ::redis::reconnect {} {\n}\nnamespace eval ::tester {\n}\n", {"wait_for_ofs_sync", "reconnect"}),
    # C#'s methods after attributes on the line, with an expression body or none (abstract, an
    # interface's); not a call, a lambda, a property or a wrapped call's arguments
    ("csharp", "    [Benchmark] public object AnswerSerialize() => this.Serialize(a);\n"
     "    public override string ToString() => Name;\n    public abstract void Write(JsonWriter writer);\n"
     "    public int Count => items.Count;\n        DoWork(a, b);\n        Func<int, int> f = (x) => x;\n"
     "            property, handledType());\n        var t = Task.Run(() => Work());\n",
     {"AnswerSerialize", "ToString", "Write"}),
    # Kotlin's `fun<T>` without a blank, an extension property (its name, not its receiver type)
    ("kotlin", "    private fun<T> interceptNormalMethod(\npublic val ApplicationCall.locale: Locale get() = x\n",
     {"interceptNormalMethod", "locale"}),
    # Go's declaration groups declare each member's name (not a value's or a body's lines)
    ("go", 'const (\n\t// DebugMode is debug.\n\tDebugMode = "debug"\n\tdebugCode = iota\n\treleaseCode\n)\n'
     "var (\n\tJSON = jsonBinding{}\n\ta, b = 1, 2\n\tnames = []string{\n\t\t\"x\",\n\t}\n\t_ = 3\n)\n",
     {"DebugMode", "debugCode", "releaseCode", "JSON", "a", "b", "names"}),
    # Rust's statics, and its `const` items at any depth (an item, never a local)
    ("rust", "pub static COUNTER: AtomicUsize = X;\nstatic mut STATE: u8 = 0;\nfn t() {\n    const N: usize = 64;\n"
     "    let m = 1;\n}\n", {"COUNTER", "STATE", "t", "N"}),
    # TypeScript's ambient declarations
    ("typescript", "declare class Axios {}\nexport declare function f(a: number): void;\ndeclare const axios: Static;\n"
     "declare let __MODE__: string\ndeclare namespace NS {\n", {"Axios", "f", "axios", "__MODE__", "NS"}),
    # Elixir's one-line function without parameters
    ("elixir", "  def __sockets__, do: []\n  defp deps, do: []\n", {"__sockets__", "deps"}),
    # a Haskell class after its superclass context (not the superclass)
    ("haskell", "class Monoid pairs => FromPairs enc pairs | enc -> pairs where\n"
     "class (Eq a, Show a) => Pretty a where\n", {"FromPairs", "Pretty"}),
    # a C function-type typedef wrapped over lines; a C function whose body opens on a later line
    ("c", "typedef void Curl_cft_close(struct Curl_cfilter *cf,\n    struct Curl_easy *data);\n"
     "int main(int argc,\n         char **argv)\n{\n  return f(argc);\n}\n", {"Curl_cft_close", "main"}),
])
def test_forms_the_syntax_tree_reads_as_definitions_the_patterns_define_too(language, text, names):
    """`typedef uint32_t WORD;` defined `uint32_t`, `public int size() { return size; }` and `@inline
    final def apply` nothing; a PHP method may be named by a reserved word."""
    assert defined_names(text, language) == names


def test_copied_in_releases_and_generated_files_rank_below_source():
    body = "function tokenize(input) {\n  return input.split(' ')\n}\n"
    for other in ("static/jquery-3.5.1.js", "dist/app.min.js", "client/core/serverSentEvents.gen.ts",
                  "api/v1/zz_generated.deepcopy.go", "lib/model.g.dart", "gradlew", "sub/mvnw",
                  # a lockfile names every package: vitest's pnpm-lock.yaml came 5th for `vi.useFakeTimers`
                  "pnpm-lock.yaml", "web/package-lock.json", "Cargo.lock", "go.sum", "poetry.lock"):
        docs = FILLER + [doc(other, body + "tokenize(input)\ntokenize(input)\n"), doc("src/lexer.js", body)]
        assert ranked_paths(docs, "tokenize input")[0] == "src/lexer.js", other
        assert ranked_paths(docs, "tokenize input", vendor_penalty=1.0, generated_penalty=1.0)[0] == other


def test_test_files_are_told_by_their_names_and_directories_not_by_a_word_ending():
    from retrieval.ranking import _path_classes

    tests = ["tests/test_app.py", "test/helper.rb", "spec/models/user.rb", "src/__tests__/a.js",
             "pkg/server_test.go", "lib/router.test.js", "src/app.spec.ts", "app/models/user_spec.rb",
             "src/main/java/FooTest.java", "Foo.Tests/BarTests.cs", "core/src/CodecSpec.scala",
             "pkg/testdata/input.go", "test_utils/helpers.py", "fixtures/data.py"]
    not_tests = ["src/latest.py", "lib/contest.js", "pkg/attest.go", "src/greatest.rs", "src/respec.ts",
                 "src/Contest.java", "src/protest.py", "src/manifest.py", "src/inspect.py", "lib/Latest.kt"]
    assert [p for p in tests if not _path_classes(p)[0]] == []
    assert [p for p in not_tests if _path_classes(p)[0]] == []


def test_benchmark_scripts_are_told_by_their_names_like_tests():
    from retrieval.ranking import _path_classes

    for path in ("scripts/bench_speed.py", "pkg/parser_bench.go", "tools/benchmark_io.py", "benches/x.rs"):
        assert _path_classes(path)[1], path
    for path in ("src/bench.py", "src/workbench.py", "src/benchmarking.py"):
        assert not _path_classes(path)[1], path


def test_a_qualified_name_is_split_at_any_language_s_scope_separator():
    from retrieval.ranking import qualified_name

    assert qualified_name("Router.add_route") == ("Router", "add_route")
    assert qualified_name("std::vec::Vec") == ("std", "vec", "Vec")
    assert qualified_name("Model#save") == ("Model", "save")
    assert qualified_name("add_route") == ()  # nothing said about the scope
    assert qualified_name("how routes are added") == ()


def test_an_elixir_arity_names_the_function_not_a_path():
    from retrieval.ranking import qualified_name, symbol_key

    assert qualified_name("Phoenix.Controller.redirect/2") == ("Phoenix", "Controller", "redirect")
    assert symbol_key("Phoenix.Controller.redirect/2") == "redirect"
    assert symbol_key("Enum.map/2") == "map" and symbol_key("valid?/1") == "valid?"
    assert symbol_key("src/click/core.py") == "core"  # a path stays a path


def test_a_scope_path_agrees_when_it_ends_with_the_qualified_name():
    from retrieval.ranking import scope_agrees

    assert scope_agrees("APIRouter.add_api_route", ("APIRouter", "add_api_route"))
    assert scope_agrees("module fastapi.routing.APIRouter.add_api_route", ("APIRouter", "add_api_route"))
    assert scope_agrees("impl Service for Router.call", ("Router", "call"))
    assert scope_agrees("impl<T> Vec<T>.push", ("Vec", "push"))
    assert scope_agrees("App\\Http.Kernel.handle", ("Kernel", "handle"))  # a PHP namespace
    assert scope_agrees("App\\Http\\Kernel", ("Http", "Kernel"))
    assert not scope_agrees("FastAPI.add_api_route", ("APIRouter", "add_api_route"))
    assert not scope_agrees("APIRouter", ("APIRouter", "add_api_route"))
    assert not scope_agrees("", ("Router", "call"))


def test_a_scope_path_agrees_with_scopes_between_the_name_s_parts_only_when_asked():
    """A function an Elixir macro defines (`defmacro __using__` ... `def insert`) is
    `Ecto.Repo.__using__.insert`: `Ecto.Repo.insert` names it, with its last part last."""
    from retrieval.ranking import scope_agrees

    assert not scope_agrees("Ecto.Repo.__using__.insert", ("Ecto", "Repo", "insert"))
    assert scope_agrees("Ecto.Repo.__using__.insert", ("Ecto", "Repo", "insert"), gaps=True)
    assert scope_agrees("Ecto.Repo.__using__.insert", ("Repo", "insert"), gaps=True)
    assert not scope_agrees("Ecto.Multi.insert", ("Ecto", "Repo", "insert"), gaps=True)
    # A Rust impl head is one scope whatever paths it writes: serde's `de::Deserializer` agreed with
    # the `type Deserializer` of `impl<'de> de::IntoDeserializer<'de, E> for Unit`, a scope `de`.
    head = "impl<'de, E> de::IntoDeserializer<'de, E> for UnitDeserializer<E>.Deserializer"
    assert not scope_agrees(head, ("de", "Deserializer"), gaps=True)
    assert scope_agrees(head, ("UnitDeserializer", "Deserializer"))
    assert scope_agrees("impl fmt::Display for Error.fmt", ("Error", "fmt"))
    # ... its type counted by its last path component, generics dropped, nested ones too.
    assert scope_agrees("impl From<Error> for io::Error.from", ("Error", "from"))
    assert scope_agrees("impl<'a, T: Into<Vec<u8>>> de::Foo<'a, T>.bar", ("Foo", "bar"))
    assert not scope_agrees("Ecto.Repo.__using__.insert", ("Repo", "Ecto", "insert"), gaps=True)  # in order
    assert not scope_agrees("Ecto.Repo.insert.helper", ("Repo", "insert"), gaps=True)  # the last part last


def test_a_qualified_query_takes_a_path_with_scopes_between_its_parts_when_none_agrees_whole():
    from retrieval.records import Document
    from retrieval.retrievers.lexical import LexicalRetriever

    def scoped(path, text, context):
        end = 1 + text.count("\n")
        return Document(docid=f"{path}:1-{end}", text=text, source_path=path, start_line=1, end_line=end,
                        context=context, language="elixir")

    docs = [scoped("lib/ecto/multi.ex", "def insert(multi, name, changeset) do\n  add(multi, name, :insert)\nend\n"
                   "# Ecto.Repo.insert/2 runs it; see Ecto.Repo\n", "Ecto.Multi.insert"),
            scoped("lib/ecto/repo.ex", "def insert(struct, opts \\\\ []) do\n  Schema.insert(__MODULE__, struct, opts)\nend\n",
                   "Ecto.Repo.__using__.insert")]
    retriever = LexicalRetriever()
    retriever.index(docs)
    assert retriever.search_detailed("Ecto.Repo.insert", 2)[0].source_path == "lib/ecto/repo.ex"


def test_a_scope_path_agrees_in_exact_case_only_when_asked():
    from retrieval.ranking import scope_agrees

    assert scope_agrees("RouterGroup.handle", ("RouterGroup", "Handle"))
    assert not scope_agrees("RouterGroup.handle", ("RouterGroup", "Handle"), exact=True)
    assert scope_agrees("impl Service for Router.call", ("Router", "call"), exact=True)


def test_member_definitions_name_the_owner_of_each_definition_by_indentation_or_receiver():
    from retrieval.lexical.features import member_definitions

    python = ["class Group(MultiCommand):\n    def __init__(self):\n        pass\n",
              "    @property\n    def invoke(self, ctx):\n        return 1\n\ndef top():\n    pass\n",
              "class Other:\n    def invoke(self): pass\n"]
    assert member_definitions(python, "python") == [{"Group.__init__"}, {"Group.invoke"}, {"Other.invoke"}]
    go = ["package x\n\nfunc (g *Group) Invoke(ctx int) error {\n\treturn nil\n}\n\nfunc Plain() {}\n"]
    assert member_definitions(go, "go") == [{"Group.Invoke"}]  # a receiver below the chunk's first line
    unnamed = ["package b\n\nfunc (jsonBinding) Bind(r int) error {\n}\n\nfunc (msg Error) Error() string {\n}\n"]
    assert member_definitions(unnamed, "go") == [{"jsonBinding.Bind", "Error.Error"}]
    # A preprocessor line or a label at column 0 closes nothing
    csharp = ["namespace N {\n    public class Reader {\n#if DEBUG\n        int x;\n#endif\n        public bool Read() {\n"
              "        }\n    }\n}\n"]
    assert member_definitions(csharp, "csharp") == [{"N.Reader", "Reader.Read"}]
    cpp_label = ["class lexer {\n    int scan() {\nretry:\n        return 1;\n    }\n    int get() {\n    }\n};\n"]
    assert member_definitions(cpp_label, "cpp") == [{"lexer.scan", "lexer.get"}]
    ruby = ["module Sinatra\n  class Base\n    def call(env)\n    end\n  end\nend\n"]
    assert member_definitions(ruby, "ruby") == [{"Sinatra.Base", "Base.call"}]
    rust = ["impl Service for Router {\n    fn call(&self) {}\n}\nfn free() {}\n"]
    assert member_definitions(rust, "rust") == [{"Router.call"}]
    java = ["public class Foo extends Bar {\n    public void doIt(int a) {\n    }\n}\nclass Baz {}\n"]
    assert member_definitions(java, "java") == [{"Foo.doIt"}]
    allman = ["<?php\nnamespace App;\n\nclass Widget\n{\n    public function render()\n    {\n        return 1;\n    }\n}\n"]
    assert member_definitions(allman, "php") == [{"Widget.render"}]  # the brace on its own line stays with it
    # JavaScript/TypeScript methods have no keyword: an indented `name(...) {` in a class
    ts = ["export class Router {\n  constructor(opts: Opts) {\n  }\n\n  async handle<T>(req: Request): Promise<T> {\n"
          "    if (req) {\n      run(req);\n    }\n    return describe('x', () => {\n    });\n  }\n}\n"]
    assert member_definitions(ts, "typescript") == [{"Router.constructor", "Router.handle"}]
    assert defined_names(ts[0], "typescript") == {"Router", "constructor", "handle"}  # no if, run, describe
    # C++ defines members out of their class, naming the owner: `Json::dump` is Json's dump
    cpp = ["std::string nlohmann::Json::dump(int indent) const {\n    return s;\n}\nint helper(int x) {\n}\n"]
    assert member_definitions(cpp, "cpp") == [{"Json.dump"}]
    assert {"dump", "helper"} <= defined_names(cpp[0], "cpp")


def test_a_class_with_an_annotation_above_it_owns_its_members():
    """kotlinx's `@OptIn(...)` above `private class StateFlowImpl<T>(` closed the class on its own
    header line: `StateFlowImpl.updateState` was no member, and its definition not in the first 10."""
    from retrieval.lexical.features import member_definitions

    kotlin = ["@OptIn(ExperimentalForInheritanceCoroutinesApi::class)\nprivate class StateFlowImpl<T>(\n"
              "    initialState: Any\n) : AbstractFlow<T>() {\n    private fun updateState(a: Any?): Boolean {\n    }\n}\n"]
    assert member_definitions(kotlin, "kotlin") == [{"StateFlowImpl.updateState"}]
    java = ["@Service\n@Scope(\"prototype\")\npublic class Billing {\n    public void charge(int cents) {\n    }\n}\n"]
    assert member_definitions(java, "java") == [{"Billing.charge"}]
    scala = ['@deprecated("use Other", "2.0")\nclass Old {\n  def run(): Unit = {\n  }\n}\n']
    assert member_definitions(scala, "scala") == [{"Old.run"}]


def test_only_a_language_s_own_owner_keywords_open_an_owner():
    """One owner list for every language made a doc line starting `module` (Elixir's) or a method
    returning `object` (C#'s) the owner of the definitions below it."""
    from retrieval.lexical.features import member_definitions

    elixir = ['defmodule Compressor do\n  @moduledoc """\n  Add a new module implementing it and add the\n'
              '  module to the list of compressors:\n\n      defmodule MyApp.Brotli do\n  """\n'
              '  def compress(data), do: data\nend\n']
    # (the heredoc's example module is documentation, no definition)
    assert member_definitions(elixir, "elixir") == [{"Compressor.compress"}]
    csharp = ["class Resolver\n{\n    internal static object GetFormatter(Type t)\n    {\n        return Create(t);\n\n"
              "        static int Create(Type t)\n        {\n        }\n    }\n}\n"]
    assert member_definitions(csharp, "csharp") == [{"Resolver.GetFormatter", "Resolver.Create"}]


def test_a_path_names_its_file_and_a_qualified_name_its_member():
    from retrieval.ranking import file_query_stem, qualified_name, symbol_key

    assert [file_query_stem(q) for q in ("core.py", "src/click/termui.py", "core.py:1255", "a/b.test.ts:3-9")] == \
        ["core", "termui", "core", "b.test"]
    assert [file_query_stem(q) for q in ("os.path.join", "Group.invoke", "core", "v1.2")] == [None] * 4
    assert symbol_key("src/click/core.py") == "core" and qualified_name("src/click/core.py") == ()
    # No slash, no line: a file name and a member at once (the member term finds a method; the
    # name prior a file named after the stem).
    assert symbol_key("Response.json") == "Response" and qualified_name("Response.json") == ("Response", "json")
    assert symbol_key("os.path.join") == "join" and qualified_name("Group.invoke") == ("Group", "invoke")
    # A capitalised word after the dot of a bare name is a member (`.socket` is a systemd unit's
    # extension); a path keeps its extension whatever its case, and so do R Markdown's and Quarto's.
    assert [file_query_stem(q) for q in ("Phoenix.Socket", "App.Service", "intro.Rmd", "vignettes/intro.Rmd",
                                         "report.Rmd:20", "lib/App.Service", "Makefile.PL")] == \
        [None, None, "intro", "intro", "report", "App", "Makefile"]
    assert symbol_key("Phoenix.Socket") == "Socket" and qualified_name("Phoenix.Socket") == ("Phoenix", "Socket")
    assert qualified_name("Map.foldl'") == ("Map", "foldl'") and qualified_name("Map.save!") == ("Map", "save!")


def test_a_file_name_with_two_dots_asked_by_name_ranks_its_file_first():
    """`show.html.erb` (a Rails view) ranked a helper that says "show" and "HTML" above the view:
    the name prior compared the query's `show.html` with the file's first word only."""
    from retrieval.ranking import name_prior, symbol_key

    view = "<h1><%= @post.title %></h1>\n<%= render 'comments/form', post: @post %>\n"
    helper = ("module PostsHelper\n  # Links to show a post as HTML: show it.\n  def link_to_post(post)\n"
              "    link_to post.title, post_path(post, format: :html)\n  end\nend\n")
    for name in ("show.erb", "show.html.erb"):
        docs = [doc(f"app/views/posts/{name}", view, language="erb"),
                doc("app/helpers/posts_helper.rb", helper, language="ruby")]
        assert ranked_paths(docs, name)[0] == f"app/views/posts/{name}", name
    config = RankingConfig()
    assert (name_prior("app/views/posts/show.html.erb", symbol_key("show.html.erb"), set(), config)
            == name_prior("app/views/posts/show.erb", symbol_key("show.erb"), set(), config) > 1.0)
    # An identifier merely spelled like a two-dot stem names no such file.
    assert name_prior("lib/Foo.Bar.cs", "FooBar", set(), config) == 1.0


def test_a_hyphenated_name_in_a_string_is_found_where_it_is_written_whole():
    """tokio's default thread name `tokio-rt-worker` is a string in three lines of builder.rs, and its
    words are in every other file: those lines were not among the first hundred hits for it."""
    docs = [doc("runtime/builder.rs", 'fn default() -> Self {\n    thread_name: Arc::new(|| "tokio-rt-worker".into()),\n}\n',
                language="rust")]
    docs += [doc(f"runtime/worker{i}.rs", f"// the tokio rt worker {i}: a worker of the rt\nfn worker_{i}(rt: &Rt) {{\n"
                 "    tokio::spawn(rt.worker());\n}\n", language="rust") for i in range(8)]
    assert ranked_paths(docs, "tokio-rt-worker")[0] == "runtime/builder.rs"
    assert ranked_paths(docs, "tokio-rt-worker", phrase_boost=0)[0] != "runtime/builder.rs"  # (discriminating)
    # A hyphenated name something defines (a shell function) asks for its definition first, not for
    # the strings that say it (bash-it's `_bash-it-component-help` came second behind a builder of names).
    shell = [doc("lib/utilities.bash", "_bash-it-component-help() {\n  local component=\"$1\"\n  echo help\n}\n",
                 language="bash"),
             doc("lib/helpers.bash", 'func="_bash-it-component-help"\nlabel="bash it component help"\n'
                 'echo "_bash-it-component-help: bash it component help"\n', language="bash")]
    assert ranked_paths(shell, "_bash-it-component-help")[0] == "lib/utilities.bash"


def test_a_query_naming_a_docs_page_a_test_or_a_config_file_ranks_that_file_first(make_tree):
    """`README.md`, `conftest.py`, `docs/guide.md:3`, `Makefile` name a file whatever it is: as a
    bare identifier names code, docs and tests got no file-name boost, and click's `pyproject.toml`,
    which says `readme = "README.md"`, came first (graded high). Among files so named, the source
    comes before the examples' copies (trpc's `router.ts`)."""
    from retrieval import service

    config = 'readme = "README.md"\nlicense-files = ["LICENSE.txt"]\n# fixtures: tests/conftest.py\n'
    root = str(make_tree({
        "pyproject.toml": config, "README.md": "# Click\n\nA package for command line interfaces.\n",
        "LICENSE.txt": "Copyright 2014 Pallets\n\nRedistribution permitted.\n", "docs/guide.md": "# Guide\n\nStart here.\n",
        "tests/conftest.py": "import pytest\n\n@pytest.fixture\ndef runner():\n    pass\n",
        "src/guide.py": "def guide():\n    return 'docs guide md'\n", "Makefile": "test:\n\tpytest\n",
        "docs/Makefile": "html:\n\tsphinx-build . _build # make test docs\n",
        "src/server/router.ts": "export const appRouter = router({\n" + "".join(f"  route{i}: procedure,\n" for i in range(30)) + "});\n",
        **{f"examples/app{i}/router.ts": "import { router } from '../server/router';\nexport const r = router({});\n"
           for i in range(4)}}))
    for query, path in [("README.md", "README.md"), ("LICENSE.txt", "LICENSE.txt"), ("conftest.py", "tests/conftest.py"),
                        ("docs/guide.md", "docs/guide.md"), ("docs/guide.md:3", "docs/guide.md"),
                        ("tests/conftest.py:4", "tests/conftest.py"), ("router.ts", "src/server/router.ts")]:
        assert service.search(root, query).hits[0].source_path == path, query
    assert {h.source_path for h in service.search(root, "Makefile").hits[:2]} == {"Makefile", "docs/Makefile"}
    # A path's last name may hold spaces (alamofire's `Documentation/Alamofire 2.0 Migration Guide.md`).
    from retrieval.ranking import queried_file_name

    assert queried_file_name("Documentation/Alamofire 2.0 Migration Guide.md") == "alamofire 2.0 migration guide.md"
    assert queried_file_name("where is router.ts") == queried_file_name("spelled correctly in config/database.yml") == ""
    # Without its extension a name is an identifier: the code defining it first, as before.
    assert service.search(root, "guide").hits[0].source_path == "src/guide.py"
    # Scores still fall with rank after the files so named are put first.
    scores = [h.score for h in service.search(root, "README.md").hits]
    assert scores == sorted(scores, reverse=True)


def test_a_query_writes_out_paths_as_tracebacks_links_and_questions_do():
    from retrieval.ranking import MAX_MENTIONS, path_mentions

    text = ('Traceback (most recent call last):\n'
            '  File "/usr/lib/python3/site-packages/astropy/io/fits/card.py", line 3, in _parse\n'
            'see sympy/printing/str.py:120, src\\app\\main.ts and ./setup.py; '
            '.github/workflows/ci.yml; https://github.com/o/r/blob/main/src/x.py#L3')
    assert path_mentions(text) == (
        "usr/lib/python3/site-packages/astropy/io/fits/card.py", "sympy/printing/str.py", "src/app/main.ts",
        "setup.py", ".github/workflows/ci.yml", "github.com/o/r/blob/main/src/x.py")
    assert path_mentions("how are tokens refreshed") == ()
    log = " ".join(f"pkg/m{i}.py" for i in range(MAX_MENTIONS + 50))
    assert path_mentions(log) == tuple(f"pkg/m{i}.py" for i in range(MAX_MENTIONS))  # a log's first ones


def test_a_mention_names_the_files_whose_trailing_path_agrees_with_it_most():
    from retrieval.ranking import mention_evidence, paths_by_name

    names = paths_by_name(["src/_pytest/python.py", "testing/python.py", "python.py",
                           "doc/conf.py", "tests/roots/a/conf.py", "lib/json/decoder.py", "setup.py"])
    named = lambda mentions: mention_evidence(mentions, names)
    # An installed copy's path is the source tree's file with the same package directory.
    assert named(["usr/lib/site-packages/_pytest/python.py"]) == {"src/_pytest/python.py": 1.0}
    # A bare name may be any file so called: each gets its share.
    assert named(["conf.py"]) == {"doc/conf.py": 0.5, "tests/roots/a/conf.py": 0.5}
    # Only the name agreeing is another file (a user's own script, the standard library's).
    assert named(["home/me/decoder.py"]) == {}
    assert named(["home/me/checkout/setup.py"]) == {"setup.py": 1.0}  # a file at the top: its whole path agrees
    assert named(["python.py", "src/_pytest/python.py"])["src/_pytest/python.py"] == 1.0  # at most 1


def test_a_report_naming_a_file_by_its_path_ranks_that_file_above_a_namesake():
    """A traceback's frame names one `session.py`: the one in its package, not another package's
    file of the same name that matches the report's words more often."""
    ours = doc("src/pkg/session.py", "def merge(self, other):\n    return self.settings\n")
    namesake = doc("src/vendor_like/session.py", "def merge(settings):\n    merge settings merge settings\n")
    text = ("merge settings fails\n"
            'File "/usr/lib/python3/site-packages/pkg/session.py", line 2, in merge\n'
            + " ".join(f"word{i}" for i in range(40)))
    docs = FILLER + [ours, namesake]
    assert ranked_paths(docs, text)[0] == "src/pkg/session.py"
    assert ranked_paths(docs, text, path_mention_boost=0.0, frame_boost=0.0)[0] == "src/vendor_like/session.py"


def test_a_symbol_query_is_told_the_member_it_names_only_when_the_label_names_another():
    from retrieval.ranking import member_named

    members = [["JSON", "Context.JSON", "method"], ["serialize", "Codec.serialize", "method"]]
    label = ("Context.JSONP", "JSONP")
    assert member_named("Context.JSON", *label, members) == ("JSON", "Context.JSON", "method")
    assert member_named("JSON", *label, members) == ("JSON", "Context.JSON", "method")
    assert member_named("context.json", *label, members) == ("JSON", "Context.JSON", "method")  # no case said
    assert member_named("JSONP", *label, members) is None  # the label names it
    assert member_named("Context.JSONP", *label, members) is None
    assert member_named("Serialize", *label, members) is None  # a case is said: the trait, not the method
    # another scope's: the namesake here is what matched (a class label said less: requests'
    # `Session.send` met `BaseAdapter.send` in a chunk labelled `BaseAdapter`)
    assert member_named("Other.JSON", *label, members) == ("JSON", "Context.JSON", "method")
    assert member_named("Other.JSONP", *label, members) is None  # the label is that namesake
    assert member_named("json.go", *label, members) is None  # a file
    assert member_named("render JSON", *label, members) is None  # words, not a symbol
    assert member_named("JSON", *label, []) is None
    # a module-level chunk's symbol is its first definition, not its label: the member is named
    module = ("module context", "ShouldBindQuery")
    bind = [["ShouldBindQuery", "Context.ShouldBindQuery", "method"], ["ShouldBindJSON", "Context.ShouldBindJSON", "method"]]
    assert member_named("ShouldBindQuery", *module, bind) == ("ShouldBindQuery", "Context.ShouldBindQuery", "method")
    assert member_named("context", *module, bind) is None  # the module's own name


def test_a_python_overload_declaration_is_no_definition_of_its_name():
    from retrieval.lexical.features import definitions_and_members

    declarations = "@overload\ndef hub(x: int) -> int: ...\n@typing.overload\n@cache  # why\ndef hub(x: str) -> str: ...\n"
    assert definitions_and_members(declarations, "python") == (set(), set())
    assert definitions_and_members(declarations + "def hub(x):\n    return x\n", "python")[0] == {"hub"}
    # in a class too, as a member; and `overload` alone in another language's text changes nothing
    method = "class A:\n    @overload\n    def m(self): ...\n"
    assert definitions_and_members(method, "python", [(0, ""), (8, "A")])[0] == {"A"}
    assert "m" in definitions_and_members("@overload\ndef m(self)\n", "ruby")[0]


def test_a_pasted_error_s_class_or_label_names_no_file_by_its_name():
    """vitest's `TypeError: ... is not a spy` lifted every `types.ts` (Type + Error), Go's `Error:`
    every `errors.go`, above the file that says the message. A question's own words still name files."""
    thrower = doc("src/spy.ts", "export function assertIsMock(x) {\n  throw new TypeError('not a spy or a call to a spy')\n}\n")
    docs = FILLER + [thrower,
                     doc("src/types.ts", "export type Spy = { calls: Call[] }\nexport type Call = { spy: Spy, user: User }\n"),
                     doc("src/errors.go", "// a spy call failed for a user\nvar ErrSpy = errors.New(\"spy call\")\n")]
    for message in ("TypeError: fetchUser is not a spy or a call to a spy",
                    "Error: fetchUser is not a spy or a call to a spy",
                    "panic: fetchUser is not a spy or a call to a spy"):
        assert ranked_paths(docs, message)[0] == "src/spy.ts", message
    assert ranked_paths(docs, "where are the spy types")[0] == "src/types.ts"  # a question names the file
    from retrieval.query import naming_words

    assert naming_words("com.x.exc.InvalidDefinitionException: Cannot construct User") == {"cannot", "construct", "user"}
    assert naming_words("error[E0277]: trait bound\nwhy are type errors reported late") >= {"type", "errors", "trait"}


def test_a_wrapped_typescript_method_whose_parameters_hold_an_object_type_is_a_definition():
    """trpc's `TRPCClientError.from(cause, opts: { meta?: ...; cause?: Error } = {})`: the `;` between
    the object type's members read as a statement's end, and the method defined nothing."""
    text = ("export class ClientError extends Error {\n  public static from<T extends object>(\n"
            "    cause: Error | object,\n    opts: { meta?: Record<string, unknown>; cause?: Error } = {},\n"
            "  ): ClientError {\n    return new ClientError(String(cause));\n  }\n}\n")
    assert "from" in defined_names(text, "typescript")
    # a statement's `;` still ends a call's arguments: a call wrapped over lines defines nothing
    call = "  register(\n    handler,\n  );\n  if (ok) {\n    run();\n  }\n"
    assert "register" not in defined_names(call, "typescript")


def test_a_length_floor_keeps_a_few_lines_from_winning_on_shortness_alone():
    """A syntax chunk can be a split function's few middle lines: with a floor BM25 reads it as
    that long, so a whole definition saying the words more often ranks first."""
    tiny = doc("src/a.c", "proxy connect\n")
    whole = doc("src/b.c", "open the proxy socket\n" + "".join(f"step {i} of the handshake\n" for i in range(5))
                + "connect then ask the proxy to connect onwards\n")

    def first(floor):
        retriever = LexicalRetriever()
        retriever.length_floor = floor
        retriever.index([tiny, whole])
        return retriever.search_detailed("proxy connect", 10)[0].source_path

    assert first(0) == "src/a.c"
    assert first(40) == "src/b.c"


GO_INTERFACES = """package io

// Reader reads.
type Reader interface {
	// Read reads up to len(p) bytes (a comment, not a method).
	Read(p []byte) (n int, err error)
}

type ReadCloser interface {
	Reader
	io.Closer
	Query(
		ctx context.Context,
		each func(row Row) error,
	) (Result, error)
}

type Set[T comparable] interface {
	~int | ~string
	Has(v T) bool
}

type Closer interface{ Close() error }

type File struct {
	Name    string
	OnClose func(f *File) error
}
"""


def test_a_go_interface_s_method_specs_define_its_methods_and_nothing_else_in_it_does():
    """The syntax tree's method_elem: an interface's methods are declared there. An embedded
    interface, a type union, a comment or a parameter is no definition, nor is a struct's field."""
    from retrieval.lexical.features import member_definitions

    assert defined_names(GO_INTERFACES, "go") == {"Reader", "Read", "ReadCloser", "Query", "Set", "Has",
                                                  "Closer", "Close", "File"}
    assert member_definitions([GO_INTERFACES], "go") == [{"Reader.Read", "ReadCloser.Query", "Set.Has",
                                                          "Closer.Close"}]
    # an anonymous interface declares methods too (as the syntax tree says), owned by no type
    assert defined_names("func f(c interface{ Close() error }) {}\n", "go") == {"f", "Close"}
    assert member_definitions(["var hooks interface {\n\tBefore() error\n}\n"], "go") == [set()]


def test_a_go_interface_or_group_cut_by_a_chunk_boundary_declares_its_later_names_in_the_next_chunk():
    """Line chunks cut a long interface or `const (` group: the chunk after the cut has no `interface
    {` line, and its specs (and the group's names) were lost; the file's chunks before it say what is open."""
    from retrieval.lexical.features import definitions_and_members, member_definitions, member_owners

    interface = ["package gin\n\ntype IRoutes interface {\n\tUse(...HandlerFunc) IRoutes\n",
                 "\tGET(string, ...HandlerFunc) IRoutes\n\tPOST(string, ...HandlerFunc) IRoutes\n}\n\n"
                 "func Run() {\n\tserve(addr)\n}\n"]
    owners = member_owners(interface, "go")
    assert definitions_and_members(interface[1], "go", owners[1])[0] == {"GET", "POST", "Run"}
    assert member_definitions(interface, "go") == [{"IRoutes.Use"}, {"IRoutes.GET", "IRoutes.POST"}]
    group = ["const (\n\tShellCompDirectiveError = 1 << iota\n",
             "\tShellCompDirectiveNoSpace\n)\n\nfunc (c *Command) Run() {\n\tx := 1\n}\n", "\tfoo()\n"]
    owners = member_owners(group, "go")
    assert [definitions_and_members(text, "go", o)[0] for text, o in zip(group, owners)] == \
        [{"ShellCompDirectiveError"}, {"ShellCompDirectiveNoSpace", "Run"}, set()]
    assert member_definitions(group, "go") == [set(), {"Command.Run"}, set()]


def test_many_unclosed_go_groups_are_read_in_time_linear_in_the_text():
    """Each `var (` searched for its `)` to the end of the text: 50,000 of them took 85 s."""
    import time

    from retrieval.lexical.features import definitions_and_members

    started = time.perf_counter()
    names, _ = definitions_and_members("var (\n" * 20_000 + "\tLast = 1\n", "go", [(0, "(")])
    assert time.perf_counter() - started < 2.0
    assert names == {"Last"}


def test_a_qualified_namespace_defines_its_last_part_and_an_elixir_haskell_or_ruby_module_its_last_part_weakly():
    """`namespace Illuminate\\Support\\Facades;` defined `Illuminate` in every Laravel file, and `namespace
    Newtonsoft.Json.Tests`, `defmodule Mix.Tasks.Phx.New`, `module Text.Pandoc.Readers.LaTeX` and `class
    ActiveStorage::Blob` their second or first part (`Json`, `Tasks`, `Pandoc`, `ActiveStorage`)."""
    assert defined_names("<?php\nnamespace Illuminate\\Support\\Facades;\n", "php") == {"Facades"}
    assert defined_names("namespace Newtonsoft.Json.Tests\n{\n", "csharp") == {"Tests"}
    assert defined_names("defmodule Mix.Tasks.Phx.New do\n", "elixir") == set()
    assert weak_definitions("defmodule Mix.Tasks.Phx.New do\n", "elixir") == {"New"}
    assert defined_names("defmodule Phoenix.Socket do\n", "elixir") == {"Socket"}  # one qualifier: the last part
    assert defined_names("module Text.Pandoc.Readers.LaTeX (readLaTeX) where\n", "haskell") == set()
    assert weak_definitions("module Text.Pandoc.Readers.LaTeX (readLaTeX) where\n", "haskell") == {"LaTeX"}
    assert defined_names("class ActiveStorage::Blob < ActiveRecord::Base\n", "ruby") == set()
    assert weak_definitions("class ActiveStorage::Blob < ActiveRecord::Base\n", "ruby") == {"Blob"}


def test_unclosed_c_signatures_and_ruby_heredocs_are_read_in_time_linear_in_the_text():
    """Each wrapped signature looks for the `;` or `{` after it, each heredoc for its end: neither scans
    the rest of the text again for every one of 50,000."""
    import time

    started = time.perf_counter()
    assert defined_names("int f(int a,\n" * 50_000, "c") == {"f"}
    assert defined_names("x = <<~A\n" * 50_000 + "def after\n", "ruby") == {"x"}  # (the first line's `x`)
    assert time.perf_counter() - started < 4.0


def test_a_bare_method_name_finds_the_go_interface_declaring_it_above_a_mock_and_an_implementation(make_tree):
    """A hand-written mock and an implementation define `Read` with a receiver; the interface
    declared it and ranked below them both."""
    from retrieval import service

    interface = ("package storage\n\n// Reader reads blobs from a bucket.\ntype Reader interface {\n"
                 "\t// Read fills p from the blob.\n\tRead(p []byte) (n int, err error)\n}\n")
    mock = ("package mocks\n\n// MockReader records every Read.\ntype MockReader struct{ calls int }\n\n"
            "// Read records a call to Read.\nfunc (m *MockReader) Read(p []byte) (n int, err error) {\n"
            "\tm.calls++\n\treturn len(p), nil\n}\n")
    implementation = ("package storage\n\n// Read reads the next bytes of the open blob.\n"
                      "func (b *Bucket) Read(p []byte) (n int, err error) {\n\tif b.closed {\n\t\treturn 0, ErrClosed\n"
                      "\t}\n\tn, err = b.body.Read(p)\n\tb.offset += int64(n)\n\treturn n, err\n}\n")
    root = make_tree({"storage/reader.go": interface, "mocks/reader_mock.go": mock,
                      "storage/bucket.go": implementation})
    for query in ("Read", "Reader.Read"):
        hits = service.search(str(root), query, retriever="lexical", top_k=3).hits
        assert hits[0].source_path == "storage/reader.go", (query, [h.source_path for h in hits])
