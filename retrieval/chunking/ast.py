"""Syntax-aware chunks: whole definitions where they fit, with their scope, from tree-sitter.

A file is parsed with its grammar from tree-sitter-language-pack (imported on first use, never at
module level: this module is importable without the extra). Chunks follow the syntax tree:

- siblings that fit the budget are units; an oversized definition (or statement) is split into its
  children, and a body (`block`, `class_body`, ...) is spliced into its parent, so a class's header
  and docstring stay with its first small members; only a leaf that alone exceeds the budget (a
  huge literal, a minified line) is cut by the line chunker;
- small neighbours are merged up to the budget; definitions of a good size stay alone;
- comments, decorators and attributes just above a definition belong to it;
- spans are whole lines, verbatim, 1-based, in order and disjoint.

Each chunk says what it is: `context` (its scope path, `APIRouter.add_api_route`, `impl Service for
Router.call`, or `module fastapi.routing`), `chunk_kind` (function, method, class, ...), `symbol`
(the name it defines), `scope` (the lines of the enclosing definition, for `--expand scope`) and
`definitions` (every name defined in it, from the tree: the ranking's definition terms).

A file without a grammar, or one that does not parse, falls back to the line chunker (per file);
Markdown and reStructuredText are chunked by headings (`markdown.py`, standard library).
"""
from __future__ import annotations

import bisect
import os
import re
import threading
import time
from dataclasses import replace

from ..languages import CODE, from_content
from ..read import split_lines
from ..records import Chunk
from ..text import operator_name
from .grammars import HEADING_LANGUAGES, grammar_for
from .lines import ChunkingPolicy, chunk_lines

MAX_DEPTH = 40  # deeper nesting is cut by lines: bounded time, no recursion errors
MAX_DEFINITION_DEPTH = 160  # syntax nodes above a definition the query still matches (see definitions)
MAX_SCOPE = 12  # levels a breadcrumb names (the innermost ones)
# A file whose parses take more CPU time than this is chunked by lines. Real files parse in well
# under a second (the largest C file of the benchmark checkouts, 580 KB: 0.2 s), but a grammar can
# be slow on text made to hurt it: tree-sitter-bash reads many heredocs on one command in quadratic
# time (136 KB: 19 s; the 1 MB size cap: minutes). CPU time, not the clock's: on a machine busy with
# other processes a file must not lose its syntax chunks (same input, same chunks).
PARSE_SECONDS = 10.0
ALONE_SHARE = 0.5  # a definition at least this share of the budget is a chunk of its own
MIN_SPAN = 300  # a span smaller than this (in characters) joins a neighbour
# A definition this far over the budget, most of it documentation, stays whole: cut, a Javadoc
# longer than its three-line method was a chunk of its own and the method joined the next Javadoc.
WHOLE_SLACK = 1.25
UNEVEN = 2  # pieces of one run of a split node are cut evenly when one is below 1/this of their mean
TINY = 48  # a span this small (in characters) joins its predecessor (a closing brace, `end`)

# Definition node types -> the kind they define. Node type names mean the same thing across the
# pack's grammars, so one table serves every language; a grammar lacking a type just skips it.
_SCOPE_KINDS: dict[str, str] = {
    "class_definition": "class", "class_declaration": "class", "class_specifier": "class",
    "abstract_class_declaration": "class", "class": "class", "object_declaration": "class",
    "object_definition": "class", "companion_object": "class", "record_declaration": "class",
    "struct_specifier": "struct", "struct_item": "struct", "struct_declaration": "struct",
    "union_specifier": "struct", "union_item": "struct",
    "interface_declaration": "interface", "protocol_declaration": "interface",
    "trait_item": "trait", "trait_declaration": "trait", "trait_definition": "trait",
    "enum_item": "enum", "enum_declaration": "enum", "enum_specifier": "enum", "enum_definition": "enum",
    "impl_item": "impl", "instance": "impl", "extension_declaration": "impl",
    "module": "module", "mod_item": "module", "namespace_definition": "namespace",
    "namespace_declaration": "namespace", "internal_module": "namespace",
    "type_alias_declaration": "type", "type_item": "type", "type_alias": "type", "type_spec": "type",
    "data_type": "type", "newtype": "type", "type_synomym": "type", "annotation_type_declaration": "interface",
    # C/C++ typedef and Scala `type X = ...`, C++ `using X = ...` and concepts, C# delegates
    "type_definition": "type", "alias_declaration": "type", "concept_definition": "type",
    "delegate_declaration": "type", "package_object": "module", "given_definition": "impl",
    "file_scoped_namespace_declaration": "namespace",
}
_FUNCTION_KINDS: dict[str, str] = {
    "function_definition": "function", "function_declaration": "function", "function_item": "function",
    "function_signature_item": "function", "method_definition": "method", "method_declaration": "method",
    "method": "method", "singleton_method": "method", "constructor_declaration": "method",
    "init_declaration": "method", "protocol_function_declaration": "method",
    "abstract_method_signature": "method", "method_signature": "method", "method_elem": "method",
    "method_spec": "method", "function_signature": "function",
    "signature": "function", "function": "function", "macro_definition": "macro",
    "preproc_function_def": "macro", "preproc_def": "constant", "const_item": "constant",
    "static_item": "constant", "function_statement": "function", "class_statement": "class",
    "FnProto": "function", "VarDecl": "constant", "TestDecl": "test",
    # Members with a name of their own (C#, Kotlin, Swift): one line is a value ("constant": named,
    # never a chunk's label), more is a member with code (see _MEMBERS).
    "bind": "function",  # Haskell `name = ...` without arguments (a one-line one is a value)
    "property_declaration": "property", "event_declaration": "property", "indexer_declaration": "method",
    "operator_declaration": "method", "conversion_operator_declaration": "method",
    "deinit_declaration": "method", "subscript_declaration": "method",
}
# Swift declarations named by their keyword, which the grammar leaves unnamed (no identifier):
# `init(...)`, `deinit`, `subscript(...)` were no definitions and their chunks took the class's label.
_KEYWORD_NAMED = {"init_declaration": "init", "deinit_declaration": "deinit", "subscript_declaration": "subscript"}
# tree-sitter-yaml's scanner crashes the process (SIGSEGV, no exception) past about 255 nested
# block collections, by indentation or by compact `- - -` on one line: such a file is cut by lines.
MAX_YAML_NESTING = 128
_YAML_COMPACT = re.compile(r"(?:[-?][ \t]+)*")
_BARE_MACRO_LINE = re.compile(rb"^[ \t]*[A-Z][A-Z0-9]*_[A-Z0-9_]+[ \t]*(?=\r?$)", re.MULTILINE)
_CLASS_KEYWORDS = {"interface": "interface", "enum": "enum", "struct": "struct", "extension": "impl",
                   "protocol": "interface"}
_BINDS_FUNCTION = frozenset({"variable_declarator", "assignment_expression", "field_definition",
                             "public_field_definition", "pair"})
_FUNCTION_LIKE = frozenset({"function", "method", "macro"})
# Constructors not named after their class (Python, JavaScript/TypeScript, Swift, PHP, Ruby).
_CONSTRUCTOR_NAMES = frozenset({"__init__", "__new__", "constructor", "init", "__construct", "initialize"})
_HASKELL_TOP = frozenset({"declarations", "class_declarations", "instance_declarations"})
_MEMBERS = frozenset({"property_declaration", "event_declaration", "indexer_declaration", "operator_declaration",
                      "conversion_operator_declaration"})
# Where a property declares a member (or a module-level value), not a local of a function body.
_MEMBER_HOLDERS = frozenset({"class_body", "declaration_list", "enum_class_body", "protocol_body", "enum_body",
                             "source_file", "compilation_unit", "interface_body", "object_body"})
# Declarations of languages beyond the benchmark's whose grammar puts the name in a child, not a
# field: protobuf's `message User`, SQL's `CREATE TABLE users`, GraphQL's `type User`, CMake's
# `function(add_demo_test ...)`, a Make target, Fortran's `subroutine step` (named by its first
# statement), Julia's `function distance(a, b)`. Node type -> (kind, the child types down to the
# name), looked at only when _name_node finds none: a type the benchmark's grammars share
# (`function`, `module`, `function_definition`, `type_definition`) keeps the name it had there.
_NAMED_BY_CHILD: dict[str, tuple[str, tuple[str, ...]]] = {
    "message": ("struct", ("message_name",)), "enum": ("enum", ("enum_name",)),
    "service": ("interface", ("service_name",)), "rpc": ("method", ("rpc_name",)),
    "create_table": ("table", ("object_reference",)), "create_view": ("view", ("object_reference",)),
    "create_materialized_view": ("view", ("object_reference",)),
    "create_function": ("function", ("object_reference",)), "create_type": ("type", ("object_reference",)),
    "object_type_definition": ("type", ("name",)), "interface_type_definition": ("interface", ("name",)),
    "input_object_type_definition": ("type", ("name",)), "enum_type_definition": ("enum", ("name",)),
    "union_type_definition": ("type", ("name",)), "scalar_type_definition": ("type", ("name",)),
    "operation_definition": ("query", ("name",)), "fragment_definition": ("fragment", ("fragment_name", "name")),
    "function_def": ("function", ("function_command", "argument_list", "argument")),
    "macro_def": ("macro", ("macro_command", "argument_list", "argument")),
    "rule": ("rule", ("targets", "word")),
    "subroutine": ("function", ("subroutine_statement", "name")),
    "function": ("function", ("function_statement", "name")), "module": ("module", ("module_statement", "name")),
    "function_definition": ("function", ("signature", "call_expression", "identifier")),
    "struct_definition": ("struct", ("type_head", "identifier")),
    "type_definition": ("type", ("type_binding", "type_constructor")),  # OCaml
    "module_definition": ("module", ("module_binding", "module_name")),  # OCaml (Julia's has a name field)
}
# Definitions of other languages named by a field, as the tables above: Solidity, Objective-C, Perl.
_OTHER_KINDS: dict[str, str] = {
    "contract_declaration": "class", "library_declaration": "module", "modifier_definition": "function",
    "event_definition": "type", "class_implementation": "class", "class_interface": "class",
    "subroutine_declaration_statement": "function",
}
# (the benchmark's tables first and unchanged: `function`, `module`, ... keep their kinds there)
_KINDS = {**_SCOPE_KINDS, **_FUNCTION_KINDS, **_OTHER_KINDS,
          **{t: kind for t, (kind, _) in _NAMED_BY_CHILD.items() if t not in _SCOPE_KINDS and t not in _FUNCTION_KINDS}}


def _child_name(node):
    """The node naming a declaration of _NAMED_BY_CHILD, or None (another grammar's node of that type)."""
    found = node
    for child_type in _NAMED_BY_CHILD[node.type][1]:
        found = next((c for c in found.named_children if c.type == child_type), None)
        if found is None:
            return None
    return found


