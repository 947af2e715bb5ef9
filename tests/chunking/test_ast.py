"""AST chunks with the real grammars: verbatim spans, scope paths, kinds, symbols and definitions."""
from __future__ import annotations

import pytest

from retrieval.chunking import ChunkingPolicy
from retrieval.read import split_lines

from chunk_checks import assert_verbatim

pytestmark = pytest.mark.extra("treesitter")

# A small budget makes every definition a chunk of its own, so scopes can be checked one by one.
SMALL = ChunkingPolicy(code=160, prose=160, config=160, default=160)
TINY = ChunkingPolicy(code=60, prose=60, config=60, default=60)  # even small methods stand alone


def chunks_of(text, path, language, policy=SMALL, kind="code"):
    from retrieval.chunking.ast import chunk_source

    return chunk_source(text, path, language=language, kind=kind, policy=policy)


def by_symbol(chunks, symbol):
    found = [c for c in chunks if c.symbol == symbol]
    assert found, f"no chunk for {symbol!r}: {[(c.symbol, c.context) for c in chunks]}"
    return found[0]


def parsed_root(text, language):
    from retrieval.chunking.parsing import parser_for

    return parser_for(language).parse(text.encode()).root_node


def defined(chunks):
    return {name for c in chunks for name in (c.definitions or ())}


PYTHON = '''\
import os

LIMIT = 10


class Outer:
    """An outer class."""

    class Inner:
        # the inner worker
        @staticmethod
        def method(value):
            """Double a value, then add one to it; the body is long enough to stand alone."""
            doubled = value * 2
            return doubled + 1

    def run(self, items):
        total = 0
        for item in items:
            total += self.Inner.method(item)
        return total


def make_handler(prefix):
    def handler(event):
        message = f"{prefix}: {event} happened and it is reported with some detail here"
        return message.upper()
    return handler
'''


def test_python_scopes_kinds_symbols_and_decorators():
    chunks = chunks_of(PYTHON, "pkg/mod.py", "python")
    assert_verbatim(PYTHON, chunks)
    method = by_symbol(chunks, "method")
    assert method.context == "Outer.Inner.method"
    assert method.chunk_kind == "method"
    # the comment and the decorator above the definition are in its chunk
    assert "# the inner worker" in method.text and "@staticmethod" in method.text
    assert by_symbol(chunks, "run").context == "Outer.run"
    handler = by_symbol(chunks, "handler")
    assert handler.context == "make_handler.handler"
    assert handler.scope is not None and handler.scope[0] == PYTHON.splitlines().index("def make_handler(prefix):") + 1
    assert {"Outer", "Inner", "method", "run", "make_handler", "handler", "LIMIT"} <= defined(chunks)
    assert all(c.language == "python" and c.kind == "code" for c in chunks)


def test_object_and_table_members_holding_a_function_are_named_by_their_key():
    lua = ("previewers.autocommands = defaulter(function(_)\n  return previewers.new {\n"
           "    define_preview = function(self, entry)\n      return entry\n    end,\n  }\nend)\n")
    chunks = chunks_of(lua, "buffer_previewer.lua", "lua", TINY)
    assert {"autocommands", "define_preview"} <= defined(chunks)
    assert by_symbol(chunks, "define_preview").context == "previewers.autocommands.define_preview"
    ts = "export const handlers = {\n  resolve: async (opts) => {\n    return opts.next();\n  },\n};\n"
    assert "resolve" in defined(chunks_of(ts, "src/handlers.ts", "typescript"))


def test_a_partial_type_in_a_file_named_as_one_of_its_parts_does_not_define_it():
    """`Reader.Async.cs` continues the type `Reader.cs` declares: the declaration defines it, the
    continuation its members."""
    part = "namespace N\n{\n    public partial class Reader\n    {\n        public int ReadAsync() { return 1; }\n    }\n}\n"
    assert "Reader" not in defined(chunks_of(part, "src/Reader.Async.cs", "csharp"))
    assert "ReadAsync" in defined(chunks_of(part, "src/Reader.Async.cs", "csharp"))
    assert "Reader" in defined(chunks_of(part, "src/Reader.cs", "csharp"))