# Functions bound to a name: closures count as definitions of that name.
_EXTRA_PATTERNS = (
    "(variable_declarator name: (identifier) value: [(arrow_function) (function_expression)]) @def",
    "(let_declaration pattern: (identifier) value: (closure_expression)) @def",
    # class fields holding a function: `handle = (e) => {...}` (JavaScript), `static create = () => ...` (TypeScript)
    "(field_definition property: (property_identifier) value: [(arrow_function) (function_expression)]) @def",
    "(public_field_definition name: (property_identifier) value: [(arrow_function) (function_expression)]) @def",
    # a function expression with a name of its own: `export default isXhr && function xhrAdapter(config) {...}`
    "(function_expression name: (identifier)) @def",
    "(assignment left: (identifier) right: (lambda)) @def",
    # JavaScript methods assigned to a property: `res.sendFile = function (...)`, `Foo.prototype.x = ...`
    "(assignment_expression left: (member_expression property: (property_identifier))"
    " right: [(function_expression) (arrow_function)]) @def",
    # Lua: `M.setup = function (opts)`, `local helper = function (x)`
    "(assignment_statement (variable_list . name: (_) @name) (expression_list . value: (function_definition))) @def",
    # An object or table member holding a function, named by its key (as a method shorthand `c() {}`
    # is): `{ resolve: async (opts) => {...} }` (JavaScript/TypeScript), `{ define_preview = function
    # (self) ... end }` (Lua). Without it their code was labelled by the enclosing binding or module.
    "(pair key: (property_identifier) @name value: [(arrow_function) (function_expression)]) @def",
    "(field name: (identifier) @name value: (function_definition)) @def",
    # Lua: a module-level function handed through a wrapper, `M.get = memoize(function (x) ... end)`
    "(chunk (assignment_statement (variable_list . name: (_) @name)"
    " (expression_list . value: (function_call arguments: (arguments (function_definition))))) @def)",
    "(chunk (variable_declaration (assignment_statement (variable_list . name: (_) @name)"
    " (expression_list . value: (function_call arguments: (arguments (function_definition))))) @def))",
    # R: `compute_mean <- function(x) {...}` (or `=`): a function is named only by its binding
    "(binary_operator lhs: (identifier) @name rhs: (function_definition)) @def",
    # Elm's `add a b = ...` and Erlang's `add(A, B) -> ...` (named by their first clause)
    "(value_declaration functionDeclarationLeft: (function_declaration_left . (lower_case_identifier) @name)) @def",
    "(fun_decl . clause: (function_clause name: (atom) @name)) @def",
    '(call target: (identifier) @kw (#any-of? @kw "def" "defp" "defmacro" "defmacrop" "defguard"'
    ' "defmodule" "defprotocol" "defimpl" "defdelegate")) @def',
    # ExUnit's `test "name" do` and `describe "group" do`: labels of their blocks, as Zig's tests
    '(call target: (identifier) @kw (#any-of? @kw "test" "describe") (arguments . (string)) (do_block)) @def',
)
# Config files: a key holding a block of others is a section, labelled by its key path
# (`jobs.build`, `tool.pytest.ini_options`); only these grammars ask for them, and only the top
# two levels (a lock file's thousands of inner objects would double its chunking time).
_YAML_PAIR = "(block_mapping_pair key: (_) @key value: (block_node)) @def"
_JSON_PAIR = "(pair key: (string) @key value: [(object) (array)]) @def"
_SECTION_PATTERNS = {
    "yaml": (f"(document (block_node (block_mapping {_YAML_PAIR})))",
             f"(document (block_node (block_mapping (block_mapping_pair value: (block_node (block_mapping {_YAML_PAIR}))))))"),
    "toml": ("(table . [(bare_key) (dotted_key) (quoted_key)] @key) @def",
             "(table_array_element . [(bare_key) (dotted_key) (quoted_key)] @key) @def"),
    "json": (f"(document (object {_JSON_PAIR}))", f"(document (object (pair value: (object {_JSON_PAIR}))))"),
    # HCL/Terraform: a top-level block, `resource "aws_s3_bucket" "logs" {` (labelled in _definition)
    "hcl": ("(config_file (body (block . (identifier) @key) @def))",),
    "terraform": ("(config_file (body (block . (identifier) @key) @def))",),
}
_CLOSURE_TYPES = frozenset({"variable_declarator", "let_declaration", "assignment", "assignment_expression",
                            "field_definition", "public_field_definition", "function_expression"})
# `defstruct` is not among them: a struct is named by its module (`defstruct id: nil` names fields).
_ELIXIR_KINDS = {"defmodule": "module", "defprotocol": "interface", "defimpl": "impl"}
# Module-level bindings define a name too (`MAX = 3`, `const x = ...`, `var V = ...`).
_BINDINGS = frozenset({
    "expression_statement", "assignment", "lexical_declaration", "variable_declaration", "const_declaration",
    "var_declaration", "property_declaration", "val_definition", "var_definition", "const_declaration",
})
_BINDING_NAMES = frozenset({"variable_declarator", "const_spec", "var_spec", "assignment", "variable_declaration"})
_IDENTIFIERS = frozenset({
    "identifier", "type_identifier", "simple_identifier", "constant", "name", "property_identifier",
    "field_identifier", "namespace_identifier", "variable", "word", "alias", "scope_resolution",
    "qualified_identifier", "scoped_identifier", "scoped_type_identifier", "destructor_name", "operator_name",
    "dot_index_expression", "method_index_expression", "IDENTIFIER", "function_name", "simple_name",
})
_SIGNATURES = frozenset({"function_signature", "method_signature"})
_UNWRAP = frozenset({"export_statement", "decorated_definition", "template_declaration", "export_declaration"})
# Wrappers of one definition only: Go's `type X struct {...}` (a group `type (...)` holds several).
_UNWRAP_ONE = frozenset({"type_declaration"})


def _wraps(node) -> bool:
    """Whether node wraps a definition (an export, decorators, Go's `type` keyword) whose leading
    lines stay with it."""
    return node.type in _UNWRAP or (node.type in _UNWRAP_ONE and node.named_child_count == 1)


# Text, not structure: too big, such a node is cut by lines. Split into its children (quotes, content,
# interpolations) a docstring's opening quotes went with the class header and its text to the next chunk.
_TEXT_NODES = frozenset({"string", "string_literal", "raw_string_literal", "template_string",
                         "interpreted_string_literal", "heredoc_body", "comment", "block_comment"})
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_LAST_WORD = re.compile(r"[A-Za-z_$][\w$]*[?!]?(?=[^\w$]*$)")
# A binding whose value is an import (`const x = @import("x.zig")`, `const fs = require("fs")`,
# `local util = require "util"`) names another module; it defines nothing a query could be after.
_IMPORT_ALIAS = re.compile(r"[^=]*=\s*(?:@import|require|import)\s*[(\"']")
_ZIG_CONTAINER = re.compile(r"[^=]*=\s*(?:extern\s+|packed\s+)?(?:struct|enum|union|opaque)\b")
_CLOSING = re.compile(r"[\s)\]};,]*(?:(?:end|fi|done|esac|endif|end\w*)[\s)\]};,.]*)*$")
_COMMENT_LINE = re.compile(r"\s*(//|/\*|\*|--|;;|#(?:[ \t!#\[]|$)|@\w|\(\*|{-|\"\"\"|''')")


# Elixir's documentation and annotation attributes precede the definition they describe, as
# decorators do (`@moduledoc` describes the enclosing module, and other attributes are values).
_ELIXIR_LEADS = frozenset({"doc", "typedoc", "spec", "impl", "deprecated", "tag"})
def _is_prefix(node) -> bool:
    """Comments, decorators, attributes and annotations: they belong to what follows them."""
    kind = node.type
    if kind == "pragma":
        # `{-# INLINE f #-}` written after `f` is f's: it led the next definition.
        before = node.prev_named_sibling
        return not (before is not None and before.type in ("function", "bind", "signature")
                    and (name := before.child_by_field_name("name")) is not None
                    and _text(name) in _text(node).replace("#-}", " ").split())
    if "comment" in kind or kind in ("decorator", "attribute_item", "annotation", "marker_annotation",
                                     "attribute", "haddock"):
        return True
    if kind in ("type_annotation", "spec") and node.parent is not None and node.parent.type in ("file", "source_file"):
        return True  # a top-level Elm type annotation, an Erlang `-spec`: the signature of what follows
    if kind == "signature" and node.parent is not None and node.parent.type in _HASKELL_TOP:
        # Haskell's `decode :: ... -> Maybe a` is the first line of the `decode` that follows it (a
        # signature with no equation after it, in a class, declares a method: it stays what it is).
        after = node.next_named_sibling
        return (after is not None and after.type in ("function", "bind") and node.named_child_count > 0
                and after.named_child_count > 0 and _text(node.named_children[0]) == _text(after.named_children[0]))
    if kind == "unary_operator" and node.child_count == 2 and node.children[0].type == "@":
        target = node.children[1]
        name = target.children[0] if target.type == "call" and target.child_count else target
        return name.type == "identifier" and _text(name) in _ELIXIR_LEADS
    return False


class Definition:
    __slots__ = ("name", "display", "kind", "start", "end", "name_row", "parent", "path", "key", "bytes", "depth",
                 "statement", "declaration", "partial", "instance")

    def __init__(self, name, display, kind, start, end, name_row, node_bytes=(0, 0)):
        self.name, self.display, self.kind = name, display, kind
        self.start, self.end, self.name_row = start, end, name_row
        self.parent: Definition | None = None
        self.path = display
        self.depth = 0  # enclosing definitions
        self.key = (0, 0)  # the definition node's byte range (a binding's stays (0, 0))
        self.bytes = node_bytes  # the byte range of the node that holds it, bindings included
        self.statement = False  # a one-line declaration that scopes what follows it (`namespace X;`)
        self.declaration = False  # an overload's declaration: its name's implementation follows it
        self.partial = False  # C#'s `partial class X`: one of X's parts
        self.instance = False  # Haskell's `instance C T`, Rust's `impl T`: named by what they do not define


# -- the extra, loaded lazily --------------------------------------------------------------------

# The files whose trees the chunker mishandled in this process (the first 100; they fell back to
# lines): the test suite fails on any it did not cause on purpose, as the fallback would hide the bug.
MISHANDLED: list[str] = []

_PARSERS: dict[str, object] = {}
_QUERIES: dict[str, object] = {}
# One parse at a time in a process: a grammar's parser is shared, and its read callback lets another
# thread in mid-parse (a host's threads chunking at once crashed the process in tree-sitter).
_PARSING = threading.RLock()


def _fresh_parse_lock() -> None:
    global _PARSING
    _PARSING = threading.RLock()  # in a forked worker: the parent's threads that could hold it are gone


os.register_at_fork(after_in_child=_fresh_parse_lock)


def _parser(grammar: str):
    parser = _PARSERS.get(grammar)
    if parser is None:
        from tree_sitter_language_pack import get_parser

        parser = _PARSERS[grammar] = get_parser(grammar)
    return parser


# What the read callback hands over. Small: a node's `.text` in a tree parsed from a callback calls it
# again and copies a whole slice for every node, however short (64 KB slices: 40 us a node, 7 s for
# the 136,000 names of a generated 1 MB file of constants; 1 KB: 1.4 s, parses no slower).
READ_SLICE = 1 << 10


class _Allowance:
    """The CPU time one file's parses may still take (PARSE_SECONDS from its first), checked from
    tree-sitter's progress callbacks. Only the parser's: QueryCursor.matches with a progress
    callback crashes the process (py-tree-sitter 0.26.1, segmentation fault on a 150-line file)."""

    def __init__(self) -> None:
        self.deadline = time.thread_time() + PARSE_SECONDS

    def exceeded(self, *_state) -> bool:
        return time.thread_time() > self.deadline


def _parse(grammar: str, source: bytes, allowance: _Allowance | None = None):
    """The tree of `source`, or None when the parser gave up or ran past its allowance.

    Parsing from a read callback is what lets tree-sitter report progress (it ignores the callback
    for a byte string); it calls it every few hundred bytes, so the clock is read cheaply."""
    parser = _parser(grammar)
    allowance = allowance or _Allowance()

    def read(offset: int, _point) -> bytes:
        return source[offset : offset + READ_SLICE]

    with _PARSING:  # the parse and any reset of the shared parser
        try:
            tree = parser.parse(read, progress_callback=allowance.exceeded)
        except ValueError:  # what a stopped parse raises (tree-sitter 0.26; older ones returned None)
            tree = None
        except BaseException as exc:
            # Ctrl-C (or SIGTERM's Terminated) in a callback: as it is, or as a SystemError caused by
            # it. Either way the parse stopped half done, and the next one (the next file's, in a
            # long-lived process) resumed it unless reset. Stop as interrupted (exit 130/143).
            parser.reset()
            if isinstance(exc, SystemError) and exc.__cause__ is not None:
                raise exc.__cause__ from None
            raise
        if tree is None:
            parser.reset()  # else its next parse (another file) resumes this one
    return tree


def _query(grammar: str):
    """One query capturing every definition node the grammar has (built once per grammar)."""
    if grammar in _QUERIES:
        return _QUERIES[grammar]
    from tree_sitter import Query, QueryError
    from tree_sitter_language_pack import get_language

    language = get_language(grammar)
    types = [t for t in _KINDS if language.id_for_node_kind(t, True)]
    patterns = []
    if types:
        patterns.append("[" + " ".join(f"({t})" for t in types) + "] @def")
    for pattern in _EXTRA_PATTERNS + _SECTION_PATTERNS.get(grammar, ()):
        try:
            Query(language, pattern)
        except (QueryError, ValueError, SyntaxError, NameError):
            continue  # the grammar lacks one of its node types or fields
        patterns.append(pattern)
    query = None
    # Without a definition node type of its own (Clojure, F#, YAML, ...) the tree says nothing
    # about definitions: those files keep the patterns (`definitions` None).
    if types or any("@kw" in p or "@key" in p for p in patterns[1 if types else 0 :]):
        query = Query(language, "\n".join(patterns))
    _QUERIES[grammar] = query
    return query


# Grammars whose definition nodes the tables above were checked against, on real code: the 19
# languages of the code-search benchmark. Another grammar may share a few node types with them and
# miss its language's own (Julia's structs, OCaml's `let`, Solidity's modifiers): its files keep the
# definition patterns the lexical index uses, and take only their labels from the tree.
DEFINITIONS_CHECKED = frozenset({
    "python", "javascript", "typescript", "tsx", "go", "java", "kotlin", "scala", "swift", "c", "cpp",
    "csharp", "rust", "ruby", "php", "elixir", "haskell", "lua", "zig", "bash",
})


def knows_definitions(grammar: str) -> bool:
    """Whether the tree, rather than the patterns, says what a file of this grammar defines."""
    return grammar in DEFINITIONS_CHECKED and _query(grammar) is not None


def available() -> bool:
    from ..extras import missing_modules

    return not missing_modules("treesitter")


# -- definitions ---------------------------------------------------------------------------------


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _end_row(node) -> int:
    """The row of the node's last token. Some grammars end a node where the next one begins:
    Scala's indentation-delimited body runs to the next line's indentation (a `def` without braces
    took the next `def`'s first line), others to the next line's start."""
    while node.child_count:
        i = node.child_count - 1
        last = node.child(i)
        while i > 0 and last.start_byte == last.end_byte:  # a zero-width token (an outdent, a MISSING one)
            i -= 1
            last = node.child(i)
        node = last
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _name_node(node):
    """The node naming a definition: its `name` field, a C declarator's identifier, or its first
    identifier child (Kotlin, Swift)."""
    if node.type in _KEYWORD_NAMED:  # (a subscript's `name` field holds its return type)
        return next((c for c in node.children if c.type == _KEYWORD_NAMED[node.type]), None)
    found = node.child_by_field_name("name")
    if found is not None and found.is_named:  # R's `function` keyword sits in that field
        return found
    declarator = node.child_by_field_name("declarator")
    for _ in range(8):
        if declarator is None:
            break
        if declarator.type in _IDENTIFIERS:
            return declarator
        inner = declarator.child_by_field_name("declarator") or declarator.child_by_field_name("name")
        if inner is None and declarator.type == "reference_declarator" and declarator.named_child_count:
            inner = declarator.named_children[-1]  # C++ `T& name()`: no field names what it declares
        if inner is None and declarator.type == "parenthesized_declarator" and declarator.named_child_count:
            inner = declarator.named_children[0]  # C's `typedef void (*dictScanFunction)(void *, ...)`
        if inner is None:
            break
        declarator = inner
    for field_name in ("pattern", "left"):
        found = node.child_by_field_name(field_name)
        if found is not None:
            return found
    if node.type in ("function", "signature", "data_type", "class", "instance"):
        return None  # Haskell's type-level nodes of these names have no name field
    for child in node.named_children:
        if child.type in _IDENTIFIERS:
            return child
    return None


def _handed_on(node) -> list:
    """The comments a definition ends with that document the definition after it: Scala's grammar
    puts the next method's doc comment inside a brace-less body (`def x: T =` then an indented
    block). Only comments indented no deeper than the definition itself, with code before them
    and a definition right after them; [] when there are none."""
    following = node.next_named_sibling
    if following is None or (following.type not in _KINDS and not _wraps(following)):
        return []
    inner = node
    for _ in range(MAX_DEPTH):
        kids = inner.children
        i = len(kids)
        while i > 0 and _is_prefix(kids[i - 1]):
            i -= 1
        if i < len(kids):
            first = kids[i]
            if i > 0 and first.start_point[0] > node.start_point[0] and first.start_point[1] <= node.start_point[1]:
                return list(kids[i:])
            return []
        if not kids or kids[-1].type in _TEXT_NODES:
            return []
        inner = kids[-1]
    return []


def _row_before(node, stop: int) -> int:
    """The last row of the node's text before byte `stop` (a row a handed-on comment starts)."""
    row = node.start_point[0]
    for child in node.children:
        if child.start_byte >= stop:
            break
        row = max(row, _row_before(child, stop) if child.end_byte > stop else _end_row(child))
    return row


def _binds_import(node) -> bool:
    return _IMPORT_ALIAS.match(_text(node)[:300]) is not None


def _last_word(text: str) -> str:
    """The name of a type as written, its parameters dropped: `Stack<T>`, Go's `Stack[T]`."""
    head = text.split("(", 1)[0]
    if "::" in head and "<" in head:
        # C++'s `Box<T>::push`, `Map<K, std::vector<V>>::find`: its template arguments dropped, not
        # all after them (the out-of-class member defined its class's name)
        for _ in range(8):
            inner = _TEMPLATE_ARGS.sub("", head)
            if inner == head:
                break
            head = inner
    m = _LAST_WORD.search(head.split("<", 1)[0].split("[", 1)[0])
    return m.group(0) if m else ""


def _definition(node, captures) -> Definition | None:
    node_type = node.type
    key = captures.get("key")
    if key:  # a config section
        display = _text(key[0]).strip().strip("\"'")
        name = display.rsplit(".", 1)[-1]
        if node.type == "block":  # HCL: the block type and its labels, `resource aws_s3_bucket logs`
            labels = [_text(c).strip("\"") for c in node.named_children[1:] if c.type in ("string_lit", "identifier")]
            display = " ".join([display, *labels])
            name = labels[-1] if labels else display
        if not display or "\n" in display or len(display) > 120:
            return None
        return Definition(name, display, "section", node.start_point[0], _end_row(node),
                          key[0].start_point[0], (node.start_byte, node.end_byte))
    kw = captures.get("kw")
    if kw:  # an Elixir `def`/`defmodule` call: the name is its first argument
        keyword = _text(kw[0])
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        if args is None or not args.named_children:
            return None
        first = args.named_children[0]
        if keyword in ("test", "describe"):  # labels, no identifier they define
            display = f"{keyword} {_text(first)}"
            if "\n" in display or len(display) > 120:
                display = keyword
            return Definition(display, display, "test", node.start_point[0], _end_row(node), node.start_point[0],
                              (node.start_byte, node.end_byte))
        if first.type == "call":
            first = first.child_by_field_name("target") or first
        elif first.type == "binary_operator":  # `def a when guard`
            first = first.child_by_field_name("left") or first
            if first.type == "call":
                first = first.child_by_field_name("target") or first
        display = _text(first)
        name = _last_word(display) if keyword in ("defmodule", "defprotocol", "defimpl") else display
        if keyword == "defimpl":  # `defimpl String.Chars, for: Bank.Account`, as Rust's impls read
            target = next((_text(pair.named_children[-1]) for pair in args.named_children[1:2]
                           for pair in pair.named_children if pair.type == "pair" and pair.named_child_count
                           and _text(pair.named_children[0]).strip().startswith("for")), "")
            display = f"impl {display} for {target}" if target else f"impl {display}"
        if not name or "\n" in display or len(display) > 120:
            return None
        kind = _ELIXIR_KINDS.get(keyword, "function")
        return Definition(name, display, kind, node.start_point[0], _end_row(node), first.start_point[0])
    if node_type == "impl_item":
        target = node.child_by_field_name("type")
        trait = node.child_by_field_name("trait")
        if target is None:
            return None
        name = _last_word(_text(target))
        display = f"impl {_text(trait)} for {_text(target)}" if trait is not None else f"impl {_text(target)}"
        d = Definition(name, display, "impl", node.start_point[0], _end_row(node), target.start_point[0])
        d.instance = True  # see _EXTENDS
        return d
    if node_type == "instance":  # Haskell `instance Show T`
        cls = node.child_by_field_name("name")
        if cls is None:
            return None
        # `instance (FromJSON a, FromJSON b) => FromJSON (a, b)`: the class and the type, not the
        # context (its first words named neither, and cut there, its brackets did not close).
        head = " ".join(_text(node).split("where", 1)[0].split())
        if "=>" in head:
            head = "instance " + head.rsplit("=>", 1)[1].strip()
        words = head.split()
        display = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
        d = Definition(_text(cls), display, "impl", node.start_point[0], _end_row(node), cls.start_point[0])
        d.instance = True
        return d
    if node_type.endswith("_specifier") and node.child_by_field_name("body") is None:
        return None  # C's `struct buffer *buf` names a type, it does not define one
    span_node = node
    if node_type == "VarDecl" and (node.parent is None or node.parent.type != "Decl"):
        return None  # a Zig local, not a declaration of its container
    if node_type in ("FnProto", "VarDecl") and node.parent is not None and node.parent.type == "Decl":
        span_node = node.parent  # Zig: the declaration holds the prototype and the body
        if node_type == "VarDecl" and _ZIG_CONTAINER.match(_text(node)[:300]):
            node_type = "struct_item"
    if node_type == "function_declaration" and node.parent is not None and node.parent.type == "function_definition":
        span_node = node.parent  # Vim: the declaration line is the head of a definition holding the body
    if node_type in _MEMBERS:
        return _member(node)
    if node_type == "function_expression" and node.parent is not None and node.parent.type in _BINDS_FUNCTION:
        return None  # `res.download = function download()`: the binding names it (and is captured)
    if node_type == "TestDecl":  # Zig `test "resolve" {`: a label for its chunk, no identifier it defines
        title = next((c for c in node.named_children if "STRINGLITERAL" in c.type or c.type == "IDENTIFIER"), None)
        display = f"test {_text(title)}" if title is not None else "test"
        if "\n" in display or len(display) > 120:
            display = "test"
        return Definition(display, display, "test", node.start_point[0], _end_row(node), node.start_point[0],
                          (node.start_byte, node.end_byte))
    if node_type == "function_definition":
        test = _macro_test(node)
        if test is not None:
            return test
    if node_type in ("bind", "signature") and (node.parent is None or node.parent.type not in _HASKELL_TOP):
        return None  # a local binding, or `(x :: Double)` annotating a pattern
    if node_type == "bind":
        name_node = node.child_by_field_name("name")
        if name_node is None or name_node.type != "variable":
            return None  # `(a, b) = ...` binds a pattern, not a name
        if _end_row(node) == node.start_point[0]:  # `limit = 3`: a value
            return Definition(_text(name_node), _text(name_node), "constant", node.start_point[0],
                              node.start_point[0], name_node.start_point[0], (node.start_byte, node.end_byte))
    named = captures.get("name")  # a pattern that says which node names the function (Lua)
    if named or node_type in _CLOSURE_TYPES:
        name_node = named[0] if named else node.child_by_field_name("name") or \
            node.child_by_field_name("pattern") or node.child_by_field_name("left") or \
            node.child_by_field_name("property")
        kind = "function"
    else:
        name_node = _name_node(node)
        kind = _KINDS.get(node_type, "")
        if name_node is None and node_type in _NAMED_BY_CHILD:
            name_node = _child_name(node)
            if node_type == "rule" and name_node is not None and _text(name_node).startswith("."):
                return None  # `.PHONY:`, `.SUFFIXES:`: directives to make, not targets
    if name_node is None or not kind:
        return None
    if node_type == "class_declaration":  # Kotlin and Swift say what it is with a keyword
        keyword = next((c.type for c in node.children[:4] if not c.is_named and c.type in _CLASS_KEYWORDS), "")
        kind = _CLASS_KEYWORDS.get(keyword, kind)
    if kind == "constant" and _binds_import(span_node):
        return None
    display = _text(name_node).strip()
    if "\n" in display or len(display) > 120:
        return None
    # A shell or PowerShell function's name is all of it (`_bash-it-component-help`, `git::status`,
    # `Remove-ExpiredBackup`), as the definition patterns read it.
    name = _last_word(display) if name_node.type not in ("identifier", "type_identifier", "simple_identifier",
                                                         "constant", "name", "variable", "word",
                                                         "function_name") else display
    if name in ("operator", "operator!"):
        # C++'s `operator==`: the symbol is the name (`operator` alone named every operator of a
        # class, and `operator!=` came out as `operator!`); a conversion (`operator bool`) stays `operator`.
        name = operator_name(display) or name
    if not name:
        return None
    if node_type in ("method_declaration", "function_declaration"):
        # Go: `func (s *Server) Serve()` is Server.Serve; Kotlin: `fun Conn.describe()` is Conn.describe
        receiver = node.child_by_field_name("receiver")
        if receiver is not None:
            owner = _last_word(_text(receiver).replace("*", " ").strip("() ")).rstrip("?")  # Kotlin `String?`
            if owner:
                display = f"{owner}.{name}"
    start = span_node.start_point[0]
    parent = span_node.parent
    if parent is not None and _wraps(parent):  # decorators, `export`, `template<...>`
        start = parent.start_point[0]
    last = span_node
    if node_type in _SIGNATURES and last.next_named_sibling is not None \
            and last.next_named_sibling.type == "function_body":
        last = last.next_named_sibling  # Dart: the body is the signature's sibling, not its child
    found = Definition(name, display if display != name else name, kind, start, _end_row(last),
                       name_node.start_point[0], (span_node.start_byte, last.end_byte))
    found.declaration = _overload(span_node, parent, name) or _trait_binding(node)
    found.instance = kind == "impl" and node_type in _EXTENDS
    if node_type in _PARTIAL_TYPES and any(c.type == "modifier" and _text(c) == "partial" for c in node.children):
        found.partial = True  # see _continuations
    return found