def test_a_c_file_whose_braces_balance_across_conditional_branches_keeps_its_functions():
    """curl's cf-haproxy.c: `if(x) {` under `#ifdef A`, its `}` under a later `#ifdef A`, all of the
    file inside `#ifndef FEATURE`: one ERROR around the file, cut by lines, no labels."""
    body = "".join(f"  total += step({i}, \"argument text to make it long\");\n" for i in range(12))
    text = ("#ifndef FEATURE_OFF\n\nstatic int first(int x)\n{\n  int total = 0;\n#ifdef USE_UNIX\n  if(x) {\n"
            "    total = 1;\n  }\n  else {\n#endif\n" + body + "#ifdef USE_UNIX\n  }\n#endif\n  return total;\n}\n\n"
            "static int second(int y)\n{\n" + body + "  return y;\n}\n\n#endif /* FEATURE_OFF */\n")
    chunks = chunks_of(text, "lib/cf.c", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert {"first", "second"} <= defined(chunks)


def test_a_module_level_chunk_names_its_module():
    chunks = chunks_of("import os\nimport sys\n\nprint(os.sep, sys.argv)\n", "pkg/sub/tool.py", "python")
    assert chunks[0].context == "module pkg.sub.tool"
    assert chunks[0].chunk_kind == "module"


def test_a_package_s_init_file_names_the_package_as_its_module():
    text = "from .core import run\n\nprint(run)\n"
    assert chunks_of(text, "pkg/sub/__init__.py", "python")[0].context == "module pkg.sub"


def test_a_haskell_module_is_named_as_its_header_declares_it_not_by_its_path():
    """aeson's `src/Data/Aeson/Key.hs` was `module src.Data.Aeson.Key`; the file says `module Data.Aeson.Key`."""
    hs = ("{-# LANGUAGE CPP #-}\n-- | Keys of JSON objects.\nmodule Data.Aeson.Key (\n    Key,\n    fromString,\n"
          ") where\n\nimport Data.Text (Text)\n\nnewtype Key = Key { unKey :: Text }\n")
    assert chunks_of(hs, "src/Data/Aeson/Key.hs", "haskell", policy=ChunkingPolicy())[0].context == "module Data.Aeson.Key"
    # A header commented out is none; a literate file's bird tracks hold one.
    old = "{-\nmodule Old.Name where\n-}\nmodule New.Name where\n\nimport Data.Text (Text)\n\nx :: Int\nx = 1\n"
    assert chunks_of(old, "src/New/Name.hs", "haskell")[0].context == "module New.Name"
    # No header (a script, `Main` by default): the path's name, as before.
    assert chunks_of("import System.IO\n\nmain = putStrLn \"hi\"\n", "app/Main.hs", "haskell")[0].context == \
        "module app.Main"


def test_a_files_opening_with_a_one_line_definition_among_its_imports_is_the_modules():
    """gin's context.go: licence, imports and `type ContextKeyType int` were labelled with that type;
    a chunk that is mostly one definition is still that definition."""
    licence = "".join(f"// Copyright line {i} of the licence of this project.\n" for i in range(8))
    imports = "import (\n" + "".join(f'\t"pkg/module{i}"\n' for i in range(10)) + ")\n"
    text = f"{licence}\npackage gin\n\n{imports}\ntype ContextKeyType int\n\nconst ContextRequestKey = 0\n"
    (chunk,) = chunks_of(text, "gin/context.go", "go", policy=ChunkingPolicy())
    assert (chunk.context, chunk.chunk_kind) == ("module gin.context", "module")
    assert "ContextKeyType" in (chunk.definitions or ())  # still defined there
    small = "package gin\n\nimport \"fmt\"\n\ntype Pair struct {\n\tA int\n\tB int\n}\n"
    assert chunks_of(small, "gin/pair.go", "go", policy=ChunkingPolicy())[0].context == "Pair"


def test_whole_definitions_merge_when_small_and_split_when_big():
    default = chunks_of(PYTHON, "pkg/mod.py", "python", policy=ChunkingPolicy())
    assert len(default) == 1  # the whole file fits the default budget
    body = "".join(f"    x{i} = compute({i}, 'some argument text')\n" for i in range(200))
    text = f"def big():\n{body}\n\ndef small():\n    return 1\n"
    chunks = chunks_of(text, "big.py", "python", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert len([c for c in chunks if c.context == "big"]) > 2
    assert all(len(c.text) <= 1500 for c in chunks)
    assert by_symbol(chunks, "small").context == "small"


def test_a_documentation_comment_bigger_than_the_budget_is_cut_like_any_oversized_text():
    comment = "/**\n" + "".join(f" * line {i} of a long license text, kept verbatim\n" for i in range(150)) + " */\n"
    methods = "".join(f"    public int m{i}() {{ return {i}; }}\n" for i in range(120))
    text = comment + "public class Big {\n" + methods + "}\n"
    budget = ChunkingPolicy().budget("code")
    chunks = chunks_of(text, "Big.java", "java", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert all(len(c.text) <= budget for c in chunks), [(c.start_line, c.end_line, len(c.text)) for c in chunks]
    assert {c.start_line for c in chunks} >= {1}  # nothing of the comment is lost


LONG = "".join(f"line {i} of a long literal text that goes on and on, kept verbatim and searchable\n" for i in range(120))


@pytest.mark.parametrize("language, path, text", [
    # Text between a node's own children: a string's are its quotes, a block scalar's its `|`.
    ("scala", "A.scala", 'object A {\n  val x = s"""\n' + LONG + '"""\n  def b = 2\n}\n'),
    ("yaml", "ci.yml", "jobs:\n  test:\n    steps:\n      - run: |\n"
     + "".join(f"          echo {l}" for l in LONG.splitlines(True)) + "      - run: done\n"),
    ("toml", "a.toml", 'text = """\n' + LONG + '"""\nafter = 1\n'),
])
def test_text_inside_a_node_split_into_its_children_is_still_in_a_chunk(language, path, text):
    chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
    assert_verbatim(text, chunks)  # every line with text is in a chunk


def test_a_chunk_of_merged_siblings_is_labelled_by_the_one_holding_most_of_it():
    body = "".join(f"\tcheck(realm, {i})\n" for i in range(20))
    text = ("package gin\n\nfunc BasicAuthForRealm(realm string) HandlerFunc {\n" + body + "\treturn nil\n}\n\n"
            "func BasicAuth(accounts Accounts) HandlerFunc {\n\treturn BasicAuthForRealm(\"\")\n}\n")
    (chunk,) = [c for c in chunks_of(text, "auth.go", "go", policy=ChunkingPolicy()) if "func BasicAuth(" in c.text]
    assert "func BasicAuthForRealm" in chunk.text  # merged: both small enough
    assert (chunk.context, chunk.symbol) == ("BasicAuthForRealm", "BasicAuthForRealm")
    assert {"BasicAuthForRealm", "BasicAuth"} <= set(chunk.definitions)  # both still defined there


def test_a_chunk_of_equal_siblings_is_labelled_by_the_first_of_them():
    text = "".join(f"def quuxfn{i}(x):\n    y = x + {i}\n    return y * 2\n\n" for i in range(120))
    chunks = chunks_of(text, "f.py", "python", policy=ChunkingPolicy())
    first = chunks[0]
    assert "def quuxfn0(" in first.text and "def quuxfn5(" in first.text
    assert first.symbol == "quuxfn0"  # not the last of them, which the chunk only ends with


def test_a_class_header_with_its_fields_and_a_one_line_member_is_the_class_not_the_member():
    """As aiohttp's ClientResponse: the chunk opening the class was labelled by a one-line
    attribute holding a lambda, so a query naming the class showed `ClientResponse._resolve_charset`."""
    fields = "".join(f"    field_{i}: int | None = None  # set by start(), read by the caller\n" for i in range(14))
    body = "".join(f"        self.field_{i} = await self._read({i})\n" for i in range(40))
    text = ("class ClientResponse:\n    # Some attributes are None until start() runs.\n" + fields
            + "    _resolve_charset: Callable[[bytes], str] = lambda *_: 'utf-8'\n\n"
            + "    async def start(self, connection):\n" + body)
    chunks = chunks_of(text, "client.py", "python", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    first = chunks[0]
    assert "class ClientResponse:" in first.text and "_resolve_charset" in first.text
    assert (first.context, first.symbol, first.chunk_kind) == ("ClientResponse", "ClientResponse", "class")
    assert "_resolve_charset" in first.definitions  # still defined there
    assert chunks[-1].context == "ClientResponse.start"


@pytest.mark.parametrize("path, language, text", [
    ("dispatch.py", "python",
     "class UrlDispatcher(AbstractRouter):\n    NAME_SPLIT_RE = re.compile(r'[.:-]')\n\n"
     "    def __init__(self) -> None:\n        super().__init__()\n        self._resources = []\n"
     "        self._named_resources = {}\n        self._index = {}\n\n"
     + "".join(f"    def resolve_{i}(self, request):\n" + "".join(f"        step({i}, {j}, request)\n" for j in range(6))
               for i in range(4))),
    ("Axios.js", "javascript",
     "class Axios {\n  constructor(instanceConfig) {\n    this.defaults = instanceConfig || {};\n"
     "    this.interceptors = {\n      request: new InterceptorManager(),\n      response: new InterceptorManager()\n"
     "    };\n  }\n\n"
     + "".join(f"  request_{i}(config) {{\n" + "".join(f"    step({i}, {j}, config);\n" for j in range(6)) + "  }\n"
               for i in range(4)) + "}\n"),
])
def test_a_class_header_with_its_constructor_is_the_class(path, language, text):
    """What makes the class is where a query naming the class looks: its header and constructor
    are labelled the class (they were `UrlDispatcher.__init__`, `Axios.constructor`), the methods
    after them stay methods."""
    chunks = chunks_of(text, path, language, policy=ChunkingPolicy(code=300))
    assert_verbatim(text, chunks)
    first = chunks[0]
    name = first.text.split()[1].split("(")[0]
    assert ("__init__" in first.text or "constructor(" in first.text) and "request_0" not in first.text \
        and "resolve_0" not in first.text
    assert (first.context, first.symbol, first.chunk_kind) == (name, name, "class")
    assert {c.chunk_kind for c in chunks[1:]} == {"method"}


@pytest.mark.parametrize("path, language, text", [
    ("Inventory.swift", "swift",
     "/// Keeps the stock of one warehouse.\npublic actor Inventory {\n    private var items: [String: Int] = [:]\n\n"
     "    init(items: [String: Int]) {\n        self.items = items\n    }\n\n"
     "    func receive(_ name: String, count: Int) {\n"
     + "".join(f"        items[name, default: 0] += count * {i}\n" for i in range(8)) + "    }\n\n"
     + "".join(f"    func audit{n}() -> Int {{\n" + "".join(f"        check(items, {n}, {i})\n" for i in range(14))
               + "        return 0\n    }\n\n" for n in range(3)) + "}\n"),
    ("UserRepository.php", "php",
     "<?php\n\nclass UserRepository\n{\n    public function __construct(private Connection $db)\n    {\n    }\n\n"
     "    public function find(int $id): ?User\n    {\n"
     + "".join(f"        $row{i} = $this->db->select('users', $id, {i});\n" for i in range(8)) + "        return null;\n    }\n\n"
     + "".join(f"    public function audit{n}(): int\n    {{\n" + "".join(f"        check($this->db, {n}, {i});\n" for i in range(14))
               + "        return 0;\n    }\n\n" for n in range(3)) + "}\n"),
])
def test_a_class_header_with_its_constructor_is_the_class_with_a_longer_method_after_it(path, language, text):
    """`public actor Inventory`, its documentation, fields and `init` were labelled by `receive`,
    the longer method after them, in the same chunk: a query naming the class met a method."""
    chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    first = chunks[0]
    assert ("init(" in first.text or "__construct" in first.text) and ("func receive" in first.text or "function find" in first.text)
    assert "audit2" not in first.text  # a piece of the class, not all of it
    name = path.split(".")[0]
    assert (first.context, first.symbol, first.chunk_kind) == (name, name, "class")


def test_a_chunk_names_its_other_definitions_as_members_but_not_its_labels_overloads():
    text = ("import typing as t\n\n\nclass Group:\n    @t.overload\n    def group(self, name: str) -> 'Group': ...\n\n"
            "    @t.overload\n    def group(self) -> 'Group': ...\n\n    def group(self, name=None):\n        return name\n\n"
            "    def add(self, cmd):\n        return cmd\n")
    chunks = chunks_of(text, "core.py", "python", policy=ChunkingPolicy(code=140))
    assert_verbatim(text, chunks)
    labelled = [c for c in chunks if c.context == "Group.group"]
    assert labelled and all(m[1] != "Group.group" for c in labelled for m in c.members)
    assert ("add", "Group.add", "method", 14, 15) in {m for c in labelled for m in c.members}
    # the class around the label: no lines (a question's words in them are the label's too)
    assert ("Group", "Group", "class", 0, 0) in {m for c in labelled for m in c.members}


def test_a_chunk_names_every_other_definition_in_it_as_a_member():
    text = "class Codes:\n" + "".join(f"    def code_{n}(self):\n        return {n}\n\n" for n in range(8))
    chunks = chunks_of(text, "codes.py", "python", policy=ChunkingPolicy())
    assert [c.context for c in chunks] == ["Codes"]
    assert [m[:2] for m in chunks[0].members] == [(f"code_{n}", f"Codes.code_{n}") for n in range(8)]
    # inside the class that labels the chunk: their lines, for a question's words to choose by
    assert [m[3:] for m in chunks[0].members] == [(2 + 3 * n, 3 + 3 * n) for n in range(8)]


def test_members_beside_the_label_carry_their_lines_with_their_documentation():
    text = ("import os\n\n\n# Exit the current block.\ndef halt():\n    throw('halt')\n\n"
            "# Pass control to the next matching route.\ndef pass_():\n    throw('pass')\n\n"
            "def forward(app):\n    status = app.call()\n    app.status = status\n"
            "    app.body = status.body\n    return None\n")
    chunks = chunks_of(text, "base.py", "python", policy=ChunkingPolicy(code=300))
    assert_verbatim(text, chunks)
    assert [(c.start_line, c.end_line, c.context) for c in chunks] == [(1, 16, "forward")]
    assert chunks[0].members == (("halt", "halt", "function", 4, 6), ("pass_", "pass_", "function", 8, 10))


def test_a_definition_of_over_half_the_budget_stays_a_chunk_of_its_own_beside_a_small_one():
    # 108 and 48 characters fit one chunk of 160; the first is big enough to stand alone, and the
    # second, merged into it, was found only as part of `parse_header`.
    text = ("def parse_header(line):\n    name, value = line.split(\":\", 1)\n"
            "    return name.strip().lower(), value.strip()\n\n\ndef is_blank(line):\n    return not line.strip()\n")
    chunks = chunks_of(text, "headers.py", "python")
    assert_verbatim(text, chunks)
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == [(1, 3, "parse_header"), (6, 7, "is_blank")]


def test_a_yaml_block_scalar_too_big_for_the_budget_starts_with_its_key():
    """Split into its children, the scalar lost its text (in none of them) and its key's line was a
    chunk of its own, the text after it cut apart from what it is the value of."""
    text = ("name: build\nscript: |\n" + "".join(f"  echo step number {i} of the long build script here\n"
                                                 for i in range(12)) + "after: done\n")
    chunks = chunks_of(text, "ci.yml", "yaml", kind="config")
    assert_verbatim(text, chunks)
    first = next(c for c in chunks if "script: |" in c.text)
    assert "echo step number 0 " in first.text


def test_a_decorator_above_a_typescript_method_is_in_the_method_s_chunk():
    text = ('export class Panel {\n  @Input()\n  title = "a panel with a long title that is here";\n\n'
            '  @HostListener("window:resize", ["$event"])\n  onResize(event: Event): void {\n'
            '    this.width = (event.target as Window).innerWidth;\n  }\n\n'
            '  @Output()\n  closed = new EventEmitter<void>();\n}\n')
    chunks = chunks_of(text, "panel.ts", "typescript")
    assert_verbatim(text, chunks)
    method = by_symbol(chunks, "onResize")
    assert (method.context, method.start_line, method.end_line) == ("Panel.onResize", 5, 8)
    assert method.text.startswith('  @HostListener("window:resize"')


def test_a_long_docstring_is_cut_by_lines_and_its_first_piece_keeps_the_class_header():
    doc = "".join(f"    Line {i} of a long description of the form, kept verbatim for the reader.\n" for i in range(60))
    methods = "".join(f"    def m{i}(self):\n        return {i} * self.value_of_something_long\n\n" for i in range(30))
    text = f'class PasswordForm:\n    """\n{doc}    """\n\n{methods}'
    chunks = chunks_of(text, "forms.py", "python", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    first = chunks[0]
    assert first.text.startswith('class PasswordForm:\n    """\n    Line 0 of')  # not the header and its quotes alone
    assert first.context == "PasswordForm"


def test_pieces_of_a_documentation_comment_cut_from_its_method_carry_the_methods_scope():
    javadoc = "    /**\n" + "".join(f"     * step {i}: how the store saves an item, in detail\n" for i in range(60)) + "     */\n"
    body = "".join(f"        items.add(item.copy({i}));\n" for i in range(40))
    text = "class Store {\n" + javadoc + "    public void save(Item item) {\n" + body + "    }\n}\n"
    chunks = chunks_of(text, "Store.java", "java", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    doc_rows = range(2, 2 + javadoc.count("\n"))
    pieces = [c for c in chunks if c.start_line in doc_rows]
    assert len(pieces) > 1  # the comment alone exceeds the budget
    assert {(c.context, c.symbol) for c in pieces} == {("Store.save", "save")}
    assert all(not c.definitions for c in pieces if c.end_line in doc_rows)  # documentation, not the definition
    # Every piece of the method, its documentation's too, widens (`--expand scope`) to the method
    # with its documentation: the documentation's pieces widened to the whole class.
    method = (2, text.count("\n") - 1)
    assert {c.scope for c in chunks if c.start_line >= 2 and c.end_line <= method[1]} == {method}


RUST = '''\
use std::fmt;

pub struct Router {
    routes: Vec<String>,
}

impl Service for Router {
    fn call(&self, request: Request) -> Response {
        let handler = |r: &Request| r.path().to_string();
        let path = handler(&request);
        Response::new(path, self.routes.len())
    }
}

impl Router {
    pub fn new() -> Self {
        Router { routes: Vec::new(), }
    }
}

#[derive(Debug)]
enum Method { Get, Post }

trait Service {
    fn call(&self, request: Request) -> Response;
}

const MAX_ROUTES: usize = 64;
'''


def test_rust_impls_traits_and_closures():
    chunks = chunks_of(RUST, "src/router.rs", "rust")
    assert_verbatim(RUST, chunks)
    call = [c for c in chunks if c.symbol == "call" and c.chunk_kind == "method"][0]
    assert call.context == "impl Service for Router.call"
    assert by_symbol(chunks_of(RUST, "src/router.rs", "rust", TINY), "new").context == "impl Router.new"
    assert "#[derive(Debug)]" in next(c for c in chunks if "enum Method" in c.text).text  # the attribute stays with it
    assert {"Router", "call", "handler", "new", "Method", "Service", "MAX_ROUTES"} <= defined(chunks)
    # `impl Service for Router` defines behaviour for Router, not Service (nor Router, defined above)
    impl_row = next(n for n, line in enumerate(split_lines(RUST), 1) if line.startswith("impl Service for Router"))
    impl_chunk = [c for c in chunks if c.start_line <= impl_row <= c.end_line]
    assert impl_chunk and all(not {"Service", "Router"} & set(c.definitions or ()) for c in impl_chunk)


JAVASCRIPT = '''\
import { thing } from "./thing.js";

export class Widget extends Base {
  render(target) {
    const inner = () => target.appendChild(this.element(thing, "with a long argument list"));
    return inner();
  }
}

function setup(app) {
  const onRequest = function (req) { return app.handle(req, { verbose: true, retries: 3 }); };
  app.use(onRequest);
}

export const DEFAULT_TIMEOUT = 3000;
'''


def test_javascript_classes_methods_and_closures():
    chunks = chunks_of(JAVASCRIPT, "src/widget.js", "javascript")
    assert_verbatim(JAVASCRIPT, chunks)
    tiny = chunks_of(JAVASCRIPT, "src/widget.js", "javascript", TINY)
    assert by_symbol(tiny, "inner").context == "Widget.render.inner"
    assert by_symbol(tiny, "onRequest").context == "setup.onRequest"
    assert {"Widget", "render", "inner", "setup", "onRequest", "DEFAULT_TIMEOUT"} <= defined(chunks)


JS_ASSIGNED = '''\
var res = Object.create(http.ServerResponse.prototype);

/**
 * Transfer the file at the given path, setting the Content-Type from its extension.
 */
res.sendFile = function sendFile(path, options, callback) {
  var done = callback;
  if (!path) throw new TypeError("path argument is required to res.sendFile");
  return send(this.req, path, options).pipe(this);
};

Router.prototype.route = (path) => {
  const route = new Route(path, { strict: this.strict, caseSensitive: this.caseSensitive });
  return route;
};
'''


def test_javascript_functions_assigned_to_properties_are_definitions():
    chunks = chunks_of(JS_ASSIGNED, "lib/response.js", "javascript", TINY)
    assert_verbatim(JS_ASSIGNED, chunks)
    send = by_symbol(chunks, "sendFile")
    assert (send.context, send.chunk_kind) == ("res.sendFile", "function")
    assert by_symbol(chunks, "route").context == "Router.prototype.route"
    assert {"sendFile", "route"} <= defined(chunks)


JS_EXPORTED = """\
'use strict';

/**
 * Render the template at fileName with the options given.
 */
module.exports = function renderFile(fileName, options, callback) {
  var template = compile(read(fileName), options);
  callback(null, template(options.locals));
};

exports.clearCache = function () {
  cache.reset();
};
"""


def test_a_commonjs_export_of_a_named_function_is_a_definition_of_that_name_not_of_exports():
    """`module.exports` names the module's export object: the chunk was labelled `exports`, and a
    search for `renderFile` found no definition of it. An anonymous function keeps the property."""
    chunks = chunks_of(JS_EXPORTED, "lib/render.js", "javascript", TINY)
    assert_verbatim(JS_EXPORTED, chunks)
    render = by_symbol(chunks, "renderFile")
    assert (render.context, render.chunk_kind) == ("renderFile", "function")
    (defining,) = [c for c in chunks if "renderFile" in (c.definitions or ())]
    assert "module.exports = function renderFile(" in defining.text and "exports" not in defined(chunks)
    assert by_symbol(chunks, "clearCache").context == "exports.clearCache"


def test_a_name_bound_to_an_import_is_an_alias_not_a_definition():
    zig = "pub const references = @import(\"features/references.zig\");\npub const LIMIT: u32 = 64;\n"
    assert defined(chunks_of(zig, "src/root.zig", "zig")) == {"LIMIT"}
    js = "const fs = require(\"fs\");\nconst load = import(\"./load.js\");\nexport const LIMIT = 64;\n"
    assert defined(chunks_of(js, "lib/index.js", "javascript")) == {"LIMIT"}
    lua = "local util = require \"util\"\nlocal LIMIT = 64\n"
    assert "util" not in defined(chunks_of(lua, "lua/root.lua", "lua"))


LUA_ASSIGNED = '''\
local M = {}

M.setup = function(opts)
  local merged = vim.tbl_extend("force", M.defaults, opts or {}, { source = "setup call" })
  return merged
end

local helper = function(value)
  return tostring(value) .. " formatted for the picker window, with padding"
end

return M
'''


def test_lua_functions_assigned_to_fields_and_locals_are_definitions():
    chunks = chunks_of(LUA_ASSIGNED, "lua/picker/config.lua", "lua", TINY)
    assert_verbatim(LUA_ASSIGNED, chunks)
    assert by_symbol(chunks, "setup").context == "M.setup"
    assert by_symbol(chunks, "helper").context == "helper"
    assert {"setup", "helper"} <= defined(chunks)


TYPESCRIPT = '''\
export interface Options {
  timeout: number;
  retries: number;
}

export type Handler = (event: string) => void;

export enum Level { Low, High }

export abstract class Client {
  abstract send(message: string): Promise<void>;

  async connect(options: Options): Promise<void> {
    await this.open(options.timeout, options.retries, "a long enough argument");
  }
}

namespace Internal {
  export function helper(): number { return 1; }
}
'''


def test_typescript_interfaces_types_enums_and_abstract_classes():
    chunks = chunks_of(TYPESCRIPT, "src/client.ts", "typescript")
    assert_verbatim(TYPESCRIPT, chunks)
    assert {"Options", "Handler", "Level", "Client", "send", "connect", "Internal", "helper"} <= defined(chunks)
    assert by_symbol(chunks, "connect").context == "Client.connect"
    # .tsx files parse with the TSX grammar
    tsx = "export function App() {\n  return <div className=\"app\">hello</div>;\n}\n"
    assert "App" in defined(chunks_of(tsx, "src/App.tsx", "typescript"))


GO = '''\
package server

type Server struct {
	Addr string
}

type Handler interface {
	Serve(req *Request) error
}

func (s *Server) Serve(req *Request) error {
	return s.handle(req, "a long string that makes this function big enough to stand alone")
}

func New(addr string) *Server {
	return &Server{Addr: addr}
}

const DefaultAddr = ":8080"
'''


def test_go_receivers_types_and_constants():
    chunks = chunks_of(GO, "server/server.go", "go")
    assert_verbatim(GO, chunks)
    serve = [c for c in chunks if c.symbol == "Serve" and c.chunk_kind == "method"][0]
    assert serve.context == "Server.Serve"
    assert {"Server", "Handler", "Serve", "New", "DefaultAddr"} <= defined(chunks)


def test_go_methods_of_a_generic_type_are_filed_under_the_type_and_haskell_instances_under_their_head():
    go = ("package s\n\ntype Stack[T any] struct {\n\titems []T\n}\n\nfunc (s *Stack[T]) Push(v T) {\n"
          "\ts.items = append(s.items, v)\n}\n\nfunc (Stack[T]) Len() int {\n\treturn 0\n}\n")
    chunks = chunks_of(go, "s.go", "go", TINY)
    assert by_symbol(chunks, "Push").context == "Stack.Push" and by_symbol(chunks, "Len").context == "Stack.Len"
    hs = ("module A where\n\ninstance (FromJSON a, FromJSON b, FromJSON c) => FromJSON (a, b, c) where\n"
          "    parseJSON = withArray \"(a, b, c)\" $ \\t -> do\n        pure undefined\n")
    (instance,) = [c for c in chunks_of(hs, "A.hs", "haskell", TINY) if "parseJSON" in c.text]
    assert instance.context.startswith("instance FromJSON (a, b, c)")  # not `instance (FromJSON a, FromJSON b, FromJSON`


def test_a_haskell_instance_defines_its_methods_not_the_class_it_instantiates():
    """Like Rust's `impl Trait for T`: `class FromJSON` found a five-line tuple instance first."""
    hs = ("module A where\n\nclass FromJSON a where\n    parseJSON :: Value -> Parser a\n\n"
          "instance (FromJSON a, FromJSON b) => FromJSON (a, b) where\n"
          "    parseJSON = withArray \"(a, b)\" $ \\t -> do\n        pure undefined\n")
    chunks = chunks_of(hs, "A.hs", "haskell", TINY)
    instance = [c for c in chunks if c.context.startswith("instance FromJSON (a, b)")]
    assert instance and not any("FromJSON" in c.definitions for c in instance)
    assert any("parseJSON" in c.definitions for c in instance)
    assert any("FromJSON" in c.definitions for c in chunks if "class FromJSON a where" in c.text)


def test_operators_are_named_by_their_symbol_and_a_query_for_one_asks_for_that_definition():
    """Every C++ and C# operator was named `operator` (`operator!=` came out as `operator!`), so
    `operator<` found whichever operator of the file ranked first."""
    from retrieval.lexical.features import def_term
    from retrieval.query import plan_query
    from retrieval.ranking import RankingConfig

    cpp = ("namespace ns {\nstruct Value {\n  bool operator==(const Value& o) const { return true; }\n"
           "  bool operator!=(const Value& o) const { return false; }\n  int& operator[](int i) { return x; }\n"
           "  Value operator()(int a) { return *this; }\n  operator bool() const { return true; }\n};\n}\n")
    named = {c.context: c.symbol for c in chunks_of(cpp, "value.hpp", "cpp", TINY)}
    assert {named[f"ns.Value.{op}"] for op in ("operator==", "operator!=", "operator[]", "operator()")} == {
        "operator==", "operator!=", "operator[]", "operator()"}
    cs = ("namespace N {\nstruct V {\n  public static bool operator ==(V a, V b) => true;\n"
          "  public static implicit operator int(V v) => 1;\n}\n}\n")
    named = {c.context: c.symbol for c in chunks_of(cs, "V.cs", "csharp", TINY)}
    assert named["N.V.operator =="] == "operator==" and named["N.V.implicit operator int"] == "operator"
    for query in ("operator<", "Value::operator==", "operator()"):
        op = query.split("::")[-1]
        assert plan_query(query, RankingConfig()).weights[def_term(op)] == RankingConfig().symbol_definition_weight


def test_a_cpp_header_named_h_is_parsed_as_cpp_and_a_c_header_as_c():
    cpp = ("#pragma once\nnamespace absl {\nclass Cord {\n public:\n  Cord();\n  void Append(const Cord& src) {\n"
           "    contents_.Append(src.contents_, and_a_long_argument_list_here);\n  }\n};\n}  // namespace absl\n")
    chunks = chunks_of(cpp, "absl/strings/cord.h", "c", TINY)
    assert by_symbol(chunks, "Append").context == "absl.Cord.Append"
    # Parsed as C, the namespace and the class both came out as functions.
    assert [by_symbol(chunks, name).chunk_kind for name in ("absl", "Cord", "Append")] == ["namespace", "class", "method"]
    c = "#ifndef BUF_H\n#define BUF_H\nstruct buffer {\n  char *data;\n  int len;\n};\nint buffer_grow(struct buffer *b, int n);\n#endif\n"
    assert "buffer" in defined(chunks_of(c, "lib/buf.h", "c", TINY))


@pytest.mark.parametrize("path, language, text, name, kind", [
    ("server.h", "c", "typedef struct redisObject {\n    unsigned type:4;\n} robj;\n", "robj", "type"),
    ("vec.hpp", "cpp", "template <typename T>\nusing Vec = std::vector<T>;\n", "Vec", "type"),
    ("package.scala", "scala", "package object cats {\n  type Id[A] = A\n}\n", "cats", "module"),
    ("ord.scala", "scala", "given intOrd: Ord[Int] with\n  def compare(x: Int, y: Int) = x - y\n", "intOrd", "impl"),
    ("Handler.cs", "csharp", "namespace Foo;\n\npublic delegate void Handler(object sender, EventArgs e);\n", "Handler", "type"),
])
def test_typedefs_aliases_givens_and_delegates_are_definitions(path, language, text, name, kind):
    chunks = chunks_of(text, path, language, TINY)
    assert name in defined(chunks)  # `robj` is found as defined where redis's typedef says so
    assert any(c.symbol == name and c.chunk_kind == kind for c in chunks), [(c.symbol, c.chunk_kind) for c in chunks]


JAVA = '''\
package com.example;

/** Outer documentation. */
public class Outer {
    private final int size = 3;

    static class Inner implements Runnable {
        @Override
        public void run() {
            System.out.println("running the inner task with a long message " + size);
        }
    }

    public Outer() {
        super();
    }

    interface Listener { void onEvent(String name); }

    enum Color { RED, GREEN }
}
'''


def test_java_nested_classes_annotations_and_constructors():
    chunks = chunks_of(JAVA, "src/Outer.java", "java")
    assert_verbatim(JAVA, chunks)
    run = by_symbol(chunks, "run")
    assert run.context == "Outer.Inner.run"
    assert "@Override" in run.text
    assert {"Outer", "Inner", "run", "Listener", "onEvent", "Color"} <= defined(chunks)
    assert "/** Outer documentation. */" in by_symbol(chunks, "Outer").text


C = '''\
#include <stdio.h>
#define BUFFER_SIZE 4096

struct buffer {
    char data[BUFFER_SIZE];
    size_t length;
};

/* Write a buffer to a stream, all of it. */
static int *write_all(struct buffer *buf, FILE *out) {
    fwrite(buf->data, 1, buf->length, out);
    return NULL;
}

typedef enum { MODE_READ, MODE_WRITE } mode_t;
'''


def test_c_functions_structs_macros():
    chunks = chunks_of(C, "src/buffer.c", "c")
    assert_verbatim(C, chunks)
    write_all = by_symbol(chunks, "write_all")
    assert write_all.chunk_kind == "function"
    assert "/* Write a buffer to a stream, all of it. */" in write_all.text
    assert {"BUFFER_SIZE", "buffer", "write_all"} <= defined(chunks)


# One branch of an `else if` chain inside `#ifdef`: tree-sitter parses it as a function `if`.
C_BRANCH_IN_IFDEF = '''\
static int state_performing(struct Curl_easy *data)
{
  if(done) {
    result = 1;
  }
#ifndef CURL_DISABLE_HTTP
  else if((result == CURLE_HTTP2_STREAM) &&
          Curl_h2_http_1_1_error(data)) {
    CURLcode ret = Curl_retry_request(data, &newurl);
  }
#endif
  return result;
}
'''


def test_a_branch_the_preprocessor_cuts_from_its_function_is_not_a_function_named_if():
    chunks = chunks_of(C_BRANCH_IN_IFDEF, "lib/multi.c", "c", policy=ChunkingPolicy())
    assert_verbatim(C_BRANCH_IN_IFDEF, chunks)
    assert defined(chunks) == {"state_performing"}
    assert all(c.context == "state_performing" for c in chunks)


CPP = '''\
namespace gfx {

class Widget {
public:
    void draw(Canvas& canvas) const {
        canvas.rectangle(x_, y_, width_, height_, "a label long enough to split this");
    }
private:
    int x_, y_, width_, height_;
};

template <typename T>
T clamp(T value, T low, T high) {
    return value < low ? low : (value > high ? high : value);
}

}  // namespace gfx

void gfx::Widget::resize(int w, int h) { width_ = w; height_ = h; }
'''


def test_cpp_namespaces_classes_templates():
    chunks = chunks_of(CPP, "src/widget.cpp", "cpp")
    assert_verbatim(CPP, chunks)
    assert by_symbol(chunks_of(CPP, "src/widget.cpp", "cpp", TINY), "draw").context == "gfx.Widget.draw"
    assert {"gfx", "Widget", "draw", "clamp", "resize"} <= defined(chunks)


RUBY = '''\
module Billing
  class Invoice < Base
    def total
      items.sum { |item| item.price * item.quantity } + shipping_cost_for(items)
    end

    def self.build(attrs)
      new(attrs)
    end
  end
end
'''


def test_ruby_modules_classes_methods():
    chunks = chunks_of(RUBY, "lib/billing/invoice.rb", "ruby", TINY)
    assert_verbatim(RUBY, chunks)
    assert by_symbol(chunks, "total").context == "Billing.Invoice.total"
    assert {"Billing", "Invoice", "total", "build"} <= defined(chunks)


def test_other_languages_find_their_definitions():
    samples = {
        ("lib/foo.ex", "elixir"): ("defmodule Foo.Bar do\n  def baz(x), do: x\n  defp qux(y) do\n    y\n  end\nend\n",
                                   {"Bar", "baz", "qux"}),
        ("src/Foo.hs", "haskell"): ("module Foo where\n\nfoo :: Int -> Int\nfoo x = x + 1\n\ndata Shape = Circle | Square\n",
                                    {"foo", "Shape"}),
        ("src/a.kt", "kotlin"): ("class Foo {\n  fun bar(): Int = 1\n}\nobject Registry\ninterface Port\n",
                                 {"Foo", "bar", "Registry", "Port"}),
        ("src/a.swift", "swift"): ("class Foo {\n  func bar() {}\n}\nprotocol P {}\nstruct S {}\n", {"Foo", "bar", "P", "S"}),
        ("src/a.scala", "scala"): ("object O { def f(x: Int): Int = x }\ntrait T\nclass C\n", {"O", "f", "T", "C"}),
        ("src/a.php", "php"): ("<?php\nclass Foo { public function bar() {} }\nfunction top() {}\n", {"Foo", "bar", "top"}),
        ("src/a.cs", "csharp"): ("namespace N { class C { int M() { return 1; } } interface I {} }\n", {"N", "C", "M", "I"}),
        ("a.lua", "lua"): ("local function f(x) return x end\nfunction M.g(y) end\n", {"f", "g"}),
        ("a.sh", "bash"): ("deploy() {\n  echo hi\n}\n", {"deploy"}),
        ("a.zig", "zig"): ("const Foo = struct {\n    pub fn bar(self: Foo) void {\n        const local = 1;\n"
                           "        _ = local;\n    }\n};\npub fn main() void {}\n", {"Foo", "bar", "main"}),
    }
    for (path, language), (text, expected) in samples.items():
        chunks = chunks_of(text, path, language)
        assert_verbatim(text, chunks)
        assert expected <= defined(chunks), (language, defined(chunks))
    # A grammar whose definition nodes were not checked: the patterns say what it defines, whole.
    from retrieval.lexical.features import defined_names

    text = "function Get-Thing {\n  param($x)\n}\nclass Widget {\n}\n"
    chunks = chunks_of(text, "a.ps1", "powershell")
    assert all(c.definitions is None for c in chunks)
    assert "Widget" in set().union(*(defined_names(c.text, "powershell") for c in chunks))
    zig = chunks_of(samples[("a.zig", "zig")][0], "a.zig", "zig")
    assert "local" not in defined(zig)  # a local constant is no definition


def test_a_long_function_is_cut_in_even_pieces_with_no_small_last_one():
    """The greedy cut left a few lines at a long function's end as a chunk of their own (689 of 8,732
    split functions), which ranked on its length alone: 31/30/11 lines, evenly 24/24/24 now."""
    body = "".join(f"    step_{i:02d} = prepare({i:02d})\n" for i in range(70))
    text = "def rotate(vault):\n" + body + "    return vault\n"
    chunks = chunks_of(text, "a.py", "python", ChunkingPolicy(code=800))
    assert_verbatim(text, chunks)
    sizes = [c.end_line - c.start_line + 1 for c in chunks]
    assert len(sizes) == 3 and max(sizes) - min(sizes) <= 1
    assert all(c.symbol == "rotate" for c in chunks)


def test_a_block_s_head_goes_with_its_body_not_at_the_end_of_the_chunk_before():
    """Cuts inside a long function left `do {`, `} else if (...) {` or `if route.is_json_stream:` as
    the last line of a chunk and the block's body in the next (1,440 cuts in a chunk review)."""
    head = "".join(f"    step_{i:02d} = prepare({i:02d})\n" for i in range(20))
    body = "".join(f"        late_{i:02d} = finish({i:02d})\n" for i in range(30))
    text = "def rotate(vault):\n" + head + "    # the slow path\n    if vault.sealed:\n" + body + "    return vault\n"
    chunks = chunks_of(text, "a.py", "python", ChunkingPolicy(code=600))
    assert_verbatim(text, chunks)
    opened = next(c for c in chunks if "if vault.sealed:" in c.text)
    assert opened.text.startswith("    # the slow path\n    if vault.sealed:\n        late_00")


def test_a_class_header_with_several_of_its_members_is_the_class():
    """laravel's `interface Mailable` and its first six documented signatures were one chunk labelled
    `Mailable.send`, and no chunk was the interface's (22% of the classes of two methods or more)."""
    methods = "".join(f"    /**\n     * Do {name} with the message.\n     *\n     * @param  mixed  $m\n     * @return mixed\n"
                      f"     */\n    public function {name}($m);\n\n"
                      for name in ("send", "queue", "later", "cc", "bcc", "to", "locale", "mailer", "attach", "with"))
    text = "<?php\n\nnamespace Illuminate\\Contracts\\Mail;\n\ninterface Mailable\n{\n" + methods + "}\n"
    chunks = chunks_of(text, "Mailable.php", "php", ChunkingPolicy(code=900))
    assert_verbatim(text, chunks)
    first = chunks[0]
    assert len(chunks) > 1 and first.symbol == "Mailable" and first.chunk_kind == "interface"
    assert {"send", "queue"} <= {m[0] for m in first.members}  # the methods: for a query naming one
    assert all(c.symbol != "Mailable" for c in chunks[1:])  # later chunks: their own methods


def test_scala_val_members_are_definitions_and_a_def_s_locals_are_not():
    """cats is made of `implicit val` instances (`catsStdShowForString`): none was a definition, and
    the forwarders naming one outranked it, rated high."""
    text = ("trait StringInstances {\n  implicit val catsStdShowForString: Show[String] = Show.fromToString\n"
            "  def f(x: Int): Int = {\n    val local = x + 1\n    local\n  }\n"
            "  implicit val catsStdInstancesForOption: Traverse[Option] =\n    new Traverse[Option] {\n"
            "      def pure[A](x: A): Option[A] = Some(x)\n    }\n}\n")
    chunks = chunks_of(text, "string.scala", "scala")
    assert_verbatim(text, chunks)
    assert {"catsStdShowForString", "catsStdInstancesForOption", "pure", "f"} <= defined(chunks)
    assert "local" not in defined(chunks)
    # abstract members too (a trait's `val name: String`), and Go's `var` stays a binding
    assert {"name", "count", "greet"} <= defined(chunks_of("trait Named {\n  val name: String\n  var count: Int\n"
                                                           "  def greet: String\n}\n", "Named.scala", "scala"))
    go = "package p\n\nvar Default = New()\n\nfunc f() {\n\tvar local int\n\t_ = local\n}\n"
    assert {"Default", "f"} <= defined(chunks_of(go, "p.go", "go")) and "local" not in defined(chunks_of(go, "p.go", "go"))


def test_a_lua_module_table_member_holding_a_table_is_a_definition():
    """telescope's actions are `actions.select_default = { pre = ..., action = ... }`: no definition,
    their chunks labelled `module ...`, and `actions.select_default` found 22nd."""
    text = ("local actions = {}\n\nactions.select_default = {\n  pre = function(bufnr)\n    return 1\n  end,\n"
            "  action = function(bufnr)\n    return 2\n  end,\n}\n\nactions.close = function(bufnr)\n  return 3\n"
            "end\n\nlocal function helper()\n  local opts = {\n    a = 1,\n  }\nend\n\nreturn actions\n")
    chunks = chunks_of(text, "lua/telescope/actions/init.lua", "lua")
    assert_verbatim(text, chunks)
    assert {"select_default", "close", "pre", "action"} <= defined(chunks)
    assert "opts" not in defined(chunks)  # a function's local table
    tiny = chunks_of(text, "lua/telescope/actions/init.lua", "lua", TINY)
    assert by_symbol(tiny, "select_default").context == "actions.select_default"


def test_the_row_opening_a_long_text_starts_the_chunks_of_that_text():
    """phoenix's router.ex: a chunk ended with `@moduledoc \"\"\"` and the documentation's chunk began
    with its first sentence; a long string assigned in Python lost its `html = \"\"\"` the same way."""
    doc = "".join(f"  Line {i} of the module documentation, which goes on at some length.\n" for i in range(40))
    elixir = ("defmodule Phoenix.Router do\n  defmodule NoRouteError do\n    defexception message: \"no route\"\n"
              "  end\n\n  @moduledoc \"\"\"\n" + doc + "  \"\"\"\n\n  def call(conn), do: conn\nend\n")
    python = "import os\n\napp = make_app()\n\nhtml = \"\"\"\n" + doc + "\"\"\"\n\n\ndef get():\n    return html\n"
    for text, path, language, opener in ((elixir, "router.ex", "elixir", '  @moduledoc """'),
                                         (python, "page.py", "python", 'html = """')):
        chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
        assert_verbatim(text, chunks)
        (first,) = [c for c in chunks if "Line 0 of the module" in c.text]
        assert first.text.startswith(opener + "\n")


def test_exunit_tests_label_their_blocks_and_a_tag_leads_its_test():
    """ecto's integration tests were all labelled with their module, and `@tag :slow` ended the
    chunk before the test it tags."""
    body = "".join(f"    assert Repo.get(Post, {i}).title == \"title {i}\"\n" for i in range(4))
    text = ("defmodule Ecto.AssocTest do\n  use ExUnit.Case\n\n  describe \"has_many\" do\n"
            f"    test \"loads posts\" do\n{body}    end\n  end\n\n  @tag :slow\n"
            f"  test \"preloads comments\" do\n{body}  end\nend\n")
    chunks = chunks_of(text, "assoc_test.exs", "elixir", TINY)
    assert_verbatim(text, chunks)
    contexts = {c.context for c in chunks}
    assert 'Ecto.AssocTest.describe "has_many".test "loads posts"' in contexts
    tagged = next(c for c in chunks if 'test "preloads comments" do' in c.text)
    assert tagged.text.startswith("  @tag :slow\n") and tagged.context == 'Ecto.AssocTest.test "preloads comments"'
    assert not {"test", "describe"} & defined(chunks)


@pytest.mark.parametrize("path, language", [("presence.test.js", "javascript"), ("presence.test.ts", "typescript")])
def test_jest_mocha_and_vitest_blocks_label_their_chunks(path, language):
    """phoenix's presence_test.js: the chunk of `describe("syncDiff")` was labelled `listBy`, a
    local arrow in one of its tests, and every other test chunk by the module."""
    body = "".join(f"    expect(Presence.syncDiff(state, {{joins: {i}}})).toEqual({{}})\n" for i in range(4))
    text = (f"import {{Presence}} from \"../js/phoenix\"\n\ndescribe(\"syncDiff\", () => {{\n"
            f"  it(\"adds new presences\", () => {{\n{body}  }})\n\n"
            f"  test(`removes left presences`, function () {{\n{body}  }})\n}})\n\n"
            "it(\"runs\", 5)\nconst describe2 = describe\n")
    chunks = chunks_of(text, path, language, TINY)
    assert_verbatim(text, chunks)
    assert {c.context for c in chunks} >= {'describe "syncDiff".it "adds new presences"',
                                           'describe "syncDiff".test `removes left presences`'}
    assert not {"describe", "it", "test"} & defined(chunks)  # labels, no names a query could be after
    # A call without a function of its own to run is no block (`it("runs", 5)`).
    assert not any(c.context.startswith('it "runs"') for c in chunks)


def test_rspec_and_minitest_blocks_label_their_chunks():
    body = "".join(f"      expect(User.new({i}).name).to eq(\"u{i}\")\n" for i in range(4))
    text = ("require \"spec_helper\"\n\nRSpec.describe User do\n  describe \"#name\" do\n"
            f"    it \"joins first and last\" do\n{body}    end\n  end\n\n  context \"when blank\" do\n"
            f"    it {{ is_expected.to be_invalid }}\n  end\nend\n\nclass UserTest < ActiveSupport::TestCase\n"
            f"  test \"saves\" do\n{body}  end\nend\n")
    chunks = chunks_of(text, "user_spec.rb", "ruby", TINY)
    assert_verbatim(text, chunks)
    assert {c.context for c in chunks} >= {'describe User.describe "#name".it "joins first and last"',
                                           'describe User.context "when blank"', 'UserTest.test "saves"'}
    assert not {"describe", "it", "test", "context"} & defined(chunks)


def test_elixir_doc_and_spec_attributes_stay_with_the_function_they_describe():
    text = ("defmodule Shop.Cart do\n"
            "  @doc \"Adds an item.\"\n  @spec add(t, item) :: t\n  def add(cart, item), do: [item | cart]\n\n"
            "  @doc \"\"\"\n  Removes an item from the cart.\n  \"\"\"\n  @impl true\n"
            "  def remove(cart, item) do\n    List.delete(cart, item)\n    |> Enum.reject(&is_nil/1)\n  end\nend\n")
    # Room for `add` and the next @doc, not for `remove` too: the @doc must not stay behind.
    budget = ChunkingPolicy(code=180, prose=180, config=180, default=180)
    chunks = chunks_of(text, "lib/shop/cart.ex", "elixir", policy=budget)
    assert_verbatim(text, chunks)
    remove = by_symbol(chunks, "remove")
    assert remove.text.lstrip().startswith('@doc """') and "@impl true" in remove.text
    assert "@spec add" in by_symbol(chunks, "add").text


def test_a_grammar_without_definition_types_leaves_definitions_to_the_patterns():
    chunks = chunks_of("(defn greet [name]\n  (str \"hi \" name))\n", "core.clj", "clojure")
    assert chunks and all(c.definitions is None for c in chunks)


MARKDOWN = '''\
Intro line.

# Guide

Some text.

## Install

```sh
# not a heading
pip install thing
```

## Usage { #usage }

Use it.

### Advanced

More.
'''


def test_markdown_through_the_same_entry_point():
    chunks = chunks_of(MARKDOWN, "docs/guide.md", "markdown", policy=ChunkingPolicy(prose=40), kind="docs")
    assert_verbatim(MARKDOWN, chunks)
    contexts = [c.context for c in chunks]
    assert "Guide > Install" in contexts
    assert "Guide > Usage > Advanced" in contexts
    assert not any("not a heading" in c for c in contexts)


def test_languages_without_a_grammar_and_failed_parses_fall_back_to_lines(monkeypatch):
    from retrieval.chunking import parsing

    text = "plain text\n\nmore text\n"
    chunks = chunks_of(text, "notes.txt", "text", kind="docs")
    assert chunks and all(c.chunk_kind == "" and c.definitions is None for c in chunks)

    def broken(grammar):
        raise ValueError("no parser")

    monkeypatch.setattr(parsing, "parser_for", broken)
    chunks = chunks_of(PYTHON, "pkg/mod.py", "python")
    assert_verbatim(PYTHON, chunks)
    assert all(c.chunk_kind == "" for c in chunks)


def test_broken_syntax_still_gives_verbatim_chunks_with_definitions():
    text = PYTHON.replace("def run(self, items):", "def run(self, items:") + "\nclass Broken(\n    x = \n"
    chunks = chunks_of(text, "pkg/mod.py", "python")
    assert_verbatim(text, chunks)
    assert {"Outer", "make_handler"} <= defined(chunks)
    assert chunks[-1].end_line == len(split_lines(text))


def test_a_file_whose_root_is_an_error_but_whose_definitions_mostly_parse_is_chunked_by_them():
    """A grammar that cannot read one construct (Kotlin's `..<` range in a `when` here) may give up at
    the root and still read most definitions whole under it: such a file was cut by lines, every
    chunk unlabelled (kotlinx's 3,000-line BufferedChannel.kt)."""
    methods = "".join(f"    fun step{i}(x: Int): Int {{\n        return x + {i}\n    }}\n\n" for i in range(20))
    unreadable = """    override fun toString(): String {
        val out = StringBuilder()
        outer@ while (true) {
            cells@ for (i in 0 until SIZE) {
                if (i >= limit) break@outer
                val kind = when (state(i)) {
                    is Waiting<*> -> {
                        when (i) {
                            in low..<high -> "reader"
                            in high..<low -> "writer"
                            else -> "other"
                        }
                    }
                    EMPTY, DONE -> continue@cells
                    else -> "idle"
                }
                if (kind != null) {
                    out.append("($kind,$i),")
                } else {
                    out.append("$kind,")
                }
            }
            break
        }
        return out.toString()
    }
"""
    text = "package a\n\nclass Chan<E>(val n: Int) : Base<E> {\n" + methods + unreadable + "}\n"
    assert parsed_root(text, "kotlin").type == "ERROR"
    chunks = chunks_of(text, "Chan.kt", "kotlin")
    assert_verbatim(text, chunks)
    assert {f"step{i}" for i in range(20)} <= defined(chunks)
    assert any(c.chunk_kind for c in chunks)
    # A file mostly in error is still cut by lines
    broken = "package a\n\nclass Chan<E>(val n: Int) : Base<E> {\n" + methods[:200] + unreadable * 3 + "}\n"
    assert parsed_root(broken, "kotlin").type == "ERROR"
    assert all(c.chunk_kind == "" for c in chunks_of(broken, "Chan.kt", "kotlin"))


def test_a_go_struct_too_big_for_one_chunk_keeps_its_doc_and_header_with_its_first_fields():
    """`type X struct` is a type_spec inside a type_declaration: unwrapped like an export, or its
    doc comment and first line joined the small functions before it (gin's Engine)."""
    helpers = "".join(f"// Helper{i} returns a constant.\nfunc Helper{i}() int {{\n\treturn {i}\n}}\n\n" for i in range(4))
    fields = "".join(f"\t// Field{i} is documented.\n\tField{i} string\n" for i in range(60))
    text = f"package server\n\n{helpers}// Server serves requests.\n// It holds every setting.\ntype Server struct {{\n{fields}}}\n"
    chunks = chunks_of(text, "server.go", "go", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    doc = split_lines(text).index("// Server serves requests.\n") + 1
    (head,) = [c for c in chunks if c.start_line <= doc <= c.end_line]
    assert head.start_line == doc and head.symbol == "Server" and "Server" in head.definitions
    assert all(c.context == "Server" for c in chunks if c.start_line > doc)
    grouped = "package x\n\ntype (\n\tA int\n\tB string\n)\n"
    assert {"A", "B"} <= defined(chunks_of(grouped, "x.go", "go"))


def test_a_go_function_too_big_for_one_chunk_keeps_its_signature_with_its_first_statements():
    """Go's `statement_list`, all a function's `block` holds, fitted the budget: kept whole (with the
    comment opening the body), it could not join the function's header, and the first chunk was the
    documentation and the signature alone (gin's `ClientIP`, 7 of its 55 lines), the body another."""
    steps = "".join(f'\tif step{i}(value) {{\n\t\treturn "step {i} said so, in a message long enough"\n\t}}\n'
                    for i in range(19))
    doc = "".join(f"// Resolve's rule {i}: every step is asked in turn, and the first one that answers decides.\n"
                  for i in range(6))
    text = (f"package server\n\n{doc}func (s *Server) Resolve(value string) string {{\n"
            f"\t// The steps, most likely first.\n{steps}\treturn \"\"\n}}\n")
    budget = ChunkingPolicy().code
    assert len(steps) < budget < len(text) - len(doc)  # the body fits the budget, the function does not
    chunks = chunks_of(text, "server.go", "go", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (first, *rest) = [c for c in chunks if c.end_line >= 3]
    assert rest and all(c.context == "Server.Resolve" for c in (first, *rest))
    assert first.start_line <= 3 and "if step0(value)" in first.text and "if step1(value)" in first.text


def test_a_row_that_opens_a_definition_starts_its_chunk_not_the_end_of_the_previous_one():
    """Zig's `pub` is a node of its own before `fn`: it joined the small functions before it, the
    row it shares with the signature went to that chunk, and `resolve`'s chunk began in its body."""
    small = "".join(f"pub fn helper{i}(x: u32) u32 {{\n"
                    + "".join(f"    const v{j} = x + {j}; // step {j} of helper {i}\n" for j in range(6))
                    + "    return x;\n}\n\n" for i in range(3))
    big = ("pub fn resolve(tree: *const Tree, node: u32) u32 {\n"
           + "".join(f"    const value{j} = tree.lookup(node, {j}); // the {j}th lookup of the node\n" for j in range(18))
           + "    return node;\n}\n")
    text = 'const std = @import("std");\n\n' + small + big
    chunks = chunks_of(text, "a.zig", "zig", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (resolve,) = [c for c in chunks if c.symbol == "resolve"]
    assert resolve.text.startswith("pub fn resolve(") and resolve.end_line == len(split_lines(text))
    assert all("pub fn resolve" not in c.text for c in chunks if c is not resolve)


def test_a_function_whose_body_fits_but_not_with_its_header_gives_the_header_its_first_statements():
    """curl's style, `{` on a row of its own: the body was one unit that fit the budget, the
    documentation and the signature a chunk of their own, and the body's chunk had no signature."""
    doc = "/*\n" + "".join(f" * Rule {i}: every step is asked in turn, and the first one that answers decides.\n"
                          for i in range(6)) + " */\n"
    steps = "".join(f'  if(step{i}(value))\n    return "step {i} said so, in a message";\n' for i in range(22))
    text = ("#include <stdio.h>\n\n" + doc + "static const char *resolve(struct context *context,\n"
            "                           const char *value)\n{\n" + steps + '  return "";\n}\n')
    assert len(steps) < ChunkingPolicy().code < len(text) - len(doc)  # the body fits, the function does not
    chunks = chunks_of(text, "r.c", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (first, *rest) = [c for c in chunks if c.symbol == "resolve"]
    assert rest and "static const char *resolve(" in first.text and "if(step0(value))" in first.text


def test_a_short_comment_documenting_a_definition_is_in_its_chunk_not_at_the_end_of_the_one_before():
    """The function fitted the budget, not with its comment: the comment, too small to stand alone,
    joined the chunk before it, another function's (curl's vauth/digest.c)."""
    setup = "".join(f"    step_{i}(context); /* the {i}th step of the setup, said at length */\n" for i in range(14))
    work = "".join(f'    result += measure_{i}(context, "a message for the {i}th measure");\n' for i in range(20))
    text = (f"static void setup(struct context *context)\n{{\n{setup}}}\n\n"
            "/* Sum the measures of a context, each one asked in turn with the message it\n"
            " * is given, and return their total to the caller that asked for it\n */\n"
            f"static int measure(struct context *context)\n{{\n    int result = 0;\n{work}    return result;\n}}\n")
    chunks = chunks_of(text, "a.c", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (measure,) = [c for c in chunks if "static int measure(" in c.text]
    assert measure.text.startswith("/* Sum the measures") and measure.symbol == "measure"
    assert all("Sum the measures" not in c.text for c in chunks if c is not measure)


def test_a_module_around_one_class_names_the_class_not_the_module():
    """Rails' files wrap a class in its namespace (`module ActiveSupport` / `class OptionMerger`): the
    whole class was labelled `ActiveSupport`, a module, in 36 of 1,000 Ruby chunks."""
    text = ("# frozen_string_literal: true\n\nmodule ActiveSupport\n  class OptionMerger\n"
            "    def initialize(context, options)\n      @context, @options = context, options\n    end\n\n"
            "    def method_missing(name, *args)\n      @context.__send__(name, *args)\n    end\n  end\nend\n")
    (chunk,) = chunks_of(text, "option_merger.rb", "ruby", policy=ChunkingPolicy())
    assert (chunk.context, chunk.symbol, chunk.chunk_kind) == ("ActiveSupport.OptionMerger", "OptionMerger", "class")
    two = text.replace("  end\nend\n", "  end\n\n  class Other\n  end\nend\n")
    (chunk,) = chunks_of(two, "option_merger.rb", "ruby", policy=ChunkingPolicy())
    assert chunk.context == "ActiveSupport"  # a module holding more than one: itself


def test_go_declaration_groups_and_lists_define_every_name():
    """A `var (` group's specs sit in a var_spec_list the bindings never entered, and `B, C = 2, 3`
    defined only B."""
    text = "package x\n\nvar (\n\tA = 1\n\tB, C = 2, 3\n)\n\nconst (\n\tD, E = iota, 2\n\tF\n)\n\nvar G, H int\n"
    assert {"A", "B", "C", "D", "E", "F", "G", "H"} <= defined(chunks_of(text, "x.go", "go"))


def test_a_constructor_does_not_define_its_class_s_name():
    text = ("public class Fraction {\n    private int numerator;\n\n"
            "    public Fraction(int numerator) {\n        this.numerator = numerator;\n    }\n\n"
            "    public int value() {\n        return numerator;\n    }\n}\n")
    chunks = chunks_of(text, "Fraction.java", "java", policy=TINY)
    constructor = next(c for c in chunks if "public Fraction(" in c.text)
    assert constructor.context == "Fraction.Fraction" and "Fraction" not in constructor.definitions
    assert "Fraction" in chunks[0].definitions


def test_a_cpp_constructor_or_destructor_defined_out_of_its_class_defines_nothing():
    """`Socket::Socket(int fd)` and `Socket::~Socket()` in socket.cpp (the class is in the header)
    each defined `Socket`, the destructor's symbol `Socket` too."""
    text = ("namespace net {\nSocket::Socket(int fd) : fd_(fd) {\n    opened++;\n}\n\n"
            "Socket::~Socket() {\n    close(fd_);\n}\n\n"
            "int Socket::sendBytes(const char* data, int n) {\n    return write(fd_, data, n);\n}\n\n"
            "template <typename T>\nBox<T>::Box() {}\n}\n")
    chunks = chunks_of(text, "socket.cpp", "cpp", policy=TINY)
    by_line = {c.text.splitlines()[0]: c for c in chunks}
    made = by_line["Socket::Socket(int fd) : fd_(fd) {"]
    ended = by_line["Socket::~Socket() {"]
    assert (made.context, made.symbol, made.definitions) == ("net.Socket::Socket", "Socket", ())
    assert (ended.context, ended.symbol, ended.definitions) == ("net.Socket::~Socket", "~Socket", ())
    assert "Box" not in next(c for c in chunks if "Box<T>::Box()" in c.text).definitions
    assert "sendBytes" in next(c for c in chunks if "Socket::sendBytes(" in c.text).definitions  # a method defines its name
    # In its class, a destructor is `~Socket` too; a function written with a return type is no
    # constructor, out of a namespace of its name or in it.
    body = "".join(f"    puts(msg, {n});\n" for n in range(4))
    inside = ("class Socket {\npublic:\n    Socket(int fd) { fd_ = fd; }\n    ~Socket() { close(fd_); }\n};\n"
              f"namespace log {{\nvoid log(const char* msg) {{\n{body}}}\n}}\n"
              f"void log::log(const char* msg) {{\n{body}}}\n")
    chunks = chunks_of(inside, "x.cpp", "cpp", policy=TINY)
    ended = next(c for c in chunks if c.text.lstrip().startswith("~Socket()"))
    assert (ended.context, ended.symbol, ended.definitions) == ("Socket.~Socket", "~Socket", ())
    assert next(c for c in chunks if c.text.startswith("void log(")).definitions == ("log",)
    assert next(c for c in chunks if c.text.startswith("void log::log(")).definitions == ("log",)
    # A macro before a constructor, which the grammar reads as its return type, makes none of it.
    macro = (f"class Foo {{\npublic:\n    FOLLY_NOINLINE Foo() {{\n{body}    }}\n}};\n"
             f"MYLIB_API Foo::Foo(const char* s) {{\n{body}}}\n")
    chunks = chunks_of(macro, "foo.cpp", "cpp", policy=TINY)
    assert "Foo" not in next(c for c in chunks if "FOLLY_NOINLINE Foo()" in c.text and "class" not in c.text).definitions
    assert next(c for c in chunks if c.text.startswith("MYLIB_API Foo::Foo(")).definitions == ()


def test_a_file_of_many_tiny_statements_is_cut_in_time_proportional_to_its_length(monkeypatch):
    """499,000 lines of `;` took 38 s (60,000, 4.6 s): evening a split run's pieces weighs each statement against up
    to max_lines before it. A file's evening stops at its allowance; the greedy cut stays."""
    import retrieval.chunking.ast as ast_module

    calls = []
    real = ast_module._Splitter._even_run
    monkeypatch.setattr(ast_module._Splitter, "_even_run", lambda self, items, count: calls.append(len(items)) or real(
        self, items, count))
    text = ";\n" * 60_020  # (its last greedy piece 20 lines of 120: evened)
    chunks = chunks_of(text, "gen.js", "javascript", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert calls == []  # cut greedily
    # A real split body is still evened.
    body = "".join(f"    step_{n}(value, {n});\n" for n in range(130))
    chunks_of(f"function f(value) {{\n{body}}}\n", "f.js", "javascript", policy=ChunkingPolicy(code=1500))
    assert calls


def test_a_method_a_little_over_the_budget_with_its_javadoc_stays_whole():
    """Cut, the Javadoc was a chunk of its own and the three-line method joined the next one's Javadoc."""
    javadoc = "    /**\n" + "".join(f"     * Splits the text by character type, rule {i} of the camel case split.\n"
                                     for i in range(20)) + "     */\n"
    method = "    public static String[] splitCamel(final String str) {\n        return split(str, true);\n    }\n"
    other = "\n    public static int other() {\n" + "".join(f"        step{i}();\n" for i in range(40)) + "    }\n"
    text = "public class Strings {\n" + javadoc + method + other + "}\n"
    assert 1500 < len(javadoc + method) < 1.25 * 1500
    chunks = chunks_of(text, "Strings.java", "java", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (whole,) = [c for c in chunks if "splitCamel(" in c.text]
    assert javadoc + method in whole.text and "splitCamel" in whole.definitions and "step0" not in whole.text


def test_a_macro_block_a_little_over_the_budget_with_its_documentation_stays_whole():
    """abseil's attributes.h: `// ABSL_ATTRIBUTE_NONNULL` and 37 lines about it were a chunk of their
    own (an `#if` holding a `#define` is no definition node), and the `#if` joined the next macro's
    documentation: the hit for the documentation's words showed no macro."""
    doc = "// EXAMPLE_NONNULL\n//\n" + "".join(f"// Tells the compiler that parameter {i} of the function is never null.\n"
                                            for i in range(19))
    block = ("#if EXAMPLE_HAVE_ATTRIBUTE(nonnull) || defined(__GNUC__)\n"
             "#define EXAMPLE_NONNULL(arg_index) __attribute__((nonnull(arg_index)))\n"
             "#else\n#define EXAMPLE_NONNULL(...)\n#endif\n")
    other = ("\n// EXAMPLE_NORETURN\n//\n// Tells the compiler that a function never returns.\n"
             "#if EXAMPLE_HAVE_ATTRIBUTE(noreturn)\n#define EXAMPLE_NORETURN __attribute__((noreturn))\n"
             "#else\n#define EXAMPLE_NORETURN\n#endif\n")
    text = "#define EXAMPLE_WEAK 1\n\n" + doc + block + other  # (the file's opening comments are the file's)
    assert 1500 < len(doc + block) < 1.25 * 1500
    chunks = chunks_of(text, "attributes.h", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (whole,) = [c for c in chunks if "// EXAMPLE_NONNULL" in c.text]
    assert doc + block in whole.text and "EXAMPLE_NORETURN" not in whole.text
    # A file's opening comments are the file's, not its first statement's: a licence went with the
    # first `#include` (redis's geo.c: one chunk of 1,651 characters).
    licence = "/*\n" + "".join(f" * Copyright notice, line {i:02}: redistribution is permitted on conditions\n"
                               for i in range(20)) + " * All rights reserved by the authors.\n */\n"
    includes = '#include "geo.h"\n#include "geohash_helper.h"\n#include "debugmacro.h"\n'
    text = licence + includes + "\nstatic int helper(void) {\n    return 0;\n}\n"
    assert len(licence) < 1500 < len(licence + includes.split("\n")[0]) < 1.25 * 1500
    chunks = chunks_of(text, "geo.c", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert not [c for c in chunks if "Copyright" in c.text and "#include" in c.text]
    # One over the budget: cut in even pieces of its own, not at the budget with its tail on the
    # first `#include` (redis's geo.c: lines 1-25, then 26-29 with the include).
    licence = "/*\n" + "".join(f" * Copyright notice, line {i:02}: redistribution is permitted on conditions\n"
                               for i in range(27)) + " */\n"
    body = "".join(f"    total += step{i}(total);\n" for i in range(16))  # (a tiny rest joins the licence's tail)
    text = licence + includes + "\nstatic int helper(int total) {\n" + body + "    return total;\n}\n"
    assert 1500 < len(licence) < 2 * 1500
    chunks = chunks_of(text, "geo.c", "c", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    pieces = [c for c in chunks if "Copyright" in c.text]
    assert len(pieces) == 2 and pieces[-1].end_line == licence.count("\n")
    assert abs(len(pieces[0].text) - len(pieces[1].text)) < 200


def test_a_javadoc_over_the_budget_is_cut_in_even_pieces_and_its_short_method_keeps_to_the_last():
    """Cut greedily, a Javadoc left a three-line tail alone (commons-lang's deprecated `add`, 25 such
    tails in lang3), and the four lines of its method, too small to stand alone, joined the next
    method's Javadoc."""
    javadoc = "    /**\n" + "".join(f"     * Inserts the element at the index, rule {i} of how arrays grow here.\n"
                                     for i in range(26)) + "     */\n"
    method = "    @Deprecated\n    public static char[] add(final char[] array, final int index) {\n" \
             "        return insert(index, array);\n    }\n"
    other = "\n    /**\n     * Copies the array and adds the element at its end.\n     */\n" \
            "    public static char[] append(final char[] array) {\n" + "".join(
                f"        step{i}(array);\n" for i in range(30)) + "    }\n"
    first = "    public static int first() {\n" + "".join(f"        init{i}();\n" for i in range(40)) + "    }\n\n"
    text = "public class ArrayUtils {\n" + first + javadoc + method + other + "}\n"
    assert len(javadoc + method) > 1.25 * 1500 and len(javadoc) < 2 * 1500
    chunks = chunks_of(text, "ArrayUtils.java", "java", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (code,) = [c for c in chunks if "public static char[] add(" in c.text]
    assert "rule 25 of" in code.text and "Copies the array" not in code.text  # its own Javadoc's end
    pieces = [c for c in chunks if c.start_line > first.count("\n") and c.end_line < code.start_line]
    assert len(pieces) == 1 and all(c.end_line - c.start_line >= 9 for c in pieces + [code])
    assert {(c.context, c.symbol) for c in pieces + [code]} == {("ArrayUtils.add", "add")}


def test_a_keyword_in_a_grammar_s_name_field_names_nothing():
    text = "area <- function(r) {\n  pi * r^2\n}\n\nperimeter <- function(r) {\n  2 * pi * r\n}\n"
    chunks = chunks_of(text, "geo.R", "r", policy=TINY)
    assert_verbatim(text, chunks)
    assert not any("function" in (c.context, c.symbol) for c in chunks), [(c.context, c.symbol) for c in chunks]


def test_a_file_ending_inside_an_unclosed_block_is_chunked_whole():
    """The parser closes what the file leaves open with an empty node after its last line (a file
    being edited or cut short; Perl's data section after `__END__`): the splitter read a line that
    is not there and the whole treesitter index failed on that one file."""
    body = "".join(f"    total = total + compute_value_{i}(input, {i})\n" for i in range(60))
    cases = [
        ("package Greeter;\nsub hello { return 'hi' }\n1;\n__END__\n\n=head1 NAME\n\nGreeter - says hello\n",
         "Greeter.pm", "perl"),
        ("package x\n\nfunc f(input int) int {\n\ttotal := 0\n" + body.replace("    ", "\t").replace(" = ", " += ", 1), "x.go", "go"),
        ("f() {\n  total=0\n" + "".join(f"  total=$((total + {i}))\n" for i in range(80)), "x.sh", "bash"),
        ('resource "aws_vpc" "main" {\n' + "".join(f'  tag_{i} = "value-{i}-xxxxxxxxxxxxxxxxxxxx"\n' for i in range(40)),
         "main.tf", "hcl"),
        ("class A {\n  func f(input: Int) -> Int {\n    var total = 0\n" + body, "x.swift", "swift"),
    ]
    for text, path, language in cases:
        chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
        assert_verbatim(text, chunks)
        assert chunks[-1].end_line == len(split_lines(text)), path


def test_yaml_nested_past_what_its_parser_survives_is_cut_by_lines_in_the_same_process():
    """tree-sitter-yaml ends the process (SIGSEGV) past about 255 nested block collections."""
    import subprocess
    import sys

    script = (
        "from retrieval.chunking import ChunkingPolicy\n"
        "from retrieval.chunking.ast import chunk_source\n"
        "deep = ''.join('  ' * i + f'k{i}:\\n' for i in range(300)) + '  ' * 300 + 'v\\n'\n"
        "compact = '- ' * 300 + 'x\\n'\n"
        "for text in (deep, compact):\n"
        "    chunks = chunk_source(text, 'deep.yaml', language='yaml', kind='config', policy=ChunkingPolicy())\n"
        "    assert chunks and all(c.chunk_kind == '' for c in chunks)\n"
        "usual = 'a:\\n  b:\\n    - c: 1\\n      d: 2\\n'\n"
        "assert chunk_source(usual, 'ok.yaml', language='yaml', kind='config')[0].chunk_kind != ''\n"
        "print('survived')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "survived" in proc.stdout, (proc.returncode, proc.stderr[-2000:])


def test_a_tree_the_chunker_mishandles_costs_its_file_the_ast_chunks_not_the_index(monkeypatch):
    from retrieval.chunking import ast

    def fails(*args, **kwargs):
        raise IndexError("a chunker fault")

    monkeypatch.setattr(ast, "_annotate", fails)
    chunks = chunks_of(PYTHON, "pkg/mod.py", "python")
    assert_verbatim(PYTHON, chunks)
    assert all(c.chunk_kind == "" for c in chunks)  # by lines
    assert ast.MISHANDLED == ["pkg/mod.py: IndexError: a chunker fault"]
    ast.MISHANDLED.clear()  # caused on purpose (the suite fails on any other: tests/conftest.py)


def test_deep_nesting_and_minified_files_are_bounded():
    depth = 5000
    nested = "x = " + "[" * depth + "1" + "]" * depth + "\n"
    deep_lines = "".join("  " * i + "if (a) {\n" for i in range(300)) + "".join("}\n" for _ in range(300))
    for text, path, language in [
        (nested, "deep.py", "python"),
        ("function f() {\n" + deep_lines + "}\n", "deep.js", "javascript"),
        ("var a=1;" * 40000 + "\n", "app.min.js", "javascript"),
    ]:
        chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
        assert_verbatim(text, chunks)
        assert chunks
    minified = chunks_of("var a=1;" * 40000, "b.min.js", "javascript", policy=ChunkingPolicy())
    assert len(minified) == 1
    # Definitions side by side on one line are siblings, not each nested in the one before (that
    # chained thousands of names into every breadcrumb: memory quadratic in the line's length).
    functions = "".join(f"function f{i}(){{return {i}}}" for i in range(350))  # (under MINIFIED_BYTES: parsed)
    (line,) = chunks_of(functions, "c.min.js", "javascript", policy=ChunkingPolicy())
    assert line.context == "f0" and line.symbol == "f0"  # one name (siblings tie: the first), not a chain


def test_definitions_on_one_line_are_siblings_and_breadcrumbs_stay_bounded_however_deep():
    from retrieval.chunking.definitions import MAX_SCOPE

    one_line = chunks_of("function first(){return 1} function second(){return 2}\n", "a.js", "javascript",
                         policy=TINY)
    # (the line's chunk is `first`'s: what it says of `second` is in its members)
    named = {c.context for c in one_line} | {m[1] for c in one_line for m in c.members}
    assert "second" in named and "first.second" not in named
    depth = 60
    nested = "".join(f"{'  ' * i}function level{i}() {{\n" for i in range(depth)) + \
        "".join(f"{'  ' * (depth - 1 - i)}}}\n" for i in range(depth))
    chunks = chunks_of(nested, "deep.js", "javascript", policy=ChunkingPolicy())
    assert_verbatim(nested, chunks)
    assert all(len(c.context.split(".")) <= MAX_SCOPE for c in chunks)
    # The scope path of the innermost function names the innermost MAX_SCOPE levels.
    from retrieval.chunking.definitions import definitions
    from retrieval.chunking.parsing import parser_for

    found = definitions(parser_for("javascript").parse(nested.encode()), "javascript")
    assert all(len(d.path.split(".")) <= MAX_SCOPE for d in found)  # at every depth, the boundary's too
    innermost = found[-1]
    assert innermost.path == ".".join(f"level{i}" for i in range(depth - MAX_SCOPE, depth))


def test_thousands_of_parses_in_one_process():
    samples = [(PYTHON, "a.py", "python"), (RUST, "a.rs", "rust"), (JAVASCRIPT, "a.js", "javascript"),
               (TYPESCRIPT, "a.ts", "typescript"), (GO, "a.go", "go"), (JAVA, "A.java", "java"),
               (C, "a.c", "c"), (CPP, "a.cpp", "cpp"), (RUBY, "a.rb", "ruby")]
    total = 0
    for i in range(3000):
        text, path, language = samples[i % len(samples)]
        text = text + f"\n// {i}\n" if language not in ("python", "ruby") else text + f"\n# {i}\n"
        total += len(chunks_of(text, path, language, policy=ChunkingPolicy()))
    assert total >= 3000


def test_every_mapped_grammar_loads_and_parses():
    from retrieval.chunking.definitions import _query
    from retrieval.chunking.parsing import parser_for
    from retrieval.chunking.grammars import _BY_NAME, _BY_SUFFIX, GRAMMARS

    for grammar in sorted(set(GRAMMARS.values()) | set(_BY_SUFFIX.values()) | set(_BY_NAME.values())):
        tree = parser_for(grammar).parse(b"x\n")
        assert tree.root_node is not None, grammar
        _query(grammar)  # builds without error


def test_a_cuda_kernel_and_a_shader_are_chunked_by_their_grammars_and_define_their_functions():
    """CUDA parsed by its own grammar (`<<<...>>>` launches are errors to C++'s), its definitions
    read as C++'s where the tree does not say them; an HLSL entry point likewise as C's."""
    from retrieval.lexical.features import defined_names

    kernel = ("#include <cuda_runtime.h>\n\n__global__ void saxpy(int n, float a, const float *x, float *y) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n\n"
              "void launch(int n, float a, float *x, float *y) {\n  saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n")
    chunks = chunks_of(kernel, "kernels/saxpy.cu", "cuda", TINY)
    assert_verbatim(kernel, chunks)
    assert by_symbol(chunks, "saxpy").context == "saxpy" and by_symbol(chunks, "launch").context == "launch"
    assert defined_names(kernel, "cuda") == {"saxpy", "launch"}
    shader = "float4 main(float3 p : POSITION) : SV_POSITION {\n  return float4(p, 1);\n}\n"
    assert defined_names(shader, "hlsl") == {"main"}


def test_a_tcl_procedure_is_a_definition_named_by_its_name():
    """redis's test suite: `proc wait_for_ofs_sync` was a module-level chunk with no name."""
    text = ("proc wait_for_ofs_sync {r1 r2} {\n    wait_for_condition 50 100 {\n"
            "        [status $r1 master_repl_offset] eq [status $r2 master_repl_offset]\n    } else {\n"
            "        fail \"replica offset didn't match in time\"\n    }\n}\n")
    chunks = chunks_of(text, "tests/support/util.tcl", "tcl", TINY)
    assert_verbatim(text, chunks)
    assert (by_symbol(chunks, "wait_for_ofs_sync").context, by_symbol(chunks, "wait_for_ofs_sync").chunk_kind) == (
        "wait_for_ofs_sync", "function")


def test_a_go_mod_file_is_parsed_by_its_own_grammar_not_as_go():
    """Parsed as Go, every directive was an error node; the chunks stay verbatim either way."""
    from retrieval.chunking.grammars import grammar_for

    text = ("module example.com/shop\n\ngo 1.22\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.10.0\n)\n\n"
            "replace example.com/shop/internal => ./internal\n")
    assert grammar_for("go.mod", "go") == "gomod" and grammar_for("svc/go.mod", "go") == "gomod"
    assert grammar_for("svc/main.go", "go") == "go" and grammar_for("notgo.mod", "go") == "go"
    root = parsed_root(text, grammar_for("go.mod", "go"))
    assert not root.has_error
    assert [n.type for n in root.children] == ["module_directive", "go_directive", "require_directive",
                                               "replace_directive"]
    chunks = chunks_of(text, "go.mod", "go", kind="config")
    assert_verbatim(text, chunks)


def test_load_ast_chunk_documents(sample_repo):
    from retrieval import load_ast_chunk_documents

    docs = load_ast_chunk_documents(str(sample_repo))
    by_path = {}
    for d in docs:
        by_path.setdefault(d.source_path, []).append(d)
    config = by_path["src/app/config.py"]
    assert {"parse_config", "ConfigError"} <= {n for d in config for n in (d.definitions or ())}
    guide = by_path["docs/guide.md"]
    assert any(d.context.startswith("Guide") for d in guide)
    assert all(d.docid == f"{d.source_path}:{d.start_line}-{d.end_line}" for d in docs)


def test_chunks_of_a_cpp_header_named_h_are_labelled_cpp():
    chunks = chunks_of("namespace absl {\nclass Cord {\n public:\n  void Append();\n};\n}\n", "cord.h", "c", TINY)
    assert chunks and {c.language for c in chunks} == {"cpp"}


# -- labels and members found by auditing real repositories ------------------------------------


def test_a_whole_definition_does_not_join_the_end_of_one_split_before_it():
    """The end of a long method and a small class after it made one chunk labelled by the small
    class: 20 lines of `Ledger.close_books` filed as `Tiny.hi`."""
    body = "".join(f"        total = total + {i} * value  # step {i} of the computation\n" for i in range(14))
    text = "class Ledger:\n" + "".join(f"    def {n}(self, value):\n        total = 0\n{body}        return total\n\n"
                                       for n in ("open", "post", "close_books"))
    text += "\nclass Tiny:\n    def hi(self):\n        return 1\n"
    chunks = chunks_of(text, "ledger.py", "python", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    closing = next(c for c in chunks if "close_books" in c.text)
    assert (closing.context, closing.symbol) == ("Ledger.close_books", "close_books")
    assert "class Tiny" not in closing.text
    assert by_symbol(chunks, "Tiny").text.startswith("class Tiny:")


def test_a_methods_body_cut_from_its_documented_signature_is_still_that_method():
    """The body of a method just over the budget, with its class's closing brace, was labelled as
    the class (kind class, no definitions)."""
    doc = "".join(f"  // note {i}: this comment explains the integrity check in some detail, for readers\n"
                  for i in range(5))
    body = "".join(f"    const step{i} = this.items.filter(x => x.size > {i}).length\n" for i in range(30))
    text = f"export class Cache {{\n  private items: any[] = []\n\n{doc}  public async ensureIntegrity(): Promise<void> {{\n{body}  }}\n}}\n"
    chunks = chunks_of(text, "cache.ts", "typescript", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert len(chunks) > 1
    assert {(c.context, c.chunk_kind) for c in chunks} == {("Cache.ensureIntegrity", "method")}


def test_a_table_over_the_budget_only_with_its_comments_starts_its_own_chunk():
    """mini.nvim's `MiniPairs.config = {` (a value, no definition) ended the function before it,
    after the config's documentation, and the table was a chunk without its first line."""
    setup = "M.setup = function(config)\n" + "".join(f"  H.apply_option_{i}(config)\n" for i in range(12)) + "end\n"
    doc = "".join(f"--- Module config, line {i} of its documentation, with some detail.\n" for i in range(6))
    table = "M.config = {\n" + "".join(f"  option_{i} = {{ insert = true, command = false, terminal = false }},\n"
                                    for i in range(18)) + "}\n"
    text = "local M = {}\n\n" + setup + "\n" + doc + table + "\nreturn M\n"
    chunks = chunks_of(text, "pairs.lua", "lua", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (opening,) = [c for c in chunks if "M.config = {" in c.text]
    assert opening.text.startswith("M.config = {") and "option_17" in opening.text


def test_a_files_opening_comments_stay_with_its_first_line_of_code():
    """pandoc's module documentation, cut off from its `module` line and export list, was a short
    chunk of prose that outranked the code for the module's words."""
    doc = "{- |\n   Module      : Text.Pandoc.Readers.Org.Parsing\n" + "".join(
        f"   Line {i} of the module's documentation, at some length.\n" for i in range(12)) + "-}\n"
    exports = "".join(f"  , parserFunction{i}\n" for i in range(60))
    text = doc + "module Text.Pandoc.Readers.Org.Parsing\n  ( OrgParser\n" + exports + "  ) where\n\nx = 1\n"
    chunks = chunks_of(text, "Parsing.hs", "haskell", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert "module Text.Pandoc.Readers.Org.Parsing" in chunks[0].text


def test_a_definition_over_the_budget_only_with_its_documentation_stays_whole_after_it():
    """express's `res.sendFile = function sendFile(path, options, callback) {` joined its 40-line
    JSDoc and the body was a chunk of its own, without its signature: the documentation is cut
    off first, and the definition that fits is one chunk."""
    doc = "/**\n" + "".join(f" * Line {i} of the documentation of sendFile, with an example or two.\n"
                              for i in range(22)) + " */\n"
    body = "".join(f"  var step{i} = options.items.filter(function (x) {{ return x > {i} }});\n" for i in range(16))
    text = f"'use strict';\n\n{doc}\nres.sendFile = function sendFile(path, options, callback) {{\n{body}}};\n"
    chunks = chunks_of(text, "response.js", "javascript", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (defining,) = [c for c in chunks if "sendFile" in (c.definitions or ())]
    assert defining.text.startswith("res.sendFile = function sendFile(") and defining.text.rstrip().endswith("};")
    assert "Line 21 of the documentation" in chunks[chunks.index(defining) - 1].text


def test_a_block_a_test_macro_defines_is_named_by_its_arguments():
    """GoogleTest's `TEST(Suite, Name) { ... }` parses as a function named TEST: every test of a
    file was `TEST`, and `TEST` a definition in each. A function is still a function."""
    body = "".join(f"  EXPECT_EQ(value_{i}, {i});\n" for i in range(5))
    cpp = (f"namespace {{\n\nTEST(Uint128, AliasTests) {{\n{body}}}\n\nTYPED_TEST(IntTest, Parses) {{\n{body}}}\n\n"
           f"static void BM_Parse(benchmark::State& state) {{\n{body}}}\nBENCHMARK(BM_Parse);\n\n}}  // namespace\n")
    chunks = chunks_of(cpp, "int128_test.cc", "cpp", TINY)
    assert_verbatim(cpp, chunks)
    assert {(c.context, c.chunk_kind) for c in chunks if c.chunk_kind == "test"} == {
        ("Uint128.AliasTests", "test"), ("IntTest.Parses", "test")}
    assert "TEST" not in defined(chunks) and "TYPED_TEST" not in defined(chunks)
    assert by_symbol(chunks, "BM_Parse").chunk_kind == "function"


def test_cpp_functions_returning_a_reference_are_named_by_their_declarator():
    text = ("class Buffer {\n public:\n  const std::string& name() const { return name_; }\n"
            "  Buffer& append(const char* s) { return *this; }\n};\n"
            "std::vector<int>& Buffer::items() { return items_; }\n")
    chunks = chunks_of(text, "buffer.cpp", "cpp", ChunkingPolicy(code=30))
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, "name").context == "Buffer.name"
    assert by_symbol(chunks, "append").context == "Buffer.append"
    assert by_symbol(chunks, "items").context == "Buffer::items"
    assert not {"string", "vector"} & defined(chunks)


def test_a_c_function_pointer_typedef_and_a_cpp_template_member_define_their_own_names():
    """`typedef void (*scan_fn)(...)` defined nothing in the tree (the lexical patterns read `void`);
    `Box<T>::push` defined `Box`, its class's name, not `push`."""
    from retrieval.lexical.features import defined_names

    c = "typedef void (*scan_fn)(void *privdata, const void *key);\n  typedef int (*compare_fn)(int, int);\nstatic int counter;\n"
    for language in ("c", "cpp"):
        assert {"scan_fn", "compare_fn"} <= defined(chunks_of(c, "dict.h", language))
    assert defined_names(c, "c") == {"scan_fn", "compare_fn"}  # no `void`, no `int`
    cpp = ("template <typename T>\nvoid Box<T>::push(const T& v) {\n  items_.push_back(v);\n}\n\n"
           "template <typename K, typename V>\nV* Map<K, std::vector<V>>::find(const K& k) {\n  return nullptr;\n}\n")
    chunks = chunks_of(cpp, "box.cpp", "cpp", TINY)
    assert_verbatim(cpp, chunks)
    assert {"push", "find"} <= defined(chunks) and not {"Box", "Map"} & defined(chunks)


def test_a_cpp_function_annotated_after_its_parameters_is_named_by_its_declarator():
    """abseil's `void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { ... }` reads as a function named by
    the annotation holding the body: `Mutex::ReaderLock` found a method `ABSL_SHARED_LOCK_FUNCTION`
    second, and `SpinLock::lock` none. A variable annotated so is no function and no test."""
    text = ("namespace absl {\nclass Mutex {\n public:\n"
            "  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { lock_shared(); }\n"
            "  inline void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {\n    Slow();\n  }\n"
            "  ~Mutex() ABSL_UNLOCK_FUNCTION() {\n    Release();\n  }\n"
            "  void Plain() { x(); }\n};\n\n"
            "std::vector<Info>& get_info()\n    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) {\n  return *info;\n}\n\n"
            "void Update() ABSL_UNLOCK_FUNCTION(mutex)\n    ABSL_LOCKS_EXCLUDED(Sites()) {\n  Sites().unlock();\n}\n\n"
            "std::vector<Info>* info ABSL_GUARDED_BY(mutex)\n    ABSL_PT_GUARDED_BY(mutex){nullptr};\n\n"
            "inline CordRep* absl_nonnull Cord::TakeRep() const& {\n  return rep_;\n}\n"
            "template <typename T>\ninline const T& ts_unchecked_read(const T& v) ABSL_NO_THREAD_SAFETY_ANALYSIS {\n"
            "  return v;\n}\n"
            "class Waiter {\n  void operator()(int x) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {\n    run();\n  }\n};\n"
            "template <typename T>\nvoid reduce2(T* out) ABSL_LOCKS_EXCLUDED(mu) {\n  run();\n}\n"
            "}  // namespace absl\n")
    chunks = chunks_of(text, "mutex.h", "cpp", TINY)
    assert_verbatim(text, chunks)
    for symbol, context, line in [("ReaderLock", "absl.Mutex.ReaderLock", 4), ("lock", "absl.Mutex.lock", 5),
                                  ("Plain", "absl.Mutex.Plain", 11), ("get_info", "absl.get_info", 14),
                                  ("Update", "absl.Update", 19), ("TakeRep", "absl.Cord::TakeRep", 27),
                                  ("ts_unchecked_read", "absl.ts_unchecked_read", 30),
                                  ("operator()", "absl.Waiter.operator()", 35),
                                  ("reduce2", "absl.reduce2", 39)]:
        chunk = by_symbol(chunks, symbol)
        assert (chunk.context, chunk.start_line) == (context, line), symbol
    assert by_symbol(chunks, "ReaderLock").chunk_kind == by_symbol(chunks, "lock").chunk_kind == "method"
    assert not {name for name in defined(chunks) if name.startswith("ABSL_")}
    assert not [c for c in chunks if c.chunk_kind == "test"]


def _signature_file(params: int, odd: str, doc: str, doc_lines: int, body_lines: int, before: str = "") -> str:
    """A class whose method's signature takes a line per parameter and ends `) -> ...:`."""
    lines = "".join(f"        option_{i}: int = {i},\n" for i in range(params))
    if odd:
        lines = lines.replace("option_1: int = 1,", odd)
    docstring = "".join(f"        Line {i} of {doc}.\n" for i in range(doc_lines))
    body = "".join(f"        value_{i} = self.step_{i}(sentences)\n" for i in range(body_lines))
    return (f"class StaticModel:\n{before}    def encode_as_sequence(\n        self,\n{lines}"
            f"    ) -> list[np.ndarray] | np.ndarray:\n        \"\"\"\n{docstring}        \"\"\"\n{body}        return value_0\n")


@pytest.mark.parametrize("odd", ["", 'option_1: str = "(",', "option_1: int = 1,  # (see the note"])
def test_a_signature_over_several_lines_stays_whole_in_one_chunk(odd):
    """model2vec's `def encode_as_sequence(` took eight lines of parameters; its last line,
    `) -> list[np.ndarray] | np.ndarray:`, opens the body, and went down alone to the docstring's
    chunk: the first chunk was parameters without a return type or a body. A bracket in a string
    or a comment among them opens nothing (counted, it cut the signature after it)."""
    text = _signature_file(8, odd, "a long docstring about encoding sentences as sequences", 16, 20)
    chunks = chunks_of(text, "model.py", "python", ChunkingPolicy(code=1500))
    assert_verbatim(text, chunks)
    closing = text.splitlines().index("    ) -> list[np.ndarray] | np.ndarray:") + 1
    head = next(c for c in chunks if c.start_line <= 2 <= c.end_line)
    assert head.end_line >= closing, [(c.start_line, c.end_line) for c in chunks]
    # After a method, under a smaller budget: the head goes down to its docstring whole.
    before = "    def before(self):\n" + "".join(f"        x_{i} = compute_something_long({i})\n" for i in range(4)) + "\n"
    text = _signature_file(10, odd, "a long docstring", 6, 10, before)
    chunks = chunks_of(text, "model.py", "python", ChunkingPolicy(code=1000))
    assert_verbatim(text, chunks)
    lines = text.splitlines()
    head, closing = lines.index("    def encode_as_sequence(") + 1, lines.index("    ) -> list[np.ndarray] | np.ndarray:") + 1
    assert not [c for c in chunks if head < c.start_line <= closing], [(c.start_line, c.end_line) for c in chunks]


def test_a_comment_opens_after_a_space_and_a_url_in_a_string_is_no_comment():
    from retrieval.chunking.ast import _unclosed

    # Each closes the signature's `(` on a line above: what is in a string or comment opens nothing.
    assert _unclosed(["        option_z: str = 'http://x') -> None:\n"], 0, 0)
    assert _unclosed(["        option_z: str = '#') -> None:\n"], 0, 0)
    assert _unclosed(["    x = 1  # (see the note\n", "    ) -> None:\n"], 0, 1)
    assert _unclosed(['    sep: str = "(",\n', "    ) -> None:\n"], 0, 1)
    assert not _unclosed(["    def f(\n", "    ) -> None:\n"], 0, 1)
    assert _unclosed(["    int b);// (see\n"], 0, 0)  # (a comment right after code)
    assert _unclosed(["    n=${#arr[@]})\n"], 0, 0)  # (a shell's length, no comment)


def test_a_cpp_class_whose_head_holds_macros_is_that_class():
    """`class ABSL_LOCKABLE ABSL_ATTRIBUTE_WARN_UNUSED Mutex {` reads as a function to the grammar:
    it was `function ABSL_ATTRIBUTE_WARN_UNUSED`, and `class Mutex` found nothing."""
    from retrieval.lexical.features import defined_names

    text = ("namespace absl {\n\nclass ABSL_LOCKABLE ABSL_ATTRIBUTE_WARN_UNUSED Mutex {\n public:\n  Mutex();\n"
            "  void Lock();\n  void Unlock();\n  bool TryLock();\n};\n\n"
            "template <class K, class V>\nclass ABSL_ATTRIBUTE_OWNER flat_hash_map : public raw_hash_map<K, V> {\n"
            " public:\n  flat_hash_map() {}\n  size_t size() const;\n};\n\n}  // namespace absl\n")
    chunks = chunks_of(text, "mutex.h", "cpp", TINY)
    assert_verbatim(text, chunks)
    mutex, table = by_symbol(chunks, "Mutex"), by_symbol(chunks, "flat_hash_map")
    assert (mutex.context, mutex.chunk_kind, mutex.start_line) == ("absl.Mutex", "class", 3)
    assert (table.context, table.chunk_kind, table.start_line) == ("absl.flat_hash_map", "class", 11)
    assert not {"ABSL_LOCKABLE", "ABSL_ATTRIBUTE_WARN_UNUSED", "ABSL_ATTRIBUTE_OWNER"} & defined(chunks)
    assert {"Mutex", "flat_hash_map"} <= defined_names(text, "cpp")
    assert not {"ABSL_LOCKABLE", "ABSL_ATTRIBUTE_OWNER"} & defined_names(text, "cpp")
    assert defined_names("typedef struct FOO BAR;\nclass EXPORT Widget;\n", "cpp") == {"BAR"}  # no body: no class
    for head, name in (("class HTTP final {", "HTTP"), ("class API_EXPORT IO final : public Base {", "IO"),
                       ("class EXPORT Foo<int> {", "Foo")):
        assert defined_names(head + "\n};\n", "cpp") == {name}, head  # `final` is no name
    specialised = "template <>\nclass EXPORT Foo<int> {\n public:\n  int x;\n};\n"
    assert by_symbol(chunks_of(specialised, "foo.h", "cpp", TINY), "Foo").chunk_kind == "class"


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_a_table_a_c_file_defines_is_a_constant_of_that_name_and_a_function_s_local_is_not(language):
    """curl's `const struct Curl_protocol Curl_protocol_http = {...}` (inside `#ifndef`) was the file's
    module chunk: a query for the table's name found a line using it first."""
    from retrieval.lexical.features import defined_names

    text = ("#include <x.h>\n\n#ifndef CURL_DISABLE_HTTP\n/* HTTP handler interface. */\n"
            "const struct Curl_protocol Curl_protocol_http = {\n  Curl_http_setup_conn,\n  Curl_http,\n"
            "  ZERO_NULL,\n};\n#endif\n\nstatic const char *const names[] = {\n  \"a\",\n  \"b\",\n};\n\n"
            "int main(void) {\n  struct point origin = {0, 0};\n  return origin.x;\n}\n")
    chunks = chunks_of(text, "http.c", language, TINY)
    assert_verbatim(text, chunks)
    table = by_symbol(chunks, "Curl_protocol_http")
    assert (table.context, table.chunk_kind, table.start_line) == ("Curl_protocol_http", "variable", 4)
    assert {"Curl_protocol_http", "names"} <= defined(chunks) and "origin" not in defined(chunks)
    assert {"Curl_protocol_http", "names"} <= defined_names(text, language)
    assert "origin" not in defined_names(text, language)


@pytest.mark.parametrize("path, language, text, member, context", [
    ("Shape.cs", "csharp", "namespace Geo.Shapes;\n\npublic class Shape\n{\n    public double Area() { return 1; }\n}\n",
     "Area", "Geo.Shapes.Shape.Area"),
    ("Kernel.php", "php", "<?php\nnamespace App\\Http;\n\nclass Kernel\n{\n    public function handle($r)\n    {\n"
     "        return $r;\n    }\n}\n", "handle", "App\\Http.Kernel.handle"),
])
def test_a_namespace_declared_as_a_statement_scopes_what_follows_it(path, language, text, member, context):
    chunks = chunks_of(text, path, language, TINY)
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, member).context == context
    whole = chunks_of(text, path, language, ChunkingPolicy())
    assert len(whole) == 1 and whole[0].chunk_kind == "class"  # the file is its class, in its namespace


def test_csharp_properties_indexers_operators_and_events_are_members():
    text = ("public class Shape\n{\n    public string Name { get; set; }\n"
            "    public double this[int i] { get { return i; } }\n"
            "    public static Shape operator +(Shape a, Shape b) { return a; }\n"
            "    public static explicit operator int(Shape s) { return 1; }\n"
            "    public event EventHandler Moved { add { } remove { } }\n"
            "    public string Path\n    {\n        get { return _path; }\n    }\n}\n")
    chunks = chunks_of(text, "Shape.cs", "csharp", TINY)
    assert_verbatim(text, chunks)
    assert {"Name", "this", "operator", "Moved", "Path"} <= defined(chunks)
    contexts = {c.context for c in chunks}
    assert {"Shape.this[]", "Shape.operator +", "Shape.explicit operator int", "Shape.Path"} <= contexts
    assert by_symbol(chunks, "Path").chunk_kind == "property"
    assert "Shape.Name" not in contexts  # a one-line property is a value: listed, never a label


def test_kotlin_and_swift_properties_are_members_and_a_swift_local_is_not():
    kotlin = "class Conn {\n  val timeout: Int = 3\n  val client: Http by lazy {\n    Http()\n  }\n  fun go() { val inner = 1 }\n}\n"
    swift = "class Shape {\n  var area: Double {\n    let local = 2\n    return local\n  }\n  let name = \"x\"\n}\n"
    k = chunks_of(kotlin, "Conn.kt", "kotlin", TINY)
    s = chunks_of(swift, "Shape.swift", "swift", TINY)
    assert {"timeout", "client", "go"} <= defined(k) and "inner" not in defined(k)
    assert by_symbol(k, "client").context == "Conn.client"
    assert {"area", "name"} <= defined(s) and "local" not in defined(s)
    assert by_symbol(s, "area").context == "Shape.area"


def test_swift_initializers_deinitializers_and_subscripts_are_methods_named_by_their_keyword():
    """The grammar gives `init`, `deinit` and `subscript` no name: they defined nothing and their
    chunks took the class's label (Alamofire's Session: two `init`s labelled `Session`, class)."""
    body = "".join(f"        self.value{i} = value * {i}\n" for i in range(4))
    swift = ("final class Box {\n    var value0 = 0\n\n    init(value: Int) {\n" + body + "    }\n\n"
             "    deinit {\n        print(\"released\")\n        print(\"gone\")\n    }\n\n"
             "    public subscript(index: Int) -> Int {\n        return value0 + index\n    }\n}\n")
    chunks = chunks_of(swift, "Box.swift", "swift", TINY)
    assert_verbatim(swift, chunks)
    assert {"init", "deinit", "subscript"} <= defined(chunks)
    for name in ("init", "deinit", "subscript"):
        chunk = next(c for c in chunks if name in (c.definitions or ()))
        assert (chunk.context, chunk.chunk_kind) == (f"Box.{name}", "method")
    assert "Int" not in defined(chunks)  # a subscript's return type sits in its `name` field


def test_a_class_header_with_its_documentation_and_a_documented_nested_type_is_the_class():
    """A class's documentation counts as the class's lines, as a member's does as the member's:
    Alamofire's `Session` (documentation, header, a documented nested enum) was the enum."""
    swift = ("/// `Session` creates and manages requests.\n/// It also provides common functionality.\n"
             "/// Including queuing and interception.\n/// And trust management.\n/// And caching.\n"
             "open class Session {\n    /// Shared instance.\n    public static let shared = Session()\n\n"
             "    /// The timing of setup.\n    public enum RequestSetup {\n        /// Lazily.\n        case lazy\n"
             "        /// Eagerly.\n        case eager\n    }\n\n"
             "    /// The underlying session,\n    /// used for every task.\n    public let session: Int\n\n"
             "    func run(task: Int) -> Int {\n" + "".join(f"        let step{i} = task * {i} + {i}\n" for i in range(12))
             + "        return task\n    }\n}\n")
    chunks = chunks_of(swift, "Session.swift", "swift", ChunkingPolicy(code=480))
    assert_verbatim(swift, chunks)
    head = chunks[0]
    assert "open class Session" in head.text and "enum RequestSetup" in head.text and "func run" not in head.text
    assert (head.context, head.chunk_kind) == ("Session", "class")


def test_kotlin_and_swift_say_what_kind_of_type_they_declare():
    kotlin = "interface Port { fun a() }\nenum class Color { RED }\ndata class P(val x: Int)\n"
    swift = "struct S {}\nenum E { case a }\nextension S { func f() {} }\n"
    kinds = {(c.symbol, c.chunk_kind) for c in chunks_of(kotlin, "a.kt", "kotlin", ChunkingPolicy(code=20))}
    assert {("Port", "interface"), ("Color", "enum"), ("P", "class")} <= kinds
    kinds = {(c.symbol, c.chunk_kind) for c in chunks_of(swift, "a.swift", "swift", ChunkingPolicy(code=20))}
    assert {("S", "struct"), ("E", "enum"), ("S", "impl")} <= kinds


def test_javascript_class_fields_holding_functions_and_named_function_expressions_are_definitions():
    js = ("class A {\n  handle = (e) => { return e; };\n  plain = 3\n}\n"
          "export default isXhr && function xhrAdapter(config) { return 1; }\n")
    ts = "class Api {\n  static create = () => new Impl();\n  private x = 1\n}\n"
    chunks = chunks_of(js, "a.js", "javascript", ChunkingPolicy(code=20))
    assert by_symbol(chunks, "handle").context == "A.handle"
    assert by_symbol(chunks, "xhrAdapter").chunk_kind == "function"
    assert "plain" not in defined(chunks)
    bound = "res.download = function download(path) {\n  return 1;\n};\nvar handler = function onRequest() {};\n"
    chunks = chunks_of(bound, "b.js", "javascript", ChunkingPolicy(code=20))
    assert {c.context for c in chunks} == {"res.download", "handler"}  # the binding names it, once
    assert "onRequest" not in defined(chunks)
    assert {"create"} <= defined(chunks_of(ts, "a.ts", "typescript", TINY)) - {"x"}


def test_elixir_defimpl_reads_as_an_impl_and_defstruct_names_nothing():
    text = ("defmodule Bank.Account do\n  defstruct id: nil,\n            balance: 0\n"
            "  defimpl String.Chars, for: Bank.Account do\n    def to_string(a), do: \"x\"\n  end\nend\n")
    chunks = chunks_of(text, "account.ex", "elixir", TINY)
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, "to_string").context == "Bank.Account.impl String.Chars for Bank.Account.to_string"
    assert all("\n" not in c.context and "balance" not in (c.symbol or "") for c in chunks)
    assert not any("id:" in name for name in defined(chunks))


def test_a_scala_doc_comment_the_grammar_puts_in_the_previous_body_goes_with_its_own_method():
    """tree-sitter-scala ends a brace-less `def x: T =` body after the next method's doc comment:
    chunks ended on `def alpha: Int =` and its body opened the chunk labelled with the next method."""
    doc = "\n".join(f"    * line {i} of the documentation for this method, describing things at length" for i in range(14))
    text = "package org.acme\n\nclass Headers(val xs: List[String]) {\n" + "".join(
        f"  /** Doc for {n}.\n{doc}\n    */\n  def {n}: Int =\n    xs.map(_.length).sum + xs.size\n\n"
        for n in ("alpha", "beta", "gamma")) + "}\n"
    chunks = chunks_of(text, "Headers.scala", "scala", ChunkingPolicy())
    assert_verbatim(text, chunks)
    for name in ("alpha", "beta", "gamma"):
        (chunk,) = [c for c in chunks if f"def {name}: Int =" in c.text]
        assert chunk.context == f"Headers.{name}"
        assert f"Doc for {name}." in chunk.text and "xs.map" in chunk.text.split(f"def {name}")[1]


def test_a_scala_def_without_braces_ends_on_its_own_last_line():
    """tree-sitter-scala ends a brace-less body at the next line's indentation: each chunk ended on
    the next `def`'s first line (or its annotation) and claimed to define it, and the real one
    defined nothing (cats' laws: 650 such boundaries in 238 files)."""
    body = "      .map(x => x + 100000000)\n" * 30
    text = (f"object Foo {{\n  def alpha: Int =\n    List(1)\n{body}\n  @deprecated(\"no\", \"1\")\n"
            f"  def beta: Int =\n    List(2)\n{body}\n  def gamma: Int =\n    List(3)\n{body}}}\n")
    chunks = chunks_of(text, "Foo.scala", "scala", ChunkingPolicy())
    assert_verbatim(text, chunks)
    names = ("alpha", "beta", "gamma")
    for name in names:
        (chunk,) = [c for c in chunks if name in (c.definitions or ())]
        assert chunk.context == f"Foo.{name}" and f"def {name}" in chunk.text
        assert not any(f"def {other}" in chunk.text for other in names if other != name)
    assert [c for c in chunks if "beta" in (c.definitions or ())][0].text.startswith("  @deprecated")


def test_a_haskell_pragma_after_a_function_naming_it_stays_with_it():
    """aeson's `{-# INLINE recordParseJSONImpl #-}` after that function opened the next one's chunk."""
    body = "".join(f"  , field{i} = value{i}\n" for i in range(3))
    text = ("{-# LANGUAGE OverloadedStrings #-}\nmodule Geo where\n\nparseA :: Int -> Rec\nparseA x = Rec\n  { base = x\n"
            + body + "  }\n{-# INLINE parseA #-}\n\n{-# NOINLINE parseB #-}\nparseB :: Int -> Rec\n"
            "parseB y = Rec\n  { base = y\n" + body + "  }\n")
    chunks = chunks_of(text, "Geo.hs", "haskell")
    assert_verbatim(text, chunks)
    assert "{-# INLINE parseA #-}" in by_symbol(chunks, "parseA").text
    assert by_symbol(chunks, "parseB").text.startswith("{-# NOINLINE parseB #-}")


def test_haskell_bindings_without_arguments_are_definitions_and_annotated_patterns_are_not():
    text = ("module Geo where\n\ndefaultRadius :: Double\ndefaultRadius = 1.0\n\n"
            "pParser :: Parser Int\npParser = do\n  x <- decimal\n  return x\n\n"
            "parseD :: String -> Maybe Double\nparseD s = case reads s of\n  [(x :: Double, _)] -> Just x\n  _ -> Nothing\n")
    chunks = chunks_of(text, "Geo.hs", "haskell", TINY)
    assert_verbatim(text, chunks)
    assert {"defaultRadius", "pParser", "parseD"} <= defined(chunks)
    assert "x" not in defined(chunks)
    assert all(c.context != "parseD.x" for c in chunks)
    assert defined(chunks_of("module A where\n\n(a, b) = (1, 2)\n", "A.hs", "haskell")) == set()  # a pattern


CSHARP_WITH_DIRECTIVES = """using System;
#if HAVE_BIG_INTEGER
using System.Numerics;
#endif

namespace Newtonsoft.Json
{
    internal enum ReadType
    {
        Read,
        ReadAsDateTime,
#if HAVE_DATE_TIME_OFFSET
        ReadAsDateTimeOffset,
#endif
        ReadAsDouble
    }

    public partial class JsonTextReader : JsonReader
    {
        private void ParseReadString(char quote, ReadType readType)
        {
            switch (readType)
            {
                case ReadType.ReadAsDateTime:
#if HAVE_DATE_TIME_OFFSET
                case ReadType.ReadAsDateTimeOffset:
#endif
                    if (_quoteChar == quote)
                    {
                        DateParseHandling handling;
                        if (readType == ReadType.ReadAsDateTime)
                        {
                            handling = DateParseHandling.DateTime;
                        }
#if HAVE_DATE_TIME_OFFSET
                        else if (readType == ReadType.ReadAsDateTimeOffset)
                        {
                            handling = DateParseHandling.DateTimeOffset;
                        }
#endif
                        else
                        {
                            handling = _dateParseHandling;
                        }
                        if (handling == DateParseHandling.DateTime)
                        {
                            SetToken(JsonToken.Date, handling, false);
                            return;
                        }
#if HAVE_DATE_TIME_OFFSET
                        else
                        {
                            SetToken(JsonToken.Date, handling, true);
                            return;
                        }
#endif
                    }
                    break;
            }
        }

        public override int? ReadAsInt32()
        {
            return ReadNumberValue(ReadType.ReadAsInt32);
        }

        public override long? ReadAsInt64()
        {
            return ReadNumberValue(ReadType.ReadAsInt64);
        }
    }
}
"""


def test_csharp_conditional_directives_that_break_the_parse_do_not_cost_members_their_class():
    """Newtonsoft's JsonTextReader: an `else` opening under `#if` ended the class in the parse, and
    every member after it was labelled `Newtonsoft.Json.X` with no class and no scope."""
    budget = ChunkingPolicy(code=300, prose=300, config=300, default=300)
    chunks = chunks_of(CSHARP_WITH_DIRECTIVES, "JsonTextReader.cs", "csharp", budget)
    assert_verbatim(CSHARP_WITH_DIRECTIVES, chunks)
    (last,) = [c for c in chunks if "ReadAsInt64()" in c.text]
    assert last.context.startswith("Newtonsoft.Json.JsonTextReader.ReadAsInt")
    assert last.scope is not None  # (a chunk holding the closing braces widens to the namespace)


def test_a_haskell_type_signature_and_its_comment_stay_with_the_equations_it_types():
    """The signature, the first line of a Haskell definition, ended the chunk before (101 of aeson's
    671 chunk boundaries fell between a signature and its equations)."""
    body = "".join(f"  , step{i} (lbsSpace bs') (bsToTokens bs)\n" for i in range(3))
    text = ("module Decoding where\n\nimport Data.Maybe\n\n"
            "-- | Deserialize a value from a strict string.\n"
            "decodeStrict :: FromJSON a => ByteString -> Maybe a\n"
            f"decodeStrict bs = unResult\n{body}\n"
            "-- | Deserialize a value from a lazy string.\n"
            "decode :: FromJSON a => LBS.ByteString -> Maybe a\n"
            f"decode bs = unResult\n{body}\n"
            "class Container f where\n  empty :: f a\n  insert :: a -> f a -> f a\n")
    budget = ChunkingPolicy(code=400, prose=400, config=400, default=400)  # one definition fits, not two
    chunks = chunks_of(text, "Decoding.hs", "haskell", budget)
    assert_verbatim(text, chunks)
    for name in ("decodeStrict", "decode"):
        (chunk,) = [c for c in chunks if f"\n{name} bs = " in "\n" + c.text]
        assert f"{name} :: FromJSON a" in chunk.text and chunk.symbol == name
        assert "-- | Deserialize a value from a " in chunk.text.split(f"{name} ::")[0]
    # A class's method signatures have no equations after them: still the class's lines.
    assert any("empty :: f a" in c.text and "insert ::" in c.text for c in chunks)


def test_a_haskell_function_of_many_equations_is_defined_once_by_the_piece_with_its_signature():
    """Each equation defined the name apart: the densest of pandoc's 30 `getDefaultExtensions "html"
    = ...` lines outranked the signature's chunk; and a signature with a one-line equation were two
    one-line definitions, too small to label their chunk (`getPdfEngine` was `module`'s)."""
    cases = "".join(f'getExtensions "format{i}" = extensionsFromList [Ext_a{i}, Ext_b{i}, Ext_c{i}]\n' for i in range(30))
    text = ("module Ext where\n\n-- | Default extensions from a format's name.\ngetExtensions :: Text -> Extensions\n"
            + cases + "getExtensions _ = emptyExtensions\n\n"
            "-- roff treats a line-ending period differently.\n-- See the issue tracker.\n\n"
            "getPdfEngine :: WriterOptions -> Maybe Text\ngetPdfEngine opts = lookupContext \"pdf-engine\" opts\n")
    chunks = chunks_of(text, "Ext.hs", "haskell", ChunkingPolicy(code=800))
    assert_verbatim(text, chunks)
    pieces = [c for c in chunks if "getExtensions " in c.text]
    assert len(pieces) > 2
    # Only the piece holding the signature and first equation defines it; every piece is its, scoped whole.
    assert [c for c in pieces if "getExtensions" in c.definitions] == [pieces[0]]
    assert "getExtensions :: Text" in pieces[0].text and "getExtensions \"format0\"" in pieces[0].text
    assert {(c.context, c.chunk_kind, c.scope) for c in pieces[1:]} == {("getExtensions", "function", (3, 35))}  # (its comment too)
    engine = by_symbol(chunks, "getPdfEngine")
    assert (engine.context, engine.chunk_kind, engine.definitions) == ("getPdfEngine", "function", ("getPdfEngine",))


def test_functions_of_a_rust_or_elixir_module_are_functions_and_of_a_ruby_module_methods():
    rust = "mod tests {\n    fn checks_it() {\n        assert!(true);\n    }\n}\n"
    elixir = "defmodule Bank do\n  def deposit(a), do: a\nend\n"
    ruby = "module Greeting\n  def hello\n    'hi'\n  end\nend\n"
    assert by_symbol(chunks_of(rust, "lib.rs", "rust", ChunkingPolicy(code=20)), "checks_it").chunk_kind == "function"
    assert by_symbol(chunks_of(elixir, "bank.ex", "elixir", ChunkingPolicy(code=20)), "deposit").chunk_kind == "function"
    assert by_symbol(chunks_of(ruby, "greeting.rb", "ruby", ChunkingPolicy(code=20)), "hello").chunk_kind == "method"


def test_a_kotlin_extension_function_is_filed_under_its_receiver():
    text = ("fun Conn.describe(): String = \"x\"\nfun <T> List<T>.second(): T = this[1]\n"
            "fun String?.orBlank(): String = this ?: \"\"\n")
    chunks = chunks_of(text, "ext.kt", "kotlin", ChunkingPolicy(code=20))
    assert by_symbol(chunks, "orBlank").context == "String.orBlank"  # nullable receiver
    assert by_symbol(chunks, "describe").context == "Conn.describe"
    assert by_symbol(chunks, "second").context == "List.second"
    # A receiver that is the function's own type parameter is its bound, or no scope (ktor's
    # `fun <P : Pipeline<*, PipelineCall>, B : Any> P.install(` was `P.install`).
    text = ("fun <P : Pipeline<*, PipelineCall>, B : Any> P.install(plugin: Plugin<P, B>): B = x\n"
            "fun <T> T.also2(block: (T) -> Unit): T = this\n"
            "fun <T : Closeable?, R> T.use(block: (T) -> R): R = block(this)\n")
    chunks = chunks_of(text, "ext.kt", "kotlin", ChunkingPolicy(code=20))
    assert by_symbol(chunks, "install").context == "Pipeline.install"
    assert by_symbol(chunks, "also2").context == "also2"
    assert by_symbol(chunks, "use").context == "Closeable.use"  # (a nullable bound)
    # A function type is no owner (kotlinx's `(suspend () -> T).startCoroutineCancellable` was `suspend.`'s).
    text = ("fun <T> (suspend () -> T).startCancellable(c: Continuation<T>): Unit = run(c)\n"
            "fun (() -> Unit).twice() { this(); this() }\n")
    chunks = chunks_of(text, "ext.kt", "kotlin", ChunkingPolicy(code=20))
    assert by_symbol(chunks, "startCancellable").context == "startCancellable"
    assert by_symbol(chunks, "twice").context == "twice"


def test_a_bare_macro_line_before_a_cpp_namespace_does_not_hide_the_namespace():
    """Abseil's and nlohmann's `LIB_NAMESPACE_BEGIN` line made the grammar read `namespace` as a
    function: scope paths read `namespace.parser.null`."""
    text = ("LIB_NAMESPACE_BEGIN\nnamespace detail\n{\nclass parser\n{\n  public:\n    bool null() { return true; }\n"
            "};\n}\nLIB_NAMESPACE_END\n")
    chunks = chunks_of(text, "parser.hpp", "cpp", ChunkingPolicy(code=30))
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, "null").context == "detail.parser.null"
    assert "namespace" not in defined(chunks)
    # The namespace is still split by its definitions, not cut by lines as text no node holds (the
    # review found every chunk of abseil's files labelled by one function defined far below).
    body = "".join(f"  int v{i} = x * {i} + helper(x, {i});\n" for i in range(12))
    fns = "".join(f"int func_{n}(int x) {{\n{body}  return v0;\n}}\n\n" for n in range(8))
    text = "namespace foo {\nMY_NS_BEGIN\n\n" + fns + "MY_NS_END\n}  // namespace foo\n"
    for source in (text, text.replace("\n", "\r\n")):
        chunks = chunks_of(source, "a.cc", "cpp", ChunkingPolicy())
        assert_verbatim(source, chunks)
        assert len(chunks) > 2
        for chunk in chunks:
            first = chunk.text.split("int func_", 1)[1].split("(", 1)[0]
            assert chunk.context == f"foo.func_{first}"  # each chunk named by its own first function


def test_zig_test_blocks_label_their_own_chunks_and_define_nothing():
    """A `test "resolve"` block was glued to the function after it and labelled with it; a Zig
    function's pieces were not kept apart from what follows (the splitter never saw the Decl)."""
    body = "".join(f"    const step{i} = try compute(allocator, {i}, \"an argument of some length\");\n" for i in range(30))
    text = (f"pub fn parseWithOs(allocator: std.mem.Allocator) !Uri {{\n{body}    return .{{ .raw = step0 }};\n}}\n\n"
            "test \"parse (posix)\" {\n    const uri = try parseWithOs(std.testing.allocator);\n"
            "    try std.testing.expectEqualStrings(\"file:///foo\", uri.raw);\n}\n\n"
            "pub fn deinit(uri: Uri, allocator: std.mem.Allocator) void {\n    allocator.free(uri.raw);\n}\n")
    chunks = chunks_of(text, "Uri.zig", "zig", ChunkingPolicy())
    assert_verbatim(text, chunks)
    (test_chunk,) = [c for c in chunks if 'test "parse (posix)"' in c.text]
    assert "pub fn parseWithOs" not in test_chunk.text and "return .{ .raw" not in test_chunk.text
    assert {c.context for c in chunks if "step7" in c.text} == {"parseWithOs"}
    assert "parse (posix)" not in " ".join(defined(chunks))
    assert {"parseWithOs", "deinit"} <= defined(chunks)
    assert test_chunk.context == "deinit"  # a test names a chunk only when no definition can
    alone = chunks_of(text.split("pub fn deinit")[0], "Uri.zig", "zig", ChunkingPolicy())
    assert (alone[-1].context, alone[-1].chunk_kind) == ('test "parse (posix)"', "test")


def test_a_type_declared_in_a_methods_body_does_not_name_the_chunk_holding_the_methods_signature():
    """tRPC's `create()` declares `type $Root` in its body: the chunk with create's signature was
    labelled `TRPCBuilder.create.$Root` (a probe's `TRPCBuilder.create` then missed it)."""
    steps = "".join(f"    const step{i} = this.compose(opts, {i}, 'an argument of some length');\n" for i in range(40))
    text = ("class TRPCBuilder {\n  create(opts?: Options) {\n    type $Root = CreateRootTypes<{ ctx: any; meta: any }>;\n"
            f"{steps}    return step0 as $Root;\n  }}\n}}\n")
    chunks = chunks_of(text, "initTRPC.ts", "typescript", ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert len(chunks) > 1
    assert {c.context for c in chunks} == {"TRPCBuilder.create"}


def test_a_file_with_windows_line_ends_is_chunked_by_its_tree_where_the_grammar_rejects_them():
    """Dockerfile's grammar reads `\\r\\n` as an error: such a file fell back to line chunks. The
    parser sees Unix line ends; the chunks keep the file's own bytes."""
    from retrieval.chunking.ast import chunk_syntax

    steps = "".join(f"RUN apt-get install -y package{i} && \\\n    echo installed package{i}\n" for i in range(40))
    text = "FROM python:3.11 AS build\n" + steps + "COPY . /app\nWORKDIR /app\nCMD [\"python\", \"app.py\"]\n"
    windows = text.replace("\n", "\r\n")
    unix_chunks = chunk_syntax(text, "Dockerfile", language="dockerfile", kind="config", policy=ChunkingPolicy())
    chunks = chunk_syntax(windows, "Dockerfile", language="dockerfile", kind="config", policy=ChunkingPolicy())
    assert chunks is not None, "a CRLF Dockerfile fell back to line chunks"
    assert_verbatim(windows, chunks)
    assert [(c.start_line, c.end_line) for c in chunks] == [(c.start_line, c.end_line) for c in unix_chunks]
    assert all("\r\n" in c.text for c in chunks)


VUE = """\
<template>
  <div class="counter">
    <button @click="increment">{{ count }}</button>
  </div>
</template>

<script setup lang="ts">
import { ref } from 'vue'

interface Props {
  start: number
}

const props = defineProps<Props>()
const count = ref(props.start)

function increment() {
  count.value += 1
  emitChange(count.value)
}

function emitChange(value: number) {
  console.log('changed', value)
}
</script>

<style scoped>
.counter { color: red; }
</style>
"""


def test_the_script_of_a_vue_component_is_chunked_by_its_own_grammar():
    """The `<script>` of a Vue, Svelte or HTML file was cut by lines (the host grammar sees raw
    text there) while `status` said `ast`; its functions are now chunks with their names."""
    chunks = chunks_of(VUE, "Counter.vue", "vue", TINY)
    assert_verbatim(VUE, chunks)
    increment = by_symbol(chunks, "increment")
    assert (increment.start_line, increment.chunk_kind, increment.language) == (17, "function", "vue")
    assert increment.text.startswith("function increment()")
    assert by_symbol(chunks, "emitChange").context == "emitChange"
    assert by_symbol(chunks, "Props").chunk_kind == "interface"
    assert "emitChange" in defined(chunks)
    # The template and the style stay the host's chunks (no definitions known from the Vue
    # grammar), never holding a line of the script.
    host = [c for c in chunks if c.definitions is None]
    assert host and host[0].start_line == 1 and host[-1].end_line == VUE.count("\n")
    for chunk in host:
        assert not set(range(chunk.start_line, chunk.end_line + 1)) & set(range(8, 25)), chunk


def test_scripts_in_svelte_and_html_are_chunked_and_a_template_script_is_left_to_the_host():
    body = "".join(f"    total += step{i}(value);\n" for i in range(12))
    code = f"function compute(value) {{\n    let total = 0;\n{body}    return total;\n}}\n\nfunction reset() {{\n    total = 0;\n}}\n"
    svelte = f"<script>\n{code}</script>\n\n<h1>Hello</h1>\n"
    chunks = chunks_of(svelte, "App.svelte", "svelte", TINY)
    assert_verbatim(svelte, chunks)
    # the script's tags join its chunks beside them: a chunk of `<script>` alone said nothing
    assert by_symbol(chunks, "compute").text.startswith("<script>\nfunction compute(value) {")
    assert not [c for c in chunks if c.text.strip() in ("<script>", "</script>")]
    assert by_symbol(chunks, "reset").chunk_kind == "function"
    html = (f"<html>\n<head>\n<script type=\"module\">\n{code}</script>\n"
            f"<script type=\"text/x-template\" id=\"row\">\nfunction notCode() {{ }}\n</script>\n</head>\n</html>\n")
    chunks = chunks_of(html, "index.html", "html", TINY)
    assert_verbatim(html, chunks)
    assert by_symbol(chunks, "compute").start_line == 4
    assert not [c for c in chunks if c.symbol == "notCode"]


def test_the_members_of_a_script_s_chunks_carry_the_lines_of_the_page_not_of_the_script():
    """A script's chunks were moved to the page's lines, their members' lines not: a question about
    `load` was told `addTodo`, the definition at load's script-relative lines."""
    script = ("import { ref } from 'vue'\n\n// Reads the saved todos from local storage.\nfunction load() {\n"
              "  return JSON.parse(localStorage.todos || '[]')\n}\n\n"
              "function addTodo(list, draft) {\n  list.push({ text: draft, done: false })\n  return list\n}\n")
    page = f"<template>\n  <ul><li v-for=\"t in todos\">{{{{ t.text }}}}</li></ul>\n</template>\n\n<script setup>\n{script}</script>\n"
    chunks = chunks_of(page, "TodoList.vue", "vue", ChunkingPolicy())
    assert_verbatim(page, chunks)
    lines = page.splitlines()
    ranged = [m for c in chunks for m in c.members if m[3]]
    assert {m[0] for m in ranged} & {"load", "addTodo"}
    for name, _path, _kind, first, last in ranged:
        assert any(f"function {name}(" in line for line in lines[first - 1 : last]), (name, first, last)


def test_a_script_in_a_php_page_is_chunked_by_javascript_s_grammar():
    """PHP's grammar reads a page's HTML as text: `toggleFollow`, defined in its `<script>`, was no
    definition, and a query naming it found the footer that calls it first."""
    page = ("<?php $user = load_user(); ?>\n<html>\n<body>\n<script>\nfunction toggleFollow(button) {\n"
            "  button.classList.toggle('on');\n}\n</script>\n<script>\nconst x = <?= json_encode($user) ?>;\n</script>\n"
            "<?php render_footer(); ?>\n</body>\n</html>\n")
    chunks = chunks_of(page, "profile.php", "php", TINY)
    assert_verbatim(page, chunks)
    toggle = by_symbol(chunks, "toggleFollow")
    assert (toggle.start_line, toggle.chunk_kind, toggle.language) == (5, "function", "php")
    assert "toggleFollow" in defined(chunks)
    # a script holding PHP is no JavaScript alone: the host's lines
    assert any("json_encode" in c.text and c.chunk_kind == "module" for c in chunks)


def test_an_r_function_is_named_by_the_binding_that_holds_it():
    """R has no `def`: `compute_mean <- function(x)` was a chunk labelled `module`."""
    body = "".join(f"  s{i} <- sum(x[{i}], na.rm = na.rm)\n" for i in range(12))
    text = (f"library(stats)\n\ncompute_mean <- function(x, na.rm = TRUE) {{\n{body}  s0 / length(x)\n}}\n\n"
            "helper = function(y) {\n  y + 1\n}\n")
    chunks = chunks_of(text, "stats.R", "r", ChunkingPolicy(code=200))
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, "compute_mean").chunk_kind == "function"
    assert by_symbol(chunks, "helper").context == "helper"


def test_a_shell_function_defines_its_whole_name():
    """`_bash-it-component-help() {` defined `help` (the last word of the name), and PowerShell's
    `Remove-ExpiredBackup` was labelled `ExpiredBackup`: a query naming the function found others."""
    text = "_bash-it-component-help() {\n  echo help\n}\n\ngit::status() {\n  git status\n}\n"
    chunks = chunks_of(text, "lib/helpers.bash", "bash", TINY)
    assert defined(chunks) == {"_bash-it-component-help", "git::status"}
    assert by_symbol(chunks, "git::status").context == "git::status"
    text = "function Remove-ExpiredBackup {\n    param([string]$Path)\n    Get-ChildItem $Path\n}\n"
    chunks = chunks_of(text, "backup.ps1", "powershell", TINY)
    assert {c.symbol for c in chunks} == {"Remove-ExpiredBackup"}


def test_a_dart_function_spans_its_body_as_well_as_its_signature():
    """Dart's grammar makes the body the signature's sibling: a function ended at its signature
    line, and the pieces of its body were labelled `module`."""
    body = "".join(f"  total += a * {i} + b;\n" for i in range(10))
    text = f"import 'dart:math';\n\nint add(int a, int b) {{\n  var total = 0;\n{body}  return total;\n}}\n"
    chunks = chunks_of(text, "lib/add.dart", "dart", ChunkingPolicy(code=200))
    assert_verbatim(text, chunks)
    assert chunks[0].context == "add"
    pieces = [c for c in chunks if c.start_line > 3]  # the body's later pieces
    assert pieces
    assert all(c.context == "add" and c.scope == (3, text.count("\n")) for c in pieces), pieces


def test_elm_and_erlang_functions_are_named_and_keep_their_type_signatures():
    """An Elm type annotation or an Erlang `-spec` ended the chunk before the function it types,
    and the functions had no names (every chunk was `module`)."""
    body = "".join(f"    + a * {i}\n" for i in range(8))
    elm = (f"module Main exposing (..)\n\nsub : Int -> Int -> Int\nsub a b =\n    a - b\n{body}\n"
           f"add : Int -> Int -> Int\nadd a b =\n    a + b\n{body}")
    chunks = chunks_of(elm, "src/Main.elm", "elm", ChunkingPolicy(code=150))
    assert_verbatim(elm, chunks)
    assert by_symbol(chunks, "add").text.startswith("add : Int -> Int -> Int\nadd a b =")
    assert by_symbol(chunks, "sub").text.startswith("sub : Int")
    body = "".join(f"    X{i} = A * {i},\n" for i in range(8))
    erlang = (f"-module(m).\n\n-spec sub(integer(), integer()) -> integer().\nsub(A, B) ->\n{body}    A - B.\n\n"
              f"-spec add(integer(), integer()) -> integer().\nadd(A, B) ->\n{body}    A + B;\nadd(_, _) -> 0.\n")
    chunks = chunks_of(erlang, "src/m.erl", "erlang", ChunkingPolicy(code=150))
    assert_verbatim(erlang, chunks)
    assert by_symbol(chunks, "add").text.startswith("-spec add(")
    assert by_symbol(chunks, "sub").text.startswith("-spec sub(")


def test_a_vim_function_spans_its_body():
    """Vim's grammar holds the declaration line and the body side by side: a function ended at its
    first line, and its body was `module`."""
    text = ("function! s:Helper(x) abort\n  let y = a:x + 1\n  return y\nendfunction\n\n"
            "function MyPlugin#setup() abort\n  call s:Helper(1)\nendfunction\n")
    chunks = chunks_of(text, "plugin/my.vim", "vim", ChunkingPolicy(code=40))
    assert_verbatim(text, chunks)
    assert all(c.context in ("s:Helper", "MyPlugin#setup") for c in chunks), chunks
    assert {c.scope for c in chunks} == {(1, 4), (6, 8)}


def test_a_config_file_s_chunks_are_labelled_by_their_key_path_else_by_the_file():
    """A YAML workflow's chunks said `kind: module`, `context: module .github.workflows.ci`; a
    section of a YAML, TOML or JSON file is now named by its keys (two levels deep)."""
    steps = "".join(f"      - run: make step{i}\n" for i in range(20))
    text = (f"name: CI\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"
            "  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make lint\n")
    chunks = chunks_of(text, ".github/workflows/ci.yml", "yaml", ChunkingPolicy(config=200), kind="config")
    assert_verbatim(text, chunks)
    assert (chunks[0].chunk_kind, chunks[0].context) == ("config", ".github/workflows/ci.yml")
    assert {(c.chunk_kind, c.context) for c in chunks[1:]} == {("section", "jobs.build"), ("section", "jobs.lint")}
    assert all(c.definitions is None for c in chunks)  # labels only: no definition terms for ranking
    toml = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    chunks = chunks_of(toml, "pyproject.toml", "toml", ChunkingPolicy(config=50), kind="config")
    assert [c.context for c in chunks] == ["project", "tool.pytest.ini_options"]
    package = '{\n  "name": "x",\n  "scripts": {\n    "test": "jest",\n    "build": "tsc"\n  }\n}\n'
    chunks = chunks_of(package, "package.json", "json", ChunkingPolicy(config=60), kind="config")
    assert [c.context for c in chunks] == ["package.json", "scripts"]


def test_a_workflow_job_ending_in_a_block_scalar_keeps_its_last_lines_and_its_label():
    """`run: |` ended on its own line (the `|` is the block's one child): each job's last lines fell
    out of it, chunks crossed from one job into the next labelled only `jobs`, and the file's last
    line was a chunk of its own (a probe of CI questions; requests' run-tests.yml)."""
    jobs = ""
    for job in ("alpha", "beta", "gamma"):
        steps = "".join(f"      - name: step {job} {i}\n        run: echo {job} {i}\n" for i in range(8))
        jobs += f"  {job}:\n    runs-on: ubuntu-latest\n    steps:\n{steps}      - name: last\n        run: |\n          make ci\n"
    text = "name: ci\non: [push]\njobs:\n" + jobs
    chunks = chunks_of(text, ".github/workflows/ci.yml", "yaml", ChunkingPolicy(), kind="config")
    assert_verbatim(text, chunks)
    assert [(c.start_line, c.end_line, c.context) for c in chunks] == [
        (1, 25, "jobs.alpha"), (26, 47, "jobs.beta"), (48, 69, "jobs.gamma")]


def test_kubernetes_documents_are_labelled_by_kind_and_name_and_their_sections_below_them():
    """A stream of four manifests was chunked as `metadata`, `spec`, `spec`: "Ingress" found a chunk
    labelled `spec` holding the Service too (a probe of infrastructure questions)."""
    deployment_spec = "".join(f"        - name: c{i}\n          image: registry/app:{i}\n" for i in range(6))
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-config\ndata:\n  LOG_LEVEL: info\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 3\n"
            f"  template:\n    spec:\n      containers:\n{deployment_spec}---\n"
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  ports:\n    - port: 80\n---\n"
            "kind: Ingress\nmetadata:\n  name: api\nspec:\n  rules:\n    - host: api.example.com\n")
    chunks = chunks_of(text, "deploy/api.yaml", "yaml", ChunkingPolicy(config=220), kind="config")
    assert_verbatim(text, chunks)
    labels = [c.context for c in chunks]
    assert labels[0] == "ConfigMap api-config" and "Service api" in labels
    # (the small Ingress joined the Service's chunk: a query naming it is told it, as a member)
    assert any(c.context == "Ingress api" or ("api", "Ingress api", "section") in [m[:3] for m in c.members]
               for c in chunks)
    assert any(label.startswith("Deployment api.spec") for label in labels)
    assert all(not label.startswith(("spec", "metadata")) for label in labels)
    # A document with no resource kind keeps its key paths (a workflow, a compose file, `kind: local`).
    plain = "kind: local\nsettings:\n  a: 1\n---\nname: ci\njobs:\n  build:\n    runs-on: x\n"
    assert {c.context for c in chunks_of(plain, "x.yaml", "yaml", ChunkingPolicy(config=30), kind="config")} \
        <= {"x.yaml", "settings", "jobs", "jobs.build"}


def test_a_one_line_definition_under_a_long_comment_is_defined_by_the_piece_that_holds_it():
    """The unit (comment + declaration) is over the budget and cut by lines: the definition term
    and the symbol went to the first piece, documentation only, which then ranked as the definition."""
    doc = "".join(f"     * Normalises the input, step {i}: trims, folds case, collapses spaces.\n" for i in range(30))
    java = f"public interface Processor {{\n    /**\n{doc}     */\n    String normalizeInput(String input);\n}}\n"
    comment = "".join(f"# Licensed under the terms described in clause {i} of the agreement text.\n" for i in range(40))
    python = comment + "MAX_RETRIES = 3\n"
    for text, path, language, name in ((java, "Processor.java", "java", "normalizeInput"),
                                       (python, "config.py", "python", "MAX_RETRIES")):
        chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
        assert_verbatim(text, chunks)
        line = next(i for i, row in enumerate(text.splitlines(), start=1) if name in row)
        holding = [c for c in chunks if name in c.definitions]
        assert [(c.start_line <= line <= c.end_line) for c in holding] == [True], path
        if language == "python":  # module-level: no label on the comment's pieces
            assert [c.symbol for c in chunks if name not in c.text] == [""] * (len(chunks) - 1)


def test_joined_spans_keep_to_the_line_cap_however_short_their_lines():
    text = "class A\n" + "{\n" * 400 + "}\n" * 400  # rows of two characters fit any character budget
    chunks = chunks_of(text, "deep.cs", "csharp", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert max(c.end_line - c.start_line + 1 for c in chunks) <= ChunkingPolicy().max_lines


def test_a_minified_bundle_is_left_to_the_line_chunker():
    """One line holds the whole file: the tree cannot cut it, and walking 30,000 definitions in it
    took seconds per file."""
    from retrieval.chunking.ast import chunk_syntax

    bundle = "".join(f"function f{i}(a){{return a+{i}}};" for i in range(8000)) + "\n"
    assert chunk_syntax(bundle, "dist/app.min.js", language="javascript") is None
    source = "".join(f"function f{i}(a) {{\n  return a + {i};\n}}\n\n" for i in range(4000))  # as large, not minified
    assert chunk_syntax(source, "src/app.js", language="javascript")
    # A smaller one too (jquery.min.js, 87 KB on two lines, was labelled by its mangled names: `v`)
    small = "".join(f"function v{i}(a){{return a+{i}}};" for i in range(400)) + "\n"
    assert 10_000 < len(small) < 100_000 and chunk_syntax(small, "docs/js/jquery.min.js", language="javascript") is None


def test_a_file_the_parser_is_slow_over_is_chunked_by_lines_and_the_next_file_parses(monkeypatch):
    """tree-sitter-bash reads many heredocs on one command in quadratic time (136 KB: 19 s), so a
    parse has a deadline; past it the file gets line chunks, and the parser, stopped mid-file, must
    not carry that file into the next one."""
    from retrieval.chunking import ast, parsing

    slow = "cat " + " ".join(f"<<EOF{i}" for i in range(200)) + "\n" + "".join(
        f"line {i}\nEOF{i}\n" for i in range(200))
    monkeypatch.setattr(parsing, "PARSE_SECONDS", 0.0)  # every parse is past its deadline
    assert ast.chunk_syntax(slow, "many.sh", language="bash") is None
    from retrieval.chunking.lines import chunk_lines

    assert chunks_of(slow, "many.sh", "bash") == chunk_lines(slow, "many.sh", language="bash", kind="code", policy=SMALL)

    monkeypatch.setattr(parsing, "PARSE_SECONDS", 10.0)
    script = "deploy() {\n  echo deploying\n}\n\nrollback() {\n  echo rolling back\n}\n"
    assert {c.symbol for c in chunks_of(script, "ops.sh", "bash", policy=TINY)} >= {"deploy", "rollback"}


def test_ctrl_c_during_a_parse_stops_the_command_as_interrupted_and_the_next_parse_works():
    """A signal's KeyboardInterrupt (SIGTERM's Terminated is one) raised inside a parser callback
    came out as a SystemError: `index` ended with a traceback and exit 1 instead of 130 or 143."""
    import signal

    from retrieval.chunking import ast

    n = 3000  # tree-sitter-bash takes seconds over this: the alarm rings mid-parse
    slow = "cat " + " ".join(f"<<EOF{i}" for i in range(n)) + "\n" + "".join(f"line {i}\nEOF{i}\n" for i in range(n))

    def interrupt(*_args):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            ast.chunk_syntax(slow, "many.sh", language="bash")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    script = "deploy() {\n  echo deploying\n}\n\nrollback() {\n  echo rolling back\n}\n"
    assert {c.symbol for c in chunks_of(script, "ops.sh", "bash", policy=TINY)} >= {"deploy", "rollback"}


def test_a_parse_stopped_by_an_interrupt_raised_as_it_is_is_not_resumed_by_the_next_file(monkeypatch):
    """Ctrl-C may come out of the parser as the KeyboardInterrupt itself, not wrapped in a
    SystemError (5 of 60 alarms here): the parser was not reset, and the next file's parse in the
    same process resumed the stopped one (the test above failed now and then under load)."""
    from retrieval.chunking import ast, parsing

    real = parsing.parser_for("bash")
    n = 3000
    slow = ("cat " + " ".join(f"<<EOF{i}" for i in range(n)) + "\n" + "".join(f"line {i}\nEOF{i}\n" for i in range(n)))

    class InterruptedOnReturn:
        def parse(self, read, progress_callback=None):
            calls = []
            try:  # stop the real parse half done, as the signal does
                real.parse(read, progress_callback=lambda *_s: calls.append(1) or len(calls) > 3)
            except ValueError:
                pass
            raise KeyboardInterrupt  # the signal's handler ran as the parser returned

        def reset(self):
            real.reset()

    monkeypatch.setitem(parsing._PARSERS, "bash", InterruptedOnReturn())
    with pytest.raises(KeyboardInterrupt):
        ast.chunk_syntax(slow, "many.sh", language="bash")
    monkeypatch.setitem(parsing._PARSERS, "bash", real)
    script = "deploy() {\n  echo deploying\n}\n\nrollback() {\n  echo rolling back\n}\n"
    assert {c.symbol for c in chunks_of(script, "ops.sh", "bash", policy=TINY)} >= {"deploy", "rollback"}


def test_reading_the_names_of_a_file_of_many_definitions_costs_about_the_names(monkeypatch):
    """A node's text in a tree parsed from a read callback is read through it again, one slice per
    node however short: with 64 KB slices the names of a generated 1 MB file of constants cost 7 s
    (each name copied 64 KB)."""
    from retrieval.chunking import ast, parsing

    real = parsing.parser_for
    handed = []

    class Counting:
        def __init__(self, parser):
            self.parser = parser

        def parse(self, read, **kwargs):
            def counted(offset, point):
                out = read(offset, point)
                handed.append(len(out))
                return out
            return self.parser.parse(counted, **kwargs)

        def reset(self):
            self.parser.reset()

    monkeypatch.setattr(parsing, "parser_for", lambda grammar: Counting(real(grammar)))
    text = "".join(f"X{i} = {i}\n" for i in range(5000))
    chunks = ast.chunk_syntax(text, "consts.py", language="python")
    assert_verbatim(text, chunks)
    assert {"X0", "X4999"} <= defined(chunks)
    assert sum(handed) < 2048 * 10_000  # 10,000 names and values read: at most 2 KB each


def test_a_file_of_unclosed_brackets_is_chunked_by_lines():
    """JSONTestSuite's 100,000 opening arrays parse as an ERROR root over bare `[` tokens: nothing
    was read, and searching that tree for definitions took 5 s."""
    from retrieval.chunking import ast

    assert ast.chunk_syntax("[" * 20_000 + "\n", "n_structure_opening_arrays.json", language="json") is None
    assert ast.chunk_syntax('{"name": [1, 2, 3]}\n', "ok.json", language="json")


def test_wall_time_passing_during_a_parse_does_not_cost_the_file_its_syntax_chunks(monkeypatch):
    """The parse allowance is CPU time: on a machine busy with other processes a parse takes longer
    by the clock, and the same file must still get the same chunks."""
    import time

    from retrieval.chunking import ast

    # Long enough for tree-sitter to report progress (it does every few hundred bytes).
    script = "".join(f"step{i}() {{\n  echo running step {i}\n}}\n\n" for i in range(200))
    expected = ast.chunk_syntax(script, "ops.sh", language="bash", policy=TINY)
    assert expected and {c.symbol for c in expected} >= {"step0", "step199"}
    clock = iter(range(0, 10**9, 100))  # every reading 100 s after the last
    monkeypatch.setattr(time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(time, "time", lambda: float(next(clock)))
    assert ast.chunk_syntax(script, "ops.sh", language="bash", policy=TINY) == expected


def test_an_impl_or_extension_of_a_type_does_not_define_the_type():
    """alamofire's `DataResponse`: its extension ranked first and the struct fell out of the top 10;
    serde's `RenameRule`: its impl first, the enum third. The methods inside still define."""
    body = "".join(f"        let step{i} = {i}\n" for i in range(6))
    rust = ("pub enum RenameRule {\n    None,\n    Lower,\n}\n\nimpl RenameRule {\n    pub fn apply(self) {\n"
            + body.replace("let", "let") + "    }\n}\n\nimpl Display for RenameRule {\n    fn fmt(&self) {}\n}\n")
    swift = ("public struct DataResponse {\n    let value: Int\n}\n\nextension DataResponse {\n"
             "    public func map() -> Int {\n" + body + "        return value\n    }\n}\n")
    for text, path, language, name, member in ((rust, "case.rs", "rust", "RenameRule", "apply"),
                                               (swift, "Response.swift", "swift", "DataResponse", "map")):
        chunks = chunks_of(text, path, language, TINY)
        assert_verbatim(text, chunks)
        assert [c.start_line for c in chunks if name in (c.definitions or ())] == [1]
        assert member in defined(chunks)


def test_a_rust_associated_type_bound_in_a_trait_impl_defines_nothing():
    """serde's `impl IntoDeserializer for Value { type Deserializer = Self; ... }` took the name's
    definition term, and the query `Deserializer` found that impl before the trait."""
    rust = ("pub trait Deserializer<'de>: Sized {\n    type Error;\n    fn deserialize_any(self);\n}\n\n"
            "impl<'de> IntoDeserializer<'de> for Value {\n    type Deserializer = Self;\n"
            "    fn into_deserializer(self) -> Self {\n        self\n    }\n}\n\n"
            "pub trait Shape {\n    type Area;\n}\n")
    chunks = chunks_of(rust, "de.rs", "rust", TINY)
    assert_verbatim(rust, chunks)
    defining = [c.start_line for c in chunks if "Deserializer" in (c.definitions or ())]
    assert defining == [1]  # the trait only
    assert {"Shape", "into_deserializer"} <= defined(chunks)


def test_an_overload_s_declarations_define_nothing_and_its_implementation_defines_the_name():
    """huggingface_hub's `hf_hub_download`: three `@overload` declarations took the definition term
    and the last of them was the name's first hit, above the implementation after them."""
    python = ("from typing import overload\n\n@overload\ndef hub(x: int) -> int: ...\n@typing.overload\n"
              "def hub(x: str) -> str: ...\ndef hub(x):\n    return x\n\n\nclass A:\n    @t.overload\n"
              "    def m(self) -> None: ...\n    def m(self, x=1):\n        return x\n")
    chunks = chunks_of(python, "hub.py", "python", policy=TINY)
    assert_verbatim(python, chunks)
    defining = {(c.start_line, name) for c in chunks for name in c.definitions or ()}
    assert {name for _, name in defining} == {"hub", "m", "A"}
    assert {line for line, name in defining if name in ("hub", "m")} == {7, 14}  # the implementations' lines
    typescript = ("export function parse(x: string): number;\nexport function parse(x: number): number;\n"
                  "export function parse(x: any): number {\n  return Number(x);\n}\n"
                  "class Box {\n  get(k: string): string;\n  get(k: any): string {\n    return String(k);\n  }\n}\n"
                  "interface Shape {\n  area(): number;\n}\ndeclare function lonely(): void;\n")
    chunks = chunks_of(typescript, "parse.ts", "typescript", policy=TINY)
    assert_verbatim(typescript, chunks)
    defining = {(c.start_line, name) for c in chunks for name in c.definitions or ()}
    assert {line for line, name in defining if name in ("parse", "get")} == {3, 8}
    # a signature with no implementation after it (an interface's, a declaration file's) still defines
    assert {"area", "lonely", "Shape", "Box"} <= {name for _, name in defining}


def test_functions_in_a_rust_macro_s_body_are_defined_with_their_scope():
    """tokio gates hundreds of functions behind `cfg_rt! { ... }`: the grammar reads a macro's body
    as opaque tokens, and `spawn_blocking` was defined nowhere (lexical found it first, treesitter
    listed its callers above it)."""
    text = ("impl Handle {\n    pub fn current() -> Handle {\n        Handle {}\n    }\n\n    cfg_rt! {\n"
            "        /// Spawns a blocking task.\n        pub fn spawn_blocking<F>(&self, f: F) -> JoinHandle<F> {\n"
            "            self.inner.spawn(f)\n        }\n\n        cfg_time! {\n"
            "            pub(crate) fn timer(&self) -> Timer {\n                Timer::new()\n            }\n"
            "        }\n    }\n}\n\ncfg_net! {\n    pub async fn connect(addr: &str) -> Result<TcpStream> {\n"
            "        TcpStream::connect(addr).await\n    }\n}\n\n"
            "macro_rules! cfg_rt {\n    ($($item:item)*) => { $( #[cfg(feature = \"rt\")] fn hidden() {} $item )* }\n}\n")
    chunks = chunks_of(text, "handle.rs", "rust", policy=TINY)
    assert_verbatim(text, chunks)
    assert {"spawn_blocking", "timer", "connect"} <= defined(chunks)
    assert by_symbol(chunks, "spawn_blocking").context == "impl Handle.spawn_blocking"
    assert by_symbol(chunks, "timer").context == "impl Handle.timer"  # a macro in a macro's body
    assert by_symbol(chunks, "connect").chunk_kind == "function"
    assert "hidden" not in defined(chunks)  # a macro's own rules are patterns, not items


def test_a_struct_in_a_rust_macro_s_body_keeps_its_fields_with_its_header():
    """tokio's `JoinHandle`, behind `cfg_rt! {` with 60 lines of documentation: the chunk ended at
    `pub struct JoinHandle<T> {` and its fields went to the next chunk, with the impls after them.
    The macro's body was split by its tokens, which no definition is, not by the items in it."""
    doc = "".join(f"    /// A handle that awaits the task's output; line {i:02d} of its documentation.\n" for i in range(60))
    text = ("use crate::runtime::task::RawTask;\n\ncfg_rt! {\n" + doc
            + "    pub struct JoinHandle<T> {\n        raw: RawTask,\n        _p: PhantomData<T>,\n    }\n}\n\n"
            "unsafe impl<T: Send> Send for JoinHandle<T> {}\n\nimpl<T> JoinHandle<T> {\n"
            "    pub(super) fn new(raw: RawTask) -> JoinHandle<T> {\n        JoinHandle { raw, _p: PhantomData }\n    }\n"
            "\n    pub fn abort(&self) {\n        self.raw.remote_abort();\n    }\n}\n")
    chunks = chunks_of(text, "join.rs", "rust", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    (struct,) = [c for c in chunks if "pub struct JoinHandle<T> {" in c.text]
    assert "        _p: PhantomData<T>,\n    }\n" in struct.text
    assert struct.symbol == "JoinHandle" and struct.chunk_kind != "method"
    assert not any("_p: PhantomData<T>," in c.text and "fn new" in c.text for c in chunks)


def test_a_one_line_header_joins_its_first_member_however_long_that_member_is():
    """tokio's `impl Handle {` before a member over the budget was a chunk of its own, and BM25's
    taste for short documents made it the first hit for `Handle::time`."""
    member = "".join(f"    /// Enters the runtime context, line {i:02d} of its documentation.\n" for i in range(26)) \
        + "    pub fn enter(&self) -> EnterGuard<'_> {\n        EnterGuard::new(self)\n    }\n"
    text = "use crate::runtime;\n\nimpl Handle {\n" + member + "\n    pub fn id(&self) -> Id {\n        self.id\n    }\n}\n"
    chunks = chunks_of(text, "handle.rs", "rust", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    header = next(c for c in chunks if "impl Handle {" in c.text)
    assert "pub fn enter" in header.text and header.context == "impl Handle.enter"


def test_comment_lines_moved_to_the_next_definition_never_push_a_chunk_over_the_budget():
    """A module's documentation of its one class (Ruby: the class alone in the module's body) was
    cut from the class's header, then moved back onto the header's chunk whatever its size: 2,700
    characters (sinatra's IndifferentHash)."""
    doc = "".join(f"  # Line {i} of the documentation of the indifferent hash, with an example.\n" for i in range(16))
    methods = "".join(f"    def fetch_{i}(key)\n      value = super(convert_key(key))\n      convert_value(value, {i})\n"
                      f"    end\n\n" for i in range(24))
    text = "# frozen_string_literal: true\n\nmodule Sinatra\n" + doc + "  class IndifferentHash < Hash\n" + methods \
        + "  end\nend\n"
    budget = ChunkingPolicy().code
    chunks = chunks_of(text, "indifferent_hash.rb", "ruby", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert all(len(c.text) <= budget for c in chunks)
    (header,) = [c for c in chunks if "class IndifferentHash" in c.text]
    assert "Line 15 of the documentation" in header.text and header.context == "Sinatra.IndifferentHash"


def test_a_class_kdoc_the_grammar_puts_in_the_last_import_goes_with_the_class():
    """Kotlin's grammar ends the last import with the comment after it: the class's KDoc went with
    that import, then moved to the class's chunk (over the budget), and the import was left alone."""
    kdoc = "/**\n" + "".join(f" * Line {i} of the documentation of the client configuration, at length.\n"
                              for i in range(14)) + " */\n"
    fields = "".join(f"    private val plugin{i}: MutableMap<String, Int> = mutableMapOf()\n" for i in range(4))
    method = "".join(f"    fun engine{n}(block: T.() -> Unit) {{\n" + "".join(
        f"        val old{i} = engineConfig.step{i}(block, {i})\n" for i in range(14)) + "    }\n\n" for n in range(2))
    imports = "".join(f"import io.ktor.client.plugins.feature{i}.*\n" for i in range(10))
    text = ("/*\n * Copyright.\n */\n\npackage io.ktor.client\n\nimport io.ktor.client.engine.*\n" + imports
            + "import io.ktor.utils.io.*\n\n" + kdoc
            + "public class HttpClientConfig<T : EngineConfig> {\n" + fields + "\n" + method + "}\n")
    budget = ChunkingPolicy().code
    chunks = chunks_of(text, "HttpClientConfig.kt", "kotlin", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert all(len(c.text) <= budget for c in chunks)
    (imports,) = [c for c in chunks if "import" in c.text]
    assert "import io.ktor.client.engine.*" in imports.text and "import io.ktor.utils.io.*" in imports.text
    assert "Line 0 of the documentation" not in imports.text
    (header,) = [c for c in chunks if "public class HttpClientConfig" in c.text]
    assert header.text.startswith("/**")


def test_a_run_of_line_comments_over_the_budget_is_cut_in_even_pieces():
    """Ruby's `#` documentation is one node a line: cut greedily, rails' MiddlewareStackProxy left a
    four-line tail of its 35-line documentation as a chunk of its own."""
    doc = "".join(f"    # Line {i} of the proxy's documentation: how to add, swap or remove things.\n"
                  for i in range(22))
    body = "".join(f"      def step_{i}(*args)\n        @operations << [:step_{i}, args]\n      end\n\n" for i in range(12))
    text = "module Rails\n  module Configuration\n" + doc + "    class MiddlewareStackProxy\n" + body \
        + "    end\n  end\nend\n"
    chunks = chunks_of(text, "configuration.rb", "ruby", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    pieces = [c for c in chunks if "proxy's documentation" in c.text]
    assert len(pieces) == 2
    assert all(c.text.count("proxy's documentation") >= 8 for c in pieces)


def test_the_pieces_of_a_split_function_are_of_comparable_size():
    """telescope's `Picker:set_selection` was cut 48 / 8 / 40 / 16 lines: statements filled the
    first piece, two were left before a statement too big to join them, and they were a chunk of
    their own that won queries by its shortness."""
    first = "".join(f"  local value_{i} = self.manager:get_entry(self:get_index(row + {i}))\n" for i in range(22))
    middle = "  if not entry then\n    return\n  end\n  local old_entry\n"
    big = "  local ok = pcall(function()\n" + "".join(
        f"    self.highlighter:hi_selection(row + {i}, caret:match('x'))\n" for i in range(22)) + "  end)\n"
    tail = "".join(f"  self._selection_{i} = entry\n" for i in range(8))
    text = "function Picker:set_selection(row)\n" + first + middle + big + tail + "end\n"
    assert len(first) + len(middle) > 1500 > len(big)
    chunks = chunks_of(text, "pickers.lua", "lua", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert len(chunks) > 2 and {c.context for c in chunks} == {"Picker:set_selection"}
    head = [c for c in chunks if "local ok = pcall" not in c.text and c.start_line < text[: text.index(big)].count("\n")]
    sizes = [len(c.text) for c in head]
    assert len(sizes) == 2 and min(sizes) * 2 > max(sizes)


PROTO = """syntax = "proto3";
package demo.v1;

message User {
  string id = 1;
  string email = 2;
  string display_name = 3;
  int64 created_at = 4;
}

enum Status {
  STATUS_UNSPECIFIED = 0;
  STATUS_ACTIVE = 1;
  STATUS_SUSPENDED = 2;
}

service UserService {
  rpc GetUser(GetUserRequest) returns (User);
  rpc ListUsers(ListUsersRequest) returns (stream User);
}
"""
SQL = """CREATE TABLE users (
  id SERIAL PRIMARY KEY,
  email VARCHAR(255) NOT NULL UNIQUE,
  created_at TIMESTAMP DEFAULT now()
);

CREATE VIEW big_spenders AS
SELECT u.email, SUM(o.total) AS spent
FROM users u JOIN orders o ON o.user_id = u.id
GROUP BY u.email;

CREATE FUNCTION order_count(uid INTEGER) RETURNS INTEGER AS $$
  SELECT COUNT(*) FROM orders WHERE user_id = uid AND total > 0;
$$ LANGUAGE SQL;
"""
GRAPHQL = """type User {
  id: ID!
  email: String!
  displayName: String
  orders(first: Int = 10): [Order!]!
}

input CreateUserInput {
  email: String!
  displayName: String
  role: Role = USER
}

query GetUser($id: ID!) {
  user(id: $id) { id email displayName orders { id total } }
}
"""
CMAKE = """cmake_minimum_required(VERSION 3.16)
project(demo LANGUAGES CXX)

function(add_demo_test name)
  add_executable(${name} tests/${name}.cpp)
  target_link_libraries(${name} PRIVATE core)
  add_test(NAME ${name} COMMAND ${name})
endfunction()

macro(log_var var)
  message(STATUS "The variable ${var} holds the value ${${var}} here")
endmacro()
"""
MAKEFILE = """PREFIX ?= /usr/local

.PHONY: all install clean

install: demo
\tinstall -m 755 demo $(PREFIX)/bin/demo
\tinstall -m 644 demo.1 $(PREFIX)/share/man/man1/demo.1

clean:
\trm -f *.o demo demo.1 core.a
\trm -rf build/ dist/ coverage/
"""
FORTRAN = """module solver
  implicit none
contains
  subroutine step(x, dt)
    real, intent(inout) :: x
    real, intent(in) :: dt
    x = x + dt * 0.5
  end subroutine step

  function energy(x) result(e)
    real, intent(in) :: x
    real :: e
    e = 0.5 * x**2 + 0.25 * x**4
  end function energy
end module solver
"""

JULIA = """module Geo
struct Point
    x::Float64
    y::Float64
    label::String
    weight::Float64
    created::Int64
end

function distance(a::Point, b::Point)
    dx = a.x - b.x
    dy = a.y - b.y
    sqrt(dx^2 + dy^2) * (a.weight + b.weight) / 2
end
end
"""
SOLIDITY = """pragma solidity ^0.8.0;

contract Token {
    mapping(address => uint256) public balances;
    address owner;

    modifier onlyOwner() {
        require(msg.sender == owner, "only the owner of the token may do this");
        _;
    }
}
"""
OBJC = """#import "Foo.h"

@implementation Foo
- (void)greet {
  NSLog(@"Hello %@, welcome to the demo application", self.name);
}
@end
"""
PERL = """package Util;
use strict;

sub trim {
    my ($s) = @_;
    $s =~ s/^\\s+|\\s+$//g;
    return $s;
}
1;
"""
OCAML = """type 'a tree =
  | Leaf
  | Node of 'a tree * 'a * 'a tree
  | Forest of 'a tree list

module IntSet = struct
  let empty = []
  let add x s = if List.mem x s then s else x :: s
end
"""


@pytest.mark.parametrize("text, path, language, kind, expected", [
    (PROTO, "api/user.proto", "proto", "code",
     {("User", "struct"), ("Status", "enum"), ("UserService", "interface")}),
    (SQL, "db/schema.sql", "sql", "code",
     {("users", "table"), ("big_spenders", "view"), ("order_count", "function")}),
    (GRAPHQL, "schema.graphql", "graphql", "code",
     {("User", "type"), ("CreateUserInput", "type"), ("GetUser", "query")}),
    (CMAKE, "CMakeLists.txt", "cmake", "config", {("add_demo_test", "function"), ("log_var", "macro")}),
    (MAKEFILE, "Makefile", "make", "config", {("install", "rule"), ("clean", "rule")}),
    (FORTRAN, "src/solver.f90", "fortran", "code", {("step", "function"), ("energy", "function")}),
    (JULIA, "src/Geo.jl", "julia", "code", {("Point", "struct"), ("distance", "function")}),
    (SOLIDITY, "contracts/Token.sol", "solidity", "code", {("Token", "class"), ("onlyOwner", "method")}),
    (OBJC, "Foo.m", "objc", "code", {("Foo", "class")}),
    (PERL, "lib/Util.pm", "perl", "code", {("trim", "function")}),
    (OCAML, "lib/tree.ml", "ocaml", "code", {("tree", "type"), ("IntSet", "module")}),
])
def test_declarations_of_other_mainstream_languages_name_their_chunks(text, path, language, kind, expected):
    """A protobuf message, an SQL table, a GraphQL type, a CMake function, a Make target, a Fortran
    subroutine, a Julia struct, a Solidity contract, an Objective-C class, a Perl sub or an OCaml
    type was no definition: its chunk said `module`/`config` and named nothing."""
    chunks = chunks_of(text, path, language, kind=kind)
    assert_verbatim(text, chunks)
    found = {(c.symbol, c.chunk_kind) for c in chunks}
    assert expected <= found, found
    assert not any(c.symbol.startswith(".") for c in chunks)  # `.PHONY` is a directive, not a target


def named(chunks) -> set:
    """(name, kind) of every definition the chunks name: their labels and their members."""
    return {(c.symbol, c.chunk_kind) for c in chunks if c.chunk_kind != "module"} | {
        (m[0], m[2]) for c in chunks for m in c.members}


@pytest.mark.parametrize("text, path, language, expected, not_definitions", [
    ("module M\n\nlet ship trackingId order =\n    match order with\n    | Paid _ -> Ok trackingId\n"
     "    | s -> Error s\n", "Orders.fs", "fsharp", set(), {"_", "s", "Paid _"}),
    ("CREATE FUNCTION billing.recompute_total(p_id BIGINT) RETURNS BIGINT AS $$\nDECLARE\n  v_total BIGINT;\n"
     "BEGIN\n  SELECT sum(amount) INTO v_total FROM items WHERE order_id = p_id;\n  RETURN v_total;\nEND;\n"
     "$$ LANGUAGE plpgsql;\n", "db/billing.sql", "sql", {("recompute_total", "function")}, {"v_total"}),
    ("make_counter <- function(start = 0) {\n  count <- start\n"
     "  list(value = function() count, inc = function() { count <<- count + 1 })\n}\n",
     "R/counter.R", "r", {("make_counter", "function")}, {"count"}),
    ("contract Vault {\n    using ShareMath for uint256;\n    uint256 public total;\n"
     "    function deposit(uint256 x) external { total += x; }\n}\n", "Vault.sol", "solidity",
     {("Vault", "class"), ("deposit", "method")}, {"ShareMath"}),
    ("@interface Message : NSObject\n@property (nonatomic, copy) NSString *body;\n"
     "@property (nonatomic) dispatch_queue_t queue;\n- (void)send;\n@end\n", "Message.m", "objc",
     {("Message", "class"), ("body", "constant"), ("queue", "constant")}, {"NSString", "dispatch_queue_t"}),
])
def test_other_grammars_nodes_that_share_a_definition_s_type_but_define_nothing_are_no_definitions(
        text, path, language, expected, not_definitions):
    """F#'s match arm is a `rule` (a Make target's type), a variable a SQL function DECLAREs a
    `function_declaration`, R's anonymous function was named by its body's first identifier,
    Solidity's `using L for T` held a `type_alias`, and an Objective-C property's type was a struct:
    each was a member a query was then told, as a definition that is not there."""
    chunks = chunks_of(text, path, language, policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    found = named(chunks)
    assert expected <= found and not {name for name, _kind in found} & not_definitions, found


def test_a_fortran_function_is_one_definition_not_two():
    text = ("module heat_solver\ncontains\n  pure function total_heat(self) result(t)\n    real :: t\n"
            "    t = 1.0\n  end function total_heat\nend module heat_solver\n")
    chunks = chunks_of(text, "heat.f90", "fortran", policy=ChunkingPolicy())
    paths = [c.context for c in chunks] + [m[1] for c in chunks for m in c.members]
    assert "heat_solver.total_heat.total_heat" not in paths and "heat_solver.total_heat" in paths


def test_a_julia_docstring_stays_with_what_it_documents_and_short_and_parametric_definitions_are_named():
    """A docstring is a string standing above its definition: it was cut off, its last line a chunk
    of its own and the rest ending the chunk before (labelled by the next function)."""
    body = "".join(f"    y{i} = x + {i} * 2 + sqrt(x) - {i}\n" for i in range(20))
    text = (f"function f(x)\n{body}    return x\nend\n\n\"\"\"\n    g(x)\n\nDoc for g.\n\"\"\"\nfunction g(x)\n"
            f"{body}    return x\nend\n\n\"\"\"\n    Point(x, y)\n\"\"\"\nstruct Point{{T<:Real}} <: Shape\n    x::T\n"
            "    y::T\nend\n\n\"Area of a circle.\"\narea(r) = pi * r^2\n")
    chunks = chunks_of(text, "src/Geometry.jl", "julia", policy=ChunkingPolicy(code=1000))
    assert_verbatim(text, chunks)
    g = by_symbol(chunks, "g")
    assert g.text.startswith('"""\n    g(x)') and "function g(x)" in g.text
    assert by_symbol(chunks, "f").text.rstrip().endswith("end")  # none of g's docstring
    assert all(c.text.strip() != '"""' for c in chunks)
    assert {("Point", "struct"), ("area", "function")} <= named(chunks)


def test_a_dart_mixin_is_a_scope_and_a_method_spans_its_body():
    """`mixin Observable` was no definition (its methods had no scope), and a method was its
    signature's line alone (the body is the signature's sibling in Dart's tree)."""
    text = ("mixin Observable {\n  final _listeners = <void Function()>[];\n\n  void addListener(void Function() f) {\n"
            "    _listeners.add(f);\n  }\n}\n")
    chunks = chunks_of(text, "lib/observable.dart", "dart", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    assert ("Observable", "trait") in named(chunks) and ("addListener", "method") in named(chunks)
    member = next(m for c in chunks for m in c.members if m[0] == "addListener")
    assert (member[1], member[3:]) == ("Observable.addListener", (4, 6))


def test_scala_3_extension_methods_and_an_enum_s_last_method_keep_their_scope():
    """An indentation-delimited enum method took in the next class's documentation, ended past its
    enum and lost it as its scope; `extension (s: String)` methods had none."""
    text = ("extension (s: String)\n  def checkAll: Boolean = s.nonEmpty\n  def shout: String = s.toUpperCase\n\n"
            "enum Decision:\n  case Allow, Deny\n  def allowed: Boolean = this match\n    case Allow => true\n"
            "    case Deny => false\n\n/** A limiter. */\nclass Limiter { }\n")
    chunks = chunks_of(text, "Decision.scala", "scala", policy=TINY)
    assert_verbatim(text, chunks)
    paths = {c.context for c in chunks} | {m[1] for c in chunks for m in c.members}
    assert {"Decision.allowed", "extension String.checkAll", "extension String.shout"} <= paths
    limiter = by_symbol(chunks, "Limiter")
    assert limiter.text.startswith("/** A limiter. */")


def test_a_zig_enum_is_an_enum_and_a_struct_a_struct():
    text = ("const std = @import(\"std\");\n\npub const Color = enum(u8) {\n    red,\n    green,\n\n"
            "    pub fn name(self: Color) []const u8 {\n        return @tagName(self);\n    }\n};\n\n"
            "pub const Point = struct {\n    x: i32,\n};\n")
    chunks = chunks_of(text, "src/color.zig", "zig", policy=TINY)
    assert_verbatim(text, chunks)
    assert {("Color", "enum"), ("Point", "struct")} <= named(chunks)


@pytest.mark.parametrize("text, path, language, expected", [
    ("enum Level { Low; High }\n\nclass Backup {\n    [string] $Path\n\n    [int] Run([string] $target) {\n"
     "        Write-Host $target\n        return 0\n    }\n}\n", "Backup.psm1", "powershell",
     {"Level", "Backup", "Backup.Run"}),
    ("package Job::Queue;\nuse strict;\n\nsub new {\n    my ($class) = @_;\n    return bless {}, $class;\n}\n\n"
     "package Job::Queue::Stats;\n\nsub new {\n    return bless {}, shift;\n}\n\npackage Counter {\n"
     "    sub inc { return 1; }\n}\n\nsub outside { 2 }\n1;\n", "lib/Job/Queue.pm", "perl",
     {"Job::Queue.new", "Job::Queue::Stats.new", "Counter.inc", "outside"}),
    ("namespace Shop\n\n/// An order.\ntype Order =\n    { Id: int; Total: decimal }\n\ntype Status =\n    | Pending\n"
     "    | Paid of int\n\nmodule Orders =\n    let pay (o: Order) = Paid o.Id\n\n    let validate o =\n"
     "        o.Total > 0m\n", "src/Shop.fs", "fsharp", {"Order", "Status", "Orders", "Orders.pay", "Orders.validate"}),
    ("module Account = struct\n  type t = { id : int; balance : int }\n\n  let open_account id = { id; balance = 0 }\n\n"
     "  let apply t amount =\n    let total = t.balance + amount in\n    { t with balance = total }\nend\n\nlet limit = 3\n",
     "lib/account.ml", "ocaml", {"Account.open_account", "Account.apply", "limit"}),
    ("(ns app.paths\n  (:require [clojure.string :as str]))\n\n(defn parse-path\n  \"Splits a path.\"\n  [path]\n"
     "  (str/split path #\"/\"))\n\n(defprotocol Store\n  (fetch [this k]))\n\n(def limit 3)\n", "src/app/paths.clj",
     "clojure", {"parse-path", "Store", "limit"}),
])
def test_scopes_and_definitions_of_powershell_perl_fsharp_ocaml_and_clojure(text, path, language, expected):
    """A PowerShell class's methods and enums, Perl's packages (a statement up to the next, or a
    block), F#'s types, modules and functions, OCaml's `let`s and Clojure's `defn`s were no
    definitions: chunks said `module` or were named by a match arm."""
    chunks = chunks_of(text, path, language, policy=TINY)
    assert_verbatim(text, chunks)
    paths = {c.context for c in chunks} | {m[1] for c in chunks for m in c.members}
    assert expected <= paths, paths
    assert "Account.apply.total" not in paths  # a local `let ... in`


def test_the_bindings_of_one_go_group_are_siblings_not_nested_in_each_other():
    """A `var (...)` group's names share its span: each was nested in the one before it, gin's
    `MsgPack` labelled `JSON.XML.Form.Query.FormPost.FormMultipart.ProtoBuf.MsgPack`."""
    text = ("package binding\n\nvar (\n\tJSON          BindingBody = jsonBinding{}\n\tXML           BindingBody = "
            "xmlBinding{}\n\tForm          Binding     = formBinding{}\n)\n\nconst (\n\tjsonContentType  = "
            "\"application/json\"\n\tjsonpContentType = \"application/javascript\"\n)\n")
    chunks = chunks_of(text, "binding/binding.go", "go", policy=ChunkingPolicy())
    assert_verbatim(text, chunks)
    paths = {c.context for c in chunks} | {m[1] for c in chunks for m in c.members}
    assert {"XML", "Form", "jsonpContentType"} <= paths and not [p for p in paths if "." in p and " " not in p], paths


def test_a_go_struct_and_interface_are_said_as_such():
    """`type Engine struct` was kind `type`, where the README lists struct and interface."""
    text = ("package x\n\ntype Engine struct {\n\tname string\n}\n\ntype Handler interface {\n\tServe()\n}\n\n"
            "type ID int\n")
    chunks = chunks_of(text, "engine.go", "go", policy=TINY)
    assert_verbatim(text, chunks)
    assert {("Engine", "struct"), ("Handler", "interface"), ("ID", "type")} <= named(chunks)


def test_a_terraform_block_is_labelled_by_its_type_and_labels():
    """Every block of a `.tf` file is a section named as Terraform addresses it, not the file's name."""
    text = ('variable "region" {\n  type        = string\n  default     = "us-east-1"\n'
            '  description = "The region every resource of this module is created in"\n}\n\n'
            'resource "aws_s3_bucket" "logs" {\n  bucket = "demo-logs"\n  tags = {\n'
            '    Environment = "prod"\n    Owner       = "platform-team"\n  }\n}\n')
    for path, language in (("infra/main.tf", "hcl"), ("infra/config.hcl", "hcl")):
        chunks = chunks_of(text, path, language, kind="config")
        assert_verbatim(text, chunks)
        assert [(c.context, c.symbol, c.chunk_kind) for c in chunks] == [
            ("variable region", "region", "section"), ("resource aws_s3_bucket logs", "logs", "section")]


def test_matlab_functions_are_chunked_and_labelled_by_the_grammar():
    text = ("function y = smooth_signal(x, w)\n% SMOOTH_SIGNAL moving average\n  y = conv(x, ones(w,1)/w);\nend\n\n"
            "function [a, b] = split_pair(p)\n  a = p(1); b = p(2);\nend\n")
    chunks = chunks_of(text, "signal_utils.m", "matlab", policy=TINY)
    assert_verbatim(text, chunks)
    assert by_symbol(chunks, "smooth_signal").chunk_kind == by_symbol(chunks, "split_pair").chunk_kind == "function"