_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _macro_test(node) -> Definition | None:
    """A C or C++ block a macro defines (GoogleTest's `TEST(Uint128, AliasTests) { ... }`, its
    TEST_F and TYPED_TEST, benchmark and fuzzing macros): no return type, an upper-case name,
    arguments that are bare names. It is named by them, `Uint128.AliasTests` (every such block was
    `TEST`, so a file's tests could not be told apart and `TEST` was a definition in each)."""
    declarator = node.child_by_field_name("declarator")
    if node.child_by_field_name("type") is not None or declarator is None or declarator.type != "function_declarator":
        return None
    macro, params = declarator.child_by_field_name("declarator"), declarator.child_by_field_name("parameters")
    if macro is None or params is None or macro.type != "identifier" or not _MACRO_NAME.fullmatch(_text(macro)):
        return None
    names = []
    for param in params.named_children:
        kind = param.child_by_field_name("type")
        if param.type != "parameter_declaration" or param.child_by_field_name("declarator") is not None \
                or kind is None or kind.type not in ("type_identifier", "identifier"):
            return None
        names.append(_text(kind))
    if not names:
        return None
    display = ".".join(names)
    return Definition(names[-1], display, "test", node.start_point[0], _end_row(node), macro.start_point[0],
                      (node.start_byte, node.end_byte))


# A C# partial type in a file named as one part of the type (`JsonTextReader.Async.cs` beside
# `JsonTextReader.cs`) continues a type declared elsewhere: its first chunk (usings and a first
# member) took the type's definition term, and beat the class itself. Swift's extensions were
# treated alike and measured no better (an agent's error message lost the extension holding it).
_PARTIAL_TYPES = frozenset({"class_declaration", "struct_declaration", "interface_declaration", "record_declaration"})


def _continuations(defs: list[Definition], path: str) -> None:
    """Mark the partial types of a file named `Type.Part.cs` as declarations of that type."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    for d in defs:
        if d.partial and (d.parent is None or d.parent.kind == "namespace") and stem.startswith(d.name + "."):
            d.declaration = True


# A Rust `impl X`, a Swift or Kotlin `extension X`: named by the type they add to, which they do not
# define (as a Haskell instance does not define its class). Counted as its definitions, they
# outranked the type for its bare name: alamofire's `DataResponse` (its extension first, the struct
# out of the top 10), serde's `RenameRule`; Rust's names found their definition first 73% of the time.
_EXTENDS = frozenset({"class_declaration", "extension_declaration"})


def _trait_binding(node) -> bool:
    """A Rust `type Deserializer = Self;` in an `impl Trait for T`: it binds the trait's associated
    type, it defines no type of that name (serde's `Deserializer` found such an impl before the trait)."""
    holder = node.parent
    impl = holder.parent if holder is not None and holder.type == "declaration_list" else None
    return node.type == "type_item" and impl is not None and impl.type == "impl_item" \
        and impl.child_by_field_name("trait") is not None


_OVERLOAD_DECORATOR = re.compile(r"@\s*(?:[\w.]+\.)?overload\s*$")
_IMPLEMENTATIONS = frozenset({"function_declaration", "method_definition", "function_definition"})


def _overload(node, wrapper, name: str) -> bool:
    """Whether a definition only declares one of its name's overloads: a Python function under
    `@overload` (its implementation follows, or is the module a stub describes), a TypeScript
    signature followed by the function or method of that name. Such a declaration took the name's
    definition term and outranked the implementation (an interface's or a `.d.ts` file's
    signatures, with no implementation after them, still define)."""
    if wrapper is not None and wrapper.type == "decorated_definition":
        return any(c.type == "decorator" and _OVERLOAD_DECORATOR.search(_text(c)) for c in wrapper.children)
    if node.type not in _SIGNATURES:
        return False
    outer = wrapper if wrapper is not None and _wraps(wrapper) else node
    following = outer.next_named_sibling
    while following is not None:
        inner = following.named_children[-1] if _wraps(following) and following.named_child_count else following
        if inner.type in _IMPLEMENTATIONS:
            named = inner.child_by_field_name("name")
            return named is not None and _text(named) == name
        if inner.type not in _SIGNATURES and following.type != "comment":
            return False
        following = following.next_named_sibling
    return False


def _member(node) -> Definition | None:
    """A property, event, indexer or operator: `Name`, `this[]`, `operator +`, `explicit operator int`."""
    node_type = node.type
    if node.parent is None or node.parent.type not in _MEMBER_HOLDERS:
        return None  # a Swift `let` inside a function is a local
    name_node = node.child_by_field_name("name")
    if name_node is None and node_type == "property_declaration":  # Kotlin: `val timeout: Int`
        declaration = next((c for c in node.named_children if c.type == "variable_declaration"), None)
        name_node = next((c for c in declaration.named_children if c.type in _IDENTIFIERS), None) \
            if declaration is not None else None
    if node_type == "indexer_declaration":
        name, display, row = "this", "this[]", node.start_point[0]
    elif node_type in ("operator_declaration", "conversion_operator_declaration"):
        head = _text(node).split("(", 1)[0]
        words = head.split("operator", 1)
        target = " ".join(words[1].split()) if len(words) == 2 else ""
        if not target or len(target) > 60:
            return None
        kind_word = next((w for w in ("implicit", "explicit") if w in words[0].split()), "")
        # `operator ==` is named `operator==`, as C++'s; a conversion (`operator int`) `operator`.
        name = operator_name(f"operator {target}") or "operator"
        display, row = f"{kind_word} operator {target}".strip(), node.start_point[0]
    elif name_node is not None:
        name = display = _text(name_node).strip()
        row = name_node.start_point[0]
        if not name or "\n" in name or len(name) > 120 or not _LAST_WORD.fullmatch(name):
            return None
    else:
        return None
    kind = _KINDS[node_type]
    if kind == "property" and _end_row(node) == node.start_point[0]:
        kind = "constant"  # `public string Name { get; set; }`: a value, not code
    return Definition(name, display, kind, node.start_point[0], _end_row(node), row,
                      (node.start_byte, node.end_byte))


def _bindings(root) -> list[Definition]:
    """Module-level bindings (`MAX = 3`, `export const x = ...`, Go `var`/`const`)."""
    out = []
    for child in root.named_children:
        while _wraps(child) or (child.type == "expression_statement" and child.named_child_count == 1):
            inner = child.named_children[-1] if child.named_child_count else None
            if inner is None or inner.type == child.type:
                break
            child = inner
        if child.type not in _BINDINGS or _binds_import(child):
            continue
        holders = [child] if child.type == "assignment" else [
            c for c in child.named_children if c.type in _BINDING_NAMES]
        if child.type == "property_declaration":  # Kotlin/Swift `val x = ...`
            holders = [child]
        for holder in holders:
            target = holder.child_by_field_name("name") or holder.child_by_field_name("left") or \
                holder.child_by_field_name("pattern")
            if target is None:
                target = next((c for c in holder.named_children if c.type in _IDENTIFIERS), None)
                if target is None:
                    nested = next((c for c in holder.named_children if c.type == "variable_declaration"), None)
                    target = next((c for c in nested.named_children if c.type in _IDENTIFIERS), None) if nested else None
            if target is None or target.type not in _IDENTIFIERS:
                continue
            name = _last_word(_text(target))
            if name:
                row = target.start_point[0]
                out.append(Definition(name, name, "constant", child.start_point[0], _end_row(child), row,
                                      (child.start_byte, child.end_byte)))
    return out


def _to_next_namespace(d: Definition, node, root) -> None:
    """`namespace App.Http;` (C#'s file-scoped namespace, PHP's usual form) is one line in the
    tree, yet it holds everything after it up to the next one: so it does in the scope paths."""
    if node.parent != root:
        return
    following = node.next_named_sibling
    while following is not None and following.type != node.type:
        following = following.next_named_sibling
    end_byte = following.start_byte if following is not None else root.end_byte
    d.end = max(d.end, (following.start_point[0] - 1) if following is not None else _end_row(root))
    d.bytes = (node.start_byte, end_byte)
    d.statement = True


# Reserved words no C or C++ function can be named: an `else if (...) {` the preprocessor cut
# from its function (`#ifdef` around one branch) parses as a function definition named `if` (curl's
# multi.c), a `switch` in a template as one named `switch` (nlohmann-json). Elsewhere some are
# names (PHP's `BladeCompiler::if`, Kotlin's `Flow.catch`).
_C_STATEMENTS = frozenset({"if", "else", "for", "while", "do", "switch", "case", "return", "sizeof", "goto"})
_STATEMENT_WORDS = {"c": _C_STATEMENTS, "cpp": _C_STATEMENTS}


# A Rust macro invoked where items go (`cfg_rt! {`, `declare_error_trait!(`): the grammar reads its
# body as opaque tokens, so the functions a crate gates behind `cfg_*!` macros (tokio: 313 such
# blocks) were defined nowhere. A body holding an item's first line is parsed again as items.
_ITEM_MACRO = re.compile(rb"^[ \t]*([A-Za-z_][\w:]*)![ \t]*[{(\[]", re.MULTILINE)
_RUST_ITEM = re.compile(
    rb"^[ \t]*(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:async|const|unsafe|extern)[ \t]+)*(?:fn|struct|enum|impl|trait|mod|type)\b",
    re.MULTILINE)


MACRO_DEPTH = 3  # macros in macros' bodies read as items


def macro_items(tree, source: bytes) -> bytes | None:
    """Rust: the source with all but the bodies of item macros blanked (line ends and byte offsets
    kept, the macros' own heads and delimiters blanked too, so nested ones read as items), to be
    parsed again for the definitions inside; None when no macro body holds an item."""
    root = tree.root_node
    bodies = []
    for m in _ITEM_MACRO.finditer(source):
        if m.group(1) == b"macro_rules":
            continue  # its rules are patterns with `$` holes, not items
        node = root.descendant_for_byte_range(m.start(1), m.end(1))
        while node is not None and node.type != "macro_invocation" and node.start_byte >= m.start(1) - 1:
            node = node.parent
        if node is None or node.type != "macro_invocation" or node.start_byte < m.start(1) - 1:
            continue
        body = node.named_children[-1] if node.named_child_count else None
        if body is None or body.type != "token_tree" or body.end_point[0] == body.start_point[0]:
            continue
        if _RUST_ITEM.search(source, body.start_byte + 1, body.end_byte - 1):
            bodies.append((node.start_byte, body.start_byte + 1, body.end_byte - 1, body.end_byte))
    if not bodies:
        return None
    out = bytearray(_blank(source))
    for _head, first, last, _end in bodies:
        out[first:last] = source[first:last]
    for head, first, last, end in bodies:  # a nested macro's head and delimiters were copied with its parent's body
        out[head:first] = _blank(source[head:first])
        out[last:end] = _blank(source[last:end])
    return bytes(out)


def _blank(data: bytes) -> bytes:
    """Spaces for every byte but the line ends: the same rows and byte offsets, nothing to parse."""
    return re.sub(rb"[^\n]", b" ", data)


def definitions(tree, grammar: str, inner=()) -> list[Definition]:
    """Every definition of the tree, outermost first, each linked to its enclosing one; `inner`,
    trees of the same rows and bytes holding what the first one could not read (macro_items), add
    theirs."""
    query = _query(grammar)
    found: list[tuple] = []
    seen = set()
    if query is not None:
        from tree_sitter import QueryCursor

        cursor = QueryCursor(query)
        # Each definition met costs a walk from the root (tree-sitter finds a node's parent and next
        # sibling from above): 16,000 nested functions took 50 s. Real code defines no deeper than
        # this (of 27,627 files of the semble checkouts none did); deeper ones are cut by lines anyway.
        cursor.set_max_start_depth(MAX_DEFINITION_DEPTH)
        roots = [tree.root_node] + [t.root_node for t in inner]
        for _pattern, captures in (match for root in roots for match in cursor.matches(root)):
            for node in captures.get("def", ()):
                key = (node.start_byte, node.end_byte, node.type)
                if key in seen or node in roots:
                    continue
                seen.add(key)
                d = _definition(node, captures)
                if d is not None and d.name in _STATEMENT_WORDS.get(grammar, ()):
                    d = None  # see _STATEMENT_WORDS
                if d is not None:
                    d.key = (node.start_byte, node.end_byte)
                    if node.type in ("FnProto", "VarDecl") and node.parent is not None and node.parent.type == "Decl":
                        d.key = (node.parent.start_byte, node.parent.end_byte)  # Zig: the splitter meets the Decl
                    if d.bytes == (0, 0):
                        d.bytes = d.key
                    if d.kind == "namespace" and node.child_by_field_name("body") is None:
                        _to_next_namespace(d, node, tree.root_node)
                    handed = _handed_on(node) if d.end > d.start else []
                    if handed:  # the next definition's documentation is not this one's
                        d.end = max(d.start, _row_before(node, handed[0].start_byte))
                        d.bytes = (d.bytes[0], min(d.bytes[1], handed[0].start_byte))
                    found.append((node.start_byte, -node.end_byte, d))
    defs = [d for _, _, d in sorted(found, key=lambda e: (e[0], e[1]))]
    bound = {d.name for d in defs}
    defs.extend(b for b in _bindings(tree.root_node) if b.name not in bound)
    defs.sort(key=lambda d: (d.start, -d.end, d.bytes[0], -d.bytes[1]))
    # Nesting: a stack of the definitions still open. A parent holds its child's lines and bytes:
    # lines alone would nest the thousands of declarations of a minified line in one another.
    stack: list[Definition] = []
    for d in defs:
        while stack and not (stack[-1].start <= d.start and d.end <= stack[-1].end and stack[-1] is not d
                             and stack[-1].bytes[0] <= d.bytes[0] and d.bytes[1] <= stack[-1].bytes[1]):
            stack.pop()
        if stack:
            d.parent = stack[-1]
            d.depth = stack[-1].depth + 1
            # The breadcrumb names the innermost MAX_SCOPE levels: bounded however deep the code nests.
            d.path = (f"{stack[-1].path}.{d.display}" if d.depth < MAX_SCOPE
                      else ".".join(stack[-1].path.split(".")[1 - MAX_SCOPE:] + [d.display]))
            if d.kind == "function" and stack[-1].kind in ("class", "struct", "interface", "trait", "impl",
                                                           "enum", "module"):
                # A Ruby module's `def` is a method (of what includes it); a Rust `mod`'s or an
                # Elixir module's functions are functions.
                if stack[-1].kind != "module" or grammar == "ruby":
                    d.kind = "method"
        stack.append(d)
    return defs


# -- splitting the tree into line spans ----------------------------------------------------------


def _definition_keys(node) -> tuple:
    """The byte ranges under which `node` may be a definition: its own and, for a wrapper (an
    export, a decorated definition), the wrapped node's."""
    keys = ((node.start_byte, node.end_byte),)
    if _wraps(node) and node.named_child_count:
        inner = node.named_children[-1]
        keys += ((inner.start_byte, inner.end_byte),)
    return keys


class _Splitter:
    """Row spans (0-based, inclusive) following the tree, within the budget.

    The tree is flattened into one sequence of items; a definition that must be split is fenced
    (its pieces never merge with what surrounds it), anything else that must be split (a body, a
    long `if`) just contributes its children to the sequence.
    """

    FENCE = None

    def __init__(self, line_offsets: list[int], budget: int, max_lines: int, defs: dict[tuple[int, int], bool],
                 lines: list[str]):
        # defs: byte range of each definition node -> whether it is big enough to stay alone
        self.off = line_offsets
        self.lines = lines
        self.budget = budget
        self.max_lines = max_lines
        self.defs = defs
        # (first row, last row, byte ranges of the definition), in row order: documentation cut
        # apart from the definition it leads, so its pieces can still say whose documentation they are.
        self.leads: list[tuple[int, int, tuple]] = []
        # definition key -> the first row of the comments, decorators or attributes leading it
        self.lead_rows: dict[tuple, int] = {}

    def size(self, a: int, b: int) -> int:
        return self.off[b + 1] - self.off[a]

    def fits(self, a: int, b: int) -> bool:
        return self.size(a, b) <= self.budget and b - a < self.max_lines

    def _mostly_documentation(self, a: int, node, b: int) -> bool:
        """A definition a little over the budget whose documentation is most of it: kept whole."""
        doc_end = node.start_point[0] - 1
        total = self.size(a, b)
        return (total <= WHOLE_SLACK * self.budget and b - a < self.max_lines and doc_end >= a
                and 2 * self.size(a, doc_end) >= total)

    def split(self, root) -> list[list]:
        items: list = []
        self._flatten(root.children, 0, items)
        return self._merge(items)

    def _flatten(self, children, depth: int, items: list, pending: list | None = None, stop: int | None = None) -> None:
        pending = list(pending or ())
        for child in children:
            if stop is not None and child.start_byte >= stop:
                break  # handed on to what follows the definition this is a part of
            if child.start_byte == child.end_byte:
                continue  # holds no text: a closer the parser supplied (MISSING), an empty section at the end
            if _is_prefix(child):
                pending.append(child)
                continue
            pending = self._place(pending, child, depth, items, stop)
        if pending:
            self._place(pending[:-1], pending[-1], depth, items)

    def _place(self, prefix: list, node, depth: int, items: list, stop: int | None = None) -> list:
        """Add the node's items; the comments at its end that document what follows it, to be that's."""
        a = (prefix[0] if prefix else node).start_point[0]
        keys = _definition_keys(node)
        if prefix:
            self.lead_rows.update(dict.fromkeys(keys, a))
        alone = next((self.defs[k] for k in keys if k in self.defs), None)
        handed: list = []
        if stop is None:  # (a definition's, or an import list's: Kotlin's last import holds the class KDoc after it)
            handed = _handed_on(node)
            stop = handed[0].start_byte if handed else None
        b = _end_row(node) if stop is None or stop >= node.end_byte else max(a, _row_before(node, stop))
        if self.fits(a, b) or (alone is not None and prefix and self._mostly_documentation(a, node, b)):
            # [start, end, is a definition, stays alone, cut by lines]
            items.append([a, b, alone is not None, bool(alone), False])
            return handed
        if b == node.start_point[0] or depth >= MAX_DEPTH or node.child_count == 0 or node.type in _TEXT_NODES \
                or self._hides_text(node) or self._opens_text(node):
            items.append([a, b, alone is not None, True, True])  # a leaf too big: cut by lines later
            return handed
        # A decorated or exported definition is fenced once, around its decorators too.
        # (Not again inside a node holding nothing but it, which was fenced with its key: Ruby's
        # `body_statement` around a module's one class. Fenced twice, the class's leading comments
        # were cut from its header.)
        outer = node.parent
        fenced = (alone is not None or _wraps(node)) and not (
            outer is not None and (_wraps(outer) or (outer.start_byte, outer.end_byte) == (node.start_byte, node.end_byte)))
        # Over the budget only with the comments leading it: the node stays whole after them (split
        # into its children, express's `res.sendFile = function sendFile(...) {` joined its JSDoc
        # and the body was a chunk without its signature; mini.nvim's `MiniPairs.config = {` ended
        # the function before it, and the table was a chunk of its own).
        # Not a file's opening comments before its first node: they are the file's (a Haskell module's
        # documentation went apart from its `module` line, a short chunk that won on its shortness).
        whole = bool(prefix) and self.fits(node.start_point[0], b) and (fenced or not _opens_file(prefix[0]))
        if fenced or whole:
            items.append(self.FENCE)
            if prefix:
                self.leads.append((prefix[0].start_point[0], _end_row(prefix[-1]), keys))
            # Documentation too big for the budget is cut in even pieces: a block comment by rows, a
            # run of line comments (Ruby's `#`, Lua's `--`: one node a line) between its nodes. Cut
            # greedily, the run left a tail of a few lines alone (rails' MiddlewareStackProxy).
            rows = [(p.start_point[0], _end_row(p)) for p in prefix]
            if len(rows) > 1 and not self.fits(rows[0][0], rows[-1][1]):
                atoms = [atom for pa, pb in rows
                         for atom in ([(pa, pb)] if self.fits(pa, pb) else [(r, r) for r in range(pa, pb + 1)])]
                pieces = self._even_groups(atoms)
                if pieces is not None:
                    rows = pieces
            for pa, pb in rows:
                pieces = [(pa, pb)] if self.fits(pa, pb) else self._even_pieces(pa, pb)
                if pieces is None:  # a line longer than the budget: cut by lines later
                    items.append([pa, pb, False, False, True])
                    continue
                items.extend([pa_, pb_, False, False, False] for pa_, pb_ in pieces)
            prefix = []
            if whole:
                items.append([node.start_point[0], b, alone is not None, bool(alone), False])
                items.append(self.FENCE)
                return handed
        # Anything else split (a body, a long statement) adds its children to the sequence; comments
        # before it go to its first child.
        self._flatten(node.children, depth + 1, items, prefix, stop)
        if fenced:
            items.append(self.FENCE)
        return handed

    def _even_pieces(self, a: int, b: int) -> list[tuple[int, int]] | None:
        """Rows a..b in the fewest pieces that fit, of even size (None when a row alone is over
        the budget). Cut greedily, a long Javadoc left a three-line tail on its own, and its
        method's few lines, too small to stand alone, joined the next method's documentation."""
        return self._even_groups([(r, r) for r in range(a, b + 1)])

    def _even_groups(self, atoms: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
        """Consecutive row ranges (atoms) grouped into the fewest pieces that fit, of even size;
        None when an atom alone is over the budget."""
        if any(not self.fits(x, y) for x, y in atoms):
            return None
        a, b = atoms[0][0], atoms[-1][1]
        count = max(-(-self.size(a, b) // self.budget), -(-(b - a + 1) // self.max_lines))
        while True:
            target = self.size(a, b) / count
            pieces, start = [], a
            for i, (_x, y) in enumerate(atoms):
                if i == len(atoms) - 1 or (len(pieces) < count - 1 and self.size(start, y) >= target):
                    pieces.append((start, y))
                    start = atoms[i + 1][0] if i + 1 < len(atoms) else y + 1
            if all(self.fits(x, y) for x, y in pieces):
                return pieces
            count += 1

    def _opens_text(self, node) -> bool:
        """Whether the node's first row opens a text too big for the budget that fills the rest of
        it (Elixir's `@moduledoc \"\"\"`, `HELP = \"\"\"`): split into its children, that row
        joined the chunk before it, and the text began without it."""
        row, last = node.start_point[0], _end_row(node)
        for _ in range(MAX_DEPTH):
            big = None
            for child in node.children:
                end = _end_row(child)
                if self.size(child.start_point[0], end) > self.budget:
                    big = child
                    break
                if end > row:
                    return False  # a child before the big one goes past the first row
            if big is None or big.start_point[0] != row or _end_row(big) < last:
                return False  # (arguments after a long string: its call is split as before)
            if big.type in _TEXT_NODES:
                return True
            node = big
        return False

    def _hides_text(self, node) -> bool:
        """Whether a line of the node lies in none of its children: a block comment's children are
        its `/*` and `*/`, a YAML block scalar's its `|`, a heredoc's its markers. Split into its
        children, such a node would lose the text between them; it is cut by lines instead."""
        row = node.start_point[0]
        for child in node.children:
            if any(self.lines[r].strip() for r in range(row + 1, child.start_point[0])):
                return True
            row = max(row, _end_row(child))
        return any(self.lines[r].strip() for r in range(row + 1, _end_row(node) + 1))

    def _merge(self, items: list) -> list[list]:
        """Greedy merge of neighbours into [start, end, cut] spans: small pieces join, definitions
        big enough to stand alone do not absorb other definitions."""
        out: list[list] = []  # [start, end, has a definition, has a lone definition, cut]
        groups: list[list] = []  # the items of each span
        full: list[bool] = []  # whether a span starts only because the one before it was full
        open_ = False
        for item in items:
            if item is None:
                open_ = False
                continue
            a, b, is_def, alone, cut = item
            was_full = False
            if open_ and not cut:
                prev = out[-1]
                clash = prev[2] and is_def and (prev[3] or alone)
                if not prev[4] and not clash and self.fits(prev[0], b):
                    prev[1] = max(prev[1], b)
                    prev[2] = prev[2] or is_def
                    prev[3] = prev[3] or alone
                    groups[-1].append(item)
                    continue
                was_full = not clash
            out.append([a, b, is_def, alone, cut])
            groups.append([item])
            full.append(was_full)
            open_ = not cut
        # A run of spans cut only by the budget (the pieces of a long body) is cut again, evenly,
        # when the greedy cut left a piece before its last far below the others (a big statement
        # after it would not fit with it): `Picker:set_selection` was cut 48 / 8 / 40 / 16 lines,
        # and its 8-line middle piece was a chunk of its own.
        evened: list[list] = []
        i = 0
        while i < len(out):
            j = i + 1
            while j < len(out) and full[j]:
                j += 1
            run = out[i:j]
            sizes = [self.size(s[0], s[1]) for s in run]
            # Only statements: a small last piece alone joins its neighbour later if it can, and
            # the members of a class or module keep to the greedy cut (its header with its first
            # members, as many as fit).
            run_items = [item for g in groups[i:j] for item in g]
            if len(run) > 2 and UNEVEN * min(sizes[:-1]) < sum(sizes) / len(run) \
                    and not any(item[2] for item in run_items):
                run = self._even_run(run_items, len(run)) or run
            evened.extend(run)
            i = j
        return [[a, b, cut] for a, b, _d, _l, cut in evened]

    def _even_run(self, items: list, count: int) -> list[list] | None:
        """The items in `count` spans that fit (no two definitions together where one stays alone),
        of sizes as even as can be (the least sum of squares); None if they do not go in `count`."""
        n = len(items)
        best: list = [(0, 0, -1)] + [None] * n  # for the first j items: (spans, sum of squares, start of the last)
        for j in range(1, n + 1):
            end, defs, lone, found = -1, 0, False, None
            for i in range(j - 1, -1, -1):
                a, b, is_def, alone, _cut = items[i]
                end = max(end, b)
                defs += is_def
                lone = lone or alone
                if not self.fits(a, end) or (defs > 1 and lone):
                    break
                if best[i] is not None:
                    cost = (best[i][0] + 1, best[i][1] + self.size(a, end) ** 2, i)
                    if found is None or cost[:2] < found[:2]:
                        found = cost
            best[j] = found
        if best[n] is None or best[n][0] != count:
            return None
        spans = []
        j = n
        while j > 0:
            i = best[j][2]
            group = items[i:j]
            spans.append([group[0][0], max(it[1] for it in group), any(it[2] for it in group),
                          any(it[3] for it in group), False])
            j = i
        return spans[::-1]


def _opens_file(node) -> bool:
    """Whether the node is the first of the root's children."""
    return node.prev_sibling is None and node.parent is not None and node.parent.parent is None


def _uncovered(spans: list[list], lines: list[str], parsed: list[str]) -> list[list]:
    """Spans (cut by lines) for the text no span holds: every line with text is in a chunk, whatever
    the tree left between its nodes. A run of rows the parser saw blank (`parsed`, the rows it was
    given) is no text cut by lines but a small span that may join a neighbour."""
    covered = bytearray(len(lines))
    for a, b, _cut in spans:
        covered[a : b + 1] = b"\x01" * (b + 1 - a)
    out: list[list] = []
    run = None  # the last row with text of the uncovered run going on
    for row, line in enumerate(lines):
        if covered[row]:
            run = None
        elif line.strip():
            cut = bool(parsed[row].strip())
            if run is not None and out[-1][2] == cut:  # only uncovered (blank) rows since: one span
                out[-1][1] = row
            else:
                out.append([row, row, cut])
            run = row
    return out


# C and C++ files whose braces balance only across the branches of a conditional (`if(x) {` under
# `#ifdef A`, its `}` under a later `#ifdef A`) parse as one ERROR around most of the file: cut by
# lines, curl's cf-haproxy.c, curlx/timeval.c, vauth/gsasl.c and vtls/apple.c had no labels and no
# definitions. Such a file is parsed again with its conditional directives blanked (every branch's
# code read, as most such code is written for either branch to compile alone).
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(?:[^\n]*\\\r?\n)*[^\n]*",
                        re.MULTILINE)


def _rows(source: bytes) -> list[str]:
    """The rows of the bytes given to the parser (the same rows as the text's, some blanked)."""
    return split_lines(source.decode("utf-8", "surrogatepass"))


def _line_offsets(lines: list[str]) -> list[int]:
    offsets = [0]
    total = 0
    for line in lines:
        total += len(line)
        offsets.append(total)
    return offsets


def _tidy(spans: list[list], lines: list[str], off: list[int], opens, budget: int, min_span: int,
          lead_rows: frozenset = frozenset(), apart=lambda prev, span: False, max_lines: int = 1 << 30) -> list[list]:
    """Ordered, disjoint, blank-trimmed spans; tiny tails join their predecessor; comment lines at
    the end of a span move down to the definition they document. Joins keep to the budget and to
    `max_lines` (rows of a few characters each fit any budget)."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[list] = []
    for a, b, cut in spans:
        if out and a <= out[-1][1]:
            a = out[-1][1] + 1
        while a <= b and not lines[a].strip():
            a += 1
        while b >= a and not lines[b].strip():
            b -= 1
        if a > b:
            continue
        if out and not cut and not out[-1][2] and off[b + 1] - off[a] < TINY and _CLOSING.match("".join(lines[a : b + 1])):
            out[-1][1] = b
            continue
        out.append([a, b, cut])
    # A small span is no chunk on its own: BM25 favours short documents, so a lone header (`module
    # Sinatra`, `class APIRoute(Route):` before a member too big to join it) or a block of imports
    # would win every query naming it by its shortness alone. A header joins what follows it,
    # anything else small joins its smaller neighbour, while the result stays near the budget.
    def size(span):
        return off[span[1] + 1] - off[span[0]]

    def fits(a, b, limit=budget):
        return off[b + 1] - off[a] <= limit and b - a < max_lines

    joined: list[list] = []
    carry = None  # a header waiting for its body
    for span in out:
        if carry is not None:
            if not span[2] and (fits(carry[0], span[1], budget + min_span)
                                or (size(carry) < TINY and fits(carry[0], span[1], 1 << 30))):
                # (a one-line header, `impl Handle {`, joins a body however big: alone, it was the
                # first hit for every query naming its type)
                span = [carry[0], span[1], False]
            elif span[2] and carry[1] + 1 == span[0] and span[0] not in lead_rows:
                # Text cut by lines (a long docstring) takes the header into its first piece; not the
                # documentation of a definition that follows (its pieces are that definition's).
                span = [carry[0], span[1], True]
            else:
                joined.append(carry)
            carry = None
        if not span[2] and size(span) < min_span:
            if opens(span[0], span[1]):
                carry = span
                continue
            if joined and not joined[-1][2] and fits(joined[-1][0], span[1]) and not apart(joined[-1], span):
                joined[-1][1] = span[1]
                continue
        joined.append(span)
    if carry is not None:
        if joined and not joined[-1][2] and fits(joined[-1][0], carry[1]):
            joined[-1][1] = carry[1]
        else:
            joined.append(carry)
    # A small span left behind (its predecessor was full) may still fit with its successor.
    out = []
    for span in joined:
        if out and not out[-1][2] and not span[2] and size(out[-1]) < min_span and fits(out[-1][0], span[1]) \
                and not apart(out[-1], span):
            out[-1][1] = span[1]
            continue
        out.append(span)
    # Comment lines at the end of a span move down to the definition right after them, if it still
    # fits the budget with them (a class's 44-line KDoc moved onto its header and first method made
    # a chunk of 2,600 characters). What they leave behind, if small, joins the span before it (the
    # KDoc had followed the last import: that import was a chunk of its own).
    moved: list[list] = []
    for cur in out:
        prev = moved[-1] if moved else None
        if prev is not None and not prev[2] and not cur[2] and prev[1] + 1 == cur[0] and opens(cur[0], cur[0]):
            first = prev[1]
            while first > prev[0] and _COMMENT_LINE.match(lines[first]):
                first -= 1
            if first < prev[1] and not _COMMENT_LINE.match(lines[first]) and fits(first + 1, cur[1]):
                cur = [first + 1, cur[1], cur[2]]
                prev[1] = first
                while prev[1] > prev[0] and not lines[prev[1]].strip():
                    prev[1] -= 1
                before = moved[-2] if len(moved) > 1 else None
                if before is not None and not before[2] and size(prev) < min_span \
                        and fits(before[0], prev[1]) and not apart(before, prev):
                    before[1] = prev[1]
                    moved.pop()
        moved.append(cur)
    return moved


# -- chunks --------------------------------------------------------------------------------------


def module_name(path: str) -> str:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")


def _label(a: int, b: int, before: Definition | None, starting: list[Definition],
           lead_rows: dict[tuple, int] | None = None) -> Definition | None:
    """The definition a chunk of rows a..b is about: from the outside in, the one holding most of
    its lines, followed inwards while the chunk is a piece of it (not all of it) and the inner one
    holds most of the chunk, or starts in it inside a class-like one and holds no fewer of its
    lines than that one's own (those in none of its members). So a class's header with its first
    method is that method, but a header with a long docstring or its fields and a one-line member
    is the class, and so is a header with its constructor (`__init__`, `constructor`: what makes
    the class, where a query naming the class looks); the end of a long function with a small one
    after it is still the long one, a method's body with its class's closing brace is the method,
    a method's signature with a type declared in its body is the method, and a whole class is the
    class."""
    candidates = [d for d in starting if d.kind != "constant"]
    while before is not None:  # what starts before the chunk and reaches into it: these ancestors
        if before.start < a <= before.end and before.kind != "constant":
            candidates.append(before)
        before = before.parent
    if not candidates:
        return None
    held = set(map(id, candidates))
    rows = lead_rows or {}

    def lines(d: Definition) -> int:
        return min(d.end, b) - max(d.start, a) + 1

    def led(d: Definition) -> int:
        """Its lines in the chunk with the comments, decorators or attributes leading it
        (`lead_rows`: their first rows by definition key)."""
        return min(d.end, b) - max(rows.get(d.key, d.start), a) + 1

    def outweighs(k: Definition, d: Definition) -> bool:
        """Whether member k holds no fewer of the chunk's lines than d's own (those in none of its
        members), each with its documentation: a class's is the class's as a member's is the
        member's (Alamofire's `Session`, its documentation, header and a documented nested enum,
        was labelled with the enum)."""
        held = {id(m): led(m) for m in candidates if m.parent is d}
        return held.get(id(k), led(k)) >= led(d) - sum(held.values())

    current = None
    while True:
        kids = [d for d in candidates if (d.parent if d.parent is not None and id(d.parent) in held else None) is current]
        if not kids:
            return current
        # Ties: the first. A test block (Zig's `test "..."`) names a chunk only when nothing else can.
        best = max(kids, key=lambda d: (d.kind != "test", lines(d), -d.start))
        # Inwards while the inner one holds most of the chunk, or starts in it inside a class-like
        # one and outweighs that one's own lines (a method after its class's header; a namespace is
        # only a prefix); what a function declares in its body (a type, a closure) names the chunk
        # only when it holds most of it.
        if current is not None and not (
                2 * lines(best) > b - a + 1
                or (best.start >= a and current.kind not in _FUNCTION_LIKE
                    and (current.kind == "namespace" or not a <= current.name_row <= b
                         or outweighs(best, current)))):
            return current
        if current is not None and a <= current.name_row <= b and current.kind not in _FUNCTION_LIKE \
                and current.kind != "namespace" and (best.name in _CONSTRUCTOR_NAMES or _constructor(best)):
            return current  # the class's header with its constructor: the class
        if current is None and MINOR_SHARE * led(best) < b - a + 1:
            # A file's licence and imports with a one-line `type ContextKeyType int` are not that
            # type: the chunk is the module's.
            return None
        current = best
        if a <= current.start and current.end <= b and current.kind != "namespace":
            return current  # all of it is in the chunk: the chunk is that definition (a namespace is only a prefix)


MINOR_SHARE = 5  # a top-level definition holding less than 1/this of a chunk's lines does not name it
MAX_MEMBERS = 32  # a chunk of a long enum or constant table names more: its first ones are kept


def _members(named: list[Definition], primary: Definition | None) -> tuple[tuple[str, str, str], ...]:
    """(name, scope path, kind) of the definitions named in a chunk other than the one labelling it
    (or its overloads, which share its scope path)."""
    out = {}
    label = primary.path if primary is not None else None
    for d in named:
        if d.path != label and d.kind != "test" and not _constructor(d) and d.path not in out:
            out[d.path] = (d.name, d.path, d.kind)
    return tuple(out.values())[:MAX_MEMBERS]


def _defines(d: Definition) -> bool:
    """Whether a chunk holding d's name line is indexed as defining that name."""
    return d.kind != "test" and not d.declaration and not d.instance and not _constructor(d)


def _annotate(spans, defs: list[Definition], path: str, language: str, kind: str, lines, policy,
              leads: list[tuple[int, int, tuple]] = (), lead_rows: dict[tuple, int] | None = None) -> list[Chunk]:
    starts = [d.start for d in defs]
    by_key = {d.key: d for d in defs}
    lead_starts = [la for la, _lb, _keys in leads]
    name_rows = sorted((d.name_row, i) for i, d in enumerate(defs))
    name_keys = [r for r, _ in name_rows]
    # What no definition labels: a code file's module-level code, else the file itself (a config
    # file's chunk is config, not a module).
    module, module_kind = (f"module {module_name(path)}", "module") if kind == CODE else (path, kind)
    chunks: list[Chunk] = []
    for a, b, cut in spans:
        inside = [defs[i] for _, i in name_rows[bisect.bisect_left(name_keys, a) : bisect.bisect_right(name_keys, b)]]
        names = tuple(dict.fromkeys(d.name for d in inside if _defines(d)))
        starting = [d for d in inside if d.start >= a]
        # The innermost definition around the chunk and larger than it: an ancestor of the last
        # definition starting at or before the chunk (definitions nest by lines).
        j = bisect.bisect_right(starts, a) - 1
        around = defs[j] if j >= 0 else None
        while around is not None and not (around.start <= a and around.end >= b and around.end - around.start > b - a
                                          and around.kind != "constant"):
            around = around.parent
        primary = _label(a, b, defs[j] if j >= 0 else None,
                         [d for d in defs[bisect.bisect_left(starts, a) : bisect.bisect_right(starts, b)]], lead_rows)
        if primary is None or (primary.start < a and not any(d.kind != "constant" for d in starting)):
            # documentation cut apart from its definition is that definition's
            k = bisect.bisect_right(lead_starts, a) - 1
            if k >= 0 and b <= leads[k][1]:
                led = next((by_key[key] for key in leads[k][2] if key in by_key), None)
                if led is not None and led.kind != "constant":
                    primary = led
        if primary is not None:
            context, symbol, chunk_kind = primary.path, primary.name, primary.kind
        else:
            context, chunk_kind = module, module_kind
            symbol = starting[0].name if starting else ""
        scope = (around.start + 1, around.end + 1) if around is not None else None
        if primary is not None and primary.kind != "constant":
            # A piece of a split definition (its documentation too, which starts before the node):
            # its scope is that definition with its documentation. The first piece's was the class
            # around it, or nothing, and `--expand scope` showed the whole class.
            lead = min(primary.start, (lead_rows or {}).get(primary.key, primary.start))
            if lead <= a and b <= primary.end and primary.end - lead > b - a:
                scope = (lead + 1, primary.end + 1)
        if cut:
            text = "".join(lines[a : b + 1])
            for piece in chunk_lines(text, path, language=language, kind=kind, policy=policy):
                s, e = piece.start_line + a, piece.end_line + a
                # What a piece defines is what has its name line there: a one-line declaration
                # under a long comment is defined by the piece holding it, not by the comment.
                held = [d for d in inside if s - 1 <= d.name_row <= e - 1]
                defined = tuple(dict.fromkeys(d.name for d in held if _defines(d)))
                own_symbol = symbol if primary is not None else next(
                    (d.name for d in held if d.start >= a), "")
                chunks.append(Chunk(path, s, e, piece.text, language, kind, context, own_symbol, chunk_kind,
                                    scope or (a + 1, b + 1), defined, _members(held, primary)))
            continue
        chunks.append(Chunk(path, a + 1, b + 1, "".join(lines[a : b + 1]), language, kind, context, symbol,
                            chunk_kind, scope, names, _members(inside, primary)))
    return chunks


def chunk_syntax(text: str, path: str, *, language: str, kind: str = CODE,
                 policy: ChunkingPolicy | None = None) -> list[Chunk] | None:
    """AST chunks of one file; None when its language has no grammar or it does not parse (the
    caller falls back to lines). Needs the `treesitter` extra."""
    # A caller that read the file itself may not have looked at what its text says (a C++ `.h`).
    language = from_content(path, language, text)
    grammar = grammar_for(path, language)
    if grammar is None or _minified(text):
        return None
    policy = policy or ChunkingPolicy()
    chunks = _chunk_tree(text, path, language, kind, policy, grammar)
    if chunks and grammar in _SCRIPT_HOSTS:
        chunks = _with_scripts(chunks, text, path, language, kind, policy, grammar)
    return chunks


MINIFIED_BYTES = 100_000
MINIFIED_LINE = 1_000  # mean characters per line


def _minified(text: str) -> bool:
    """A large file of very long lines (a minified bundle): its syntax tree cannot cut inside a line,
    and walking it for definitions took seconds (a 1 MB one-line bundle: 30,000 "definitions")."""
    return len(text) > MINIFIED_BYTES and (text.count("\n") + 1) * MINIFIED_LINE < len(text)


# Markup whose `<script>` elements hold code of another language (a Vue or Svelte component's
# logic): the script is chunked by its own grammar, the rest by the host's.
_SCRIPT_HOSTS = frozenset({"vue", "svelte", "html"})
_SCRIPT_LANG = re.compile(r"""\blang\s*=\s*["']?(tsx?|typescript)\b""", re.IGNORECASE)
_SCRIPT_TYPE = re.compile(r"""\btype\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)
_SCRIPT_TYPES = frozenset({"module", "text/javascript", "application/javascript", "text/ecmascript",
                           "application/ecmascript", "text/babel", "text/jsx", "text/typescript"})


def _scripts(root) -> list[tuple[int, int, str]]:
    """(first row, last row, language) of the code inside each `<script>` element: the rows
    between its start and end tags. A `type` that is not JavaScript (a template, JSON) is left out."""
    found = []
    stack = [root]
    while stack:  # HTML nests deeply: no recursion
        node = stack.pop()
        if node.type != "script_element":
            stack.extend(node.children)
            continue
        tags = [c for c in node.children if c.type in ("start_tag", "end_tag")]
        if len(tags) != 2 or tags[0].type != "start_tag" or tags[1].type != "end_tag":
            continue
        first, last = tags[0].end_point[0] + 1, tags[1].start_point[0] - 1
        head = _text(tags[0])
        kind = _SCRIPT_TYPE.search(head)
        if last < first or (kind and kind.group(1).lower() not in _SCRIPT_TYPES):
            continue
        typed = _SCRIPT_LANG.search(head) or (kind and kind.group(1).lower() == "text/typescript")
        found.append((first, last, "typescript" if typed else "javascript"))
    return sorted(found)


def _with_scripts(host: list[Chunk], text: str, path: str, language: str, kind: str,
                  policy: ChunkingPolicy, grammar: str) -> list[Chunk]:
    """The host's chunks with each script's rows replaced by that script's own AST chunks (their
    scope paths, kinds and definitions); the file's language stays the host's."""
    try:
        tree = _parse(grammar, text.encode("utf-8", "surrogatepass"))
    except (ImportError, ValueError, RuntimeError, LookupError, OSError):
        return host
    if tree is None:
        return host
    lines = split_lines(text)
    inner: list[Chunk] = []
    taken: list[tuple[int, int]] = []  # 1-based rows now chunked by a script's grammar
    for first, last, script_language in _scripts(tree.root_node):
        code = "".join(lines[first : last + 1])
        pieces = _chunk_tree(code, path, script_language, kind, policy, grammar_for(path, script_language))
        if not pieces:
            continue
        shift = first
        for c in pieces:
            scope = (c.scope[0] + shift, c.scope[1] + shift) if c.scope else None
            inner.append(replace(c, start_line=c.start_line + shift, end_line=c.end_line + shift,
                                 language=language, scope=scope))
        taken.append((first + 1, last + 1))
    if not taken:
        return host
    kept: list[Chunk] = []
    taken.sort()
    ends = [b for _a, b in taken]  # scripts do not overlap: sorted by start, their ends are too
    for c in host:
        spans = [(c.start_line, c.end_line)]
        # Only the scripts reaching into this chunk: every script against every chunk was quadratic
        # (a page of 8,000 small scripts took 47 s).
        i = bisect.bisect_left(ends, c.start_line)
        while i < len(taken) and taken[i][0] <= c.end_line:
            a, b = taken[i]
            i += 1
            spans = [piece for s, e in spans
                     for piece in ((s, min(e, a - 1)), (max(s, b + 1), e)) if piece[0] <= piece[1]]
        for s, e in spans:
            piece = "".join(lines[s - 1 : e])
            if (s, e) == (c.start_line, c.end_line):
                kept.append(c)
            elif piece.strip():
                kept.append(replace(c, start_line=s, end_line=e, text=piece, scope=None,
                                    definitions=None if c.definitions is None else ()))
    return sorted(kept + inner, key=lambda c: (c.start_line, c.end_line))


def _chunk_tree(text: str, path: str, language: str, kind: str, policy: ChunkingPolicy,
                grammar: str) -> list[Chunk] | None:
    lines = split_lines(text)
    if not lines:
        return []
    if grammar == "yaml" and _yaml_nesting(lines) > MAX_YAML_NESTING:
        return None
    # Rows are all the chunker takes from the tree, so byte offsets never meet character offsets.
    source = text.encode("utf-8", "surrogatepass")
    parsed_lines = lines  # what the parser sees, row for row
    if grammar in ("c", "cpp") and _BARE_MACRO_LINE.search(source):
        # `ABSL_NAMESPACE_BEGIN` alone on a line, before a `namespace`, made the grammar read the
        # namespace as a function; the parser sees blanks there (same bytes, same rows), and so
        # does the splitter (text in no node would have it cut the namespace by lines).
        source = _BARE_MACRO_LINE.sub(lambda m: b" " * len(m.group(0)), source)
        parsed_lines = _rows(source)
    allowance = _Allowance()  # one for all of the file's parses
    try:
        tree = _parse(grammar, source, allowance)
        if tree is None:
            return None
        if tree.root_node.has_error and b"\r\n" in source:
            # Some grammars (Dockerfile's) take a Windows line end for an error: the parser sees
            # Unix ones (same rows; byte offsets are only compared within the tree).
            unix = source.replace(b"\r\n", b"\n")
            again = _parse(grammar, unix, allowance)
            if again is not None and not again.root_node.has_error:
                tree, source = again, unix
                parsed_lines = _rows(source)
    except ImportError:
        return None  # the extra is not installed: lines, as for a language without a grammar
    except (ValueError, RuntimeError, LookupError, OSError):
        return None
    root = tree.root_node
    if root.has_error and grammar in ("c", "cpp", "csharp"):
        # See _DIRECTIVE: the parser sees every branch of the conditionals, their lines blank. A
        # file mostly in error takes any better tree; one with a local error only a clean one (a C#
        # `#if ... else { #endif` ended JsonTextReader's class 2,400 lines early, and every member
        # after it lost its class).
        mostly = _mostly_error(root, len(source))
        blanked = _DIRECTIVE.sub(lambda m: _blank(m.group(0)), source) if mostly or grammar == "csharp" else source
        if blanked != source:
            again = _parse(grammar, blanked, allowance)
            if again is not None and (not again.root_node.has_error
                                      or mostly and not _mostly_error(again.root_node, len(blanked))):
                tree, source = again, blanked
                parsed_lines = _rows(source)
                root = tree.root_node
    if root.has_error and _mostly_error(root, len(source)):
        return None
    budget = policy.budget(kind)
    inner = []
    if grammar == "rust":
        items, outer = source, tree
        for _ in range(MACRO_DEPTH):  # a macro inside a macro's body is found in that body's tree
            items = macro_items(outer, items)
            outer = _parse(grammar, items, allowance) if items is not None else None
            if outer is None:
                break
            inner.append(outer)
    try:
        defs = definitions(tree, grammar, inner)
    except RecursionError:  # pragma: no cover - the query runs in C; kept as a guard
        defs = []
    _continuations(defs, path)
    off = _line_offsets(lines)
    sized = {}
    for d in defs:
        if d.kind != "constant":
            big = off[d.end + 1] - off[d.start] >= ALONE_SHARE * budget and not d.statement
            sized[d.key] = big
    splitter = _Splitter(off, budget, policy.max_lines, sized, parsed_lines)
    starts = [d.start for d in defs]

    def opens(a: int, b: int) -> bool:
        """A definition starts in rows a..b and goes on after them."""
        return any(d.end > b and d.kind != "constant" for d in defs[bisect.bisect_left(starts, a):
                                                                    bisect.bisect_right(starts, b)])

    def apart(prev: list, span: list) -> bool:
        """A whole definition does not join the last piece of a definition split before it: that
        chunk would be two definitions' and neither's (the tail of `start` and all of `stop`)."""
        i, j = bisect.bisect_left(starts, span[0]), bisect.bisect_right(starts, span[1])
        if not any(d.end <= span[1] and d.kind != "constant" for d in defs[i:j]):
            return False
        k = bisect.bisect_right(starts, prev[1]) - 1
        d = defs[k] if k >= 0 else None
        while d is not None:
            if d.kind != "constant" and d.start < prev[0] and prev[1] <= d.end < span[0]:
                return True
            d = d.parent
        return False

    try:
        spans = splitter.split(root)
        # rows the parser saw blank (a directive line) join their neighbours like any small span
        spans += _uncovered(spans, lines, parsed_lines)
        spans = _tidy(spans, lines, off, opens, budget, min(MIN_SPAN, budget // 4),
                      frozenset(first for first, _last, _keys in splitter.leads), apart, policy.max_lines)
        chunks = _annotate(spans, defs, path, language, kind, lines, policy, splitter.leads, splitter.lead_rows)
    except Exception as exc:  # noqa: BLE001 - a tree this chunker mishandles costs its file the AST chunks, not the index
        if len(MISHANDLED) < 100:
            MISHANDLED.append(f"{path}: {type(exc).__name__}: {exc}")
        return None
    if not knows_definitions(grammar):
        chunks = [replace(c, definitions=None) for c in chunks]
    return chunks


def _yaml_nesting(lines: list[str]) -> int:
    """How deep a YAML text nests block collections: indentation steps, plus each compact `- `
    (or `? `) opening a line's content. An overestimate inside block scalars, which is harmless."""
    stack: list[int] = []
    deepest = 0
    for line in lines:
        body = line.lstrip(" ")
        if not body.strip() or body.startswith("#"):
            continue
        width = len(line) - len(body)
        while stack and stack[-1] > width:
            stack.pop()
        if not stack or stack[-1] < width:
            stack.append(width)
        compact = _YAML_COMPACT.match(body).group()
        deepest = max(deepest, len(stack) + compact.count("-") + compact.count("?"))
    return deepest


def _constructor(d: Definition) -> bool:
    """A constructor named after its class (Java, C#, C++, Dart): it does not define the class's
    name, or a query naming the class finds a short constructor before the class itself. Its scope
    path (`HashCodeBuilder.HashCodeBuilder`) still places it."""
    parent = d.parent
    return d.kind in _FUNCTION_LIKE and parent is not None and parent.name == d.name and parent.kind not in _FUNCTION_LIKE


def _mostly_error(root, n_bytes: int) -> bool:
    """The parse failed as a whole: one top-level error covers most of the file, or the root is an
    error and less than half the file lies in error-free nodes under it. A grammar gives up at the
    top over one construct it cannot read (Kotlin's `in a..<b ->` in a `when`) and still reads most
    definitions whole: kotlinx's BufferedChannel.kt (3,000 lines) and nlohmann's json.hpp (the class,
    5,300) were cut by lines, their chunks unlabelled. Only named nodes count as read: 100,000 `[`
    under an ERROR root are tokens, not a document (and the definition search over them took 5 s)."""
    if root.type == "ERROR":
        good = sum(child.end_byte - child.start_byte for child in root.children
                   if child.is_named and not child.has_error)
        return good * 2 < n_bytes
    for child in root.children:
        if child.type == "ERROR" and (child.end_byte - child.start_byte) * 2 > n_bytes:
            return True
    return False


def chunk_source(text: str, path: str, *, language: str, kind: str = CODE,
                 policy: ChunkingPolicy | None = None) -> list[Chunk]:
    """Chunks of one file by its structure: syntax tree, headings, else lines (per file).

    Reusable by any retriever (`TreesitterRetriever.chunk_file` and the loader call it); without the
    `treesitter` extra it still chunks Markdown and reST by headings, everything else by lines."""
    if language in HEADING_LANGUAGES:
        from .markdown import chunk_headings

        return chunk_headings(text, path, language=language, kind=kind, policy=policy)
    chunks = chunk_syntax(text, path, language=language, kind=kind, policy=policy)
    if chunks is None:
        return chunk_lines(text, path, language=language, kind=kind, policy=policy)
    return chunks
