"""What a syntax tree defines: every class, function, method, type, constant and closure of a file,
named, nested in its enclosing definitions (`APIRouter.add_api_route`), from one table of node types
that mean the same thing across the pack's grammars, plus a few patterns for what a grammar leaves
unnamed. The chunker (ast.py) labels its chunks with them; the ranking takes its definition terms
from them.
"""
from __future__ import annotations

import re

from ..text import operator_name
MAX_DEPTH = 40  # deeper nesting is cut by lines: bounded time, no recursion errors
MAX_DEFINITION_DEPTH = 160  # syntax nodes above a definition the query still matches (see definitions)
MAX_SCOPE = 12  # levels a breadcrumb names (the innermost ones)

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
    "procedure": "function",  # Tcl's `proc`
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
_CLASS_KEYWORDS = {"interface": "interface", "enum": "enum", "struct": "struct", "extension": "impl",
                   "protocol": "interface"}

_BINDS_FUNCTION = frozenset({"variable_declarator", "assignment_expression", "field_definition",
                             "public_field_definition", "pair"})

_HASKELL_TOP = frozenset({"declarations", "class_declarations", "instance_declarations"})
_MEMBERS = frozenset({"property_declaration", "event_declaration", "indexer_declaration", "operator_declaration",
                      "conversion_operator_declaration", "val_definition", "var_definition", "val_declaration",
                      "var_declaration"})

# Where a property declares a member (or a module-level value), not a local of a function body.
_MEMBER_HOLDERS = frozenset({"class_body", "declaration_list", "enum_class_body", "protocol_body", "enum_body",
                             "source_file", "compilation_unit", "interface_body", "object_body",
                             "class_interface",  # (Objective-C's `@interface`)
                             "template_body"})  # (Scala's class, object and trait bodies)

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
    # F#: `type Order = {...}`, `type Status = | A | B`, `module Order =`, `let pay o = ...`
    "record_type_defn": ("type", ("type_name", "identifier")), "union_type_defn": ("type", ("type_name", "identifier")),
    "module_defn": ("module", ("identifier",)),
    "function_or_value_defn": ("function", ("function_declaration_left", "identifier")),
}

# Definitions of other languages named by a field, as the tables above: Solidity, Objective-C, Perl.
_OTHER_KINDS: dict[str, str] = {
    "contract_declaration": "class", "library_declaration": "module", "modifier_definition": "function",
    "event_definition": "type", "class_implementation": "class", "class_interface": "class",
    "subroutine_declaration_statement": "function", "mixin_declaration": "trait",  # (Dart's mixin)
    "extension_definition": "impl",  # (Scala 3's)
    "class_method_definition": "method", "enum_statement": "enum",  # (PowerShell's)
    "package_statement": "namespace",  # Perl's `package Job::Queue;`: a scope up to the next one
    "value_definition": "function",  # OCaml's `let` (see _definition)
    # Scala's `val`/`var` members (`implicit val catsStdShowForString: Show[String] = ...`, the
    # instances cats is made of): as Kotlin's properties, members only (_member), not a def's locals
    "val_definition": "property", "var_definition": "property",
    "val_declaration": "property", "var_declaration": "property",  # (abstract: `val name: String`)
}

# (the benchmark's tables first and unchanged: `function`, `module`, ... keep their kinds there)
_KINDS = {**_SCOPE_KINDS, **_FUNCTION_KINDS, **_OTHER_KINDS,
          **{t: kind for t, (kind, _) in _NAMED_BY_CHILD.items() if t not in _SCOPE_KINDS and t not in _FUNCTION_KINDS}}


def _descend(node, names=frozenset({"identifier"}), field: str = ""):
    """The first node of a type in `names` down from node, by its `field` child where it has one,
    else its first child (`Point` of Julia's `Point{T<:Real} <: Shape`, `body` of Objective-C's
    `*body` declarator); None past a few levels."""
    for _ in range(8):
        if node is None or node.type in names:
            return node
        node = (node.child_by_field_name(field) if field else None) or next(iter(node.named_children), None)
    return None


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
    # Lua: a module table's member holding a table (`actions.select_default = { pre = ..., action =
    # ... }`, every action of telescope's): the module's `return` hands it out
    "(chunk (assignment_statement (variable_list . name: (dot_index_expression) @table)"
    " (expression_list . value: (table_constructor))) @def)",
    # R: `compute_mean <- function(x) {...}` (or `=`): a function is named only by its binding
    "(binary_operator lhs: (identifier) @name rhs: (function_definition)) @def",
    # Elm's `add a b = ...` and Erlang's `add(A, B) -> ...` (named by their first clause)
    "(value_declaration functionDeclarationLeft: (function_declaration_left . (lower_case_identifier) @name)) @def",
    "(fun_decl . clause: (function_clause name: (atom) @name)) @def",
    '(call target: (identifier) @kw (#any-of? @kw "def" "defp" "defmacro" "defmacrop" "defguard"'
    ' "defmodule" "defprotocol" "defimpl" "defdelegate")) @def',
    # Clojure's top-level `(defn name ...)`, `(defprotocol Name ...)`, ...: see _LISP_KINDS
    "(source (list_lit . value: (sym_lit name: (sym_name) @lisp) . value: (sym_lit name: (sym_name) @name)) @def)",
    # ExUnit's `test "name" do` and `describe "group" do`: labels of their blocks, as Zig's tests
    '(call target: (identifier) @kw (#any-of? @kw "test" "describe") (arguments . (string)) (do_block)) @def',
    # Jest's, Mocha's and Vitest's `describe("group", () => {...})`, `it("does", ...)`, `test(...)`:
    # their blocks were labelled by a local binding inside (`listBy` for `describe("syncDiff")`)
    '(expression_statement (call_expression function: (identifier) @kw (#any-of? @kw "describe" "it" "test" "context")'
    ' arguments: (arguments . [(string) (template_string)] . [(arrow_function) (function_expression)])) @def)',
    # RSpec's `describe User do`, `context "when blank" do`, `it "..." do`, and Rails' and Minitest's
    # `test "..." do`
    '(call method: (identifier) @kw (#any-of? @kw "describe" "context" "it" "test")'
    ' arguments: (argument_list . [(string) (constant) (scope_resolution)]) block: (do_block)) @def',
)

_TEST_BLOCKS = frozenset({"test", "describe", "it", "context"})
# What holds a C or C++ declaration at file level: the file, conditional compilation, namespaces,
# `extern "C" {`
_FILE_LEVEL = frozenset({"translation_unit", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                         "preproc_elifdef", "declaration_list", "namespace_definition", "linkage_specification"})

# Config files: a key holding a block of others is a section, labelled by its key path
# (`jobs.build`, `tool.pytest.ini_options`); only these grammars ask for them, and only the top
# two levels (a lock file's thousands of inner objects would double its chunking time).
_YAML_PAIR = "(block_mapping_pair key: (_) @key value: (block_node)) @def"
_JSON_PAIR = "(pair key: (string) @key value: [(object) (array)]) @def"
_SECTION_PATTERNS = {
    # Julia's short form `area(r) = pi * r^2` at a file's or module's top level: a function
    "julia": ("(source_file (assignment . (call_expression . (identifier) @name)) @def)",
              "(module_definition (block (assignment . (call_expression . (identifier) @name)) @def))"),
    # A Kubernetes-style document (`kind: Deployment`, `metadata: {name: api}`): `Deployment api`, its
    # sections below it (`Deployment api.spec`); a stream of several was one `metadata`, `spec`, `spec`.
    "yaml": ("(stream (document) @def @resource)",
             f"(document (block_node (block_mapping {_YAML_PAIR})))",
             f"(document (block_node (block_mapping (block_mapping_pair value: (block_node (block_mapping {_YAML_PAIR}))))))"),
    "toml": ("(table . [(bare_key) (dotted_key) (quoted_key)] @key) @def",
             "(table_array_element . [(bare_key) (dotted_key) (quoted_key)] @key) @def"),
    "json": (f"(document (object {_JSON_PAIR}))", f"(document (object (pair value: (object {_JSON_PAIR}))))"),
    # C and C++: a table a file or namespace defines, `const struct Curl_protocol Curl_protocol_http =
    # {...}`, `static const char *const names[] = {...}` (curl's protocol tables were the file's
    # module chunks, and the first hit for a table's name a line using it)
    # (at file or namespace level, see _FILE_LEVEL)
    "c": ("(declaration declarator: (init_declarator declarator: (_) @data value: (initializer_list))) @def",),
    "cpp": ("(declaration declarator: (init_declarator declarator: (_) @data value: (initializer_list))) @def",),
    # HCL/Terraform: a top-level block, `resource "aws_s3_bucket" "logs" {` (labelled in _definition)
    "hcl": ("(config_file (body (block . (identifier) @key) @def))",),
    "terraform": ("(config_file (body (block . (identifier) @key) @def))",),
}
_CLOSURE_TYPES = frozenset({"variable_declarator", "let_declaration", "assignment", "assignment_expression",
                            "field_definition", "public_field_definition", "function_expression"})

_LISP_KINDS = {"defn": "function", "defn-": "function", "defmacro": "macro", "defmulti": "function",
               "defmethod": "function", "def": "constant", "defonce": "constant", "defprotocol": "interface",
               "definterface": "interface", "defrecord": "struct", "deftype": "struct"}

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


def wraps(node) -> bool:
    """Whether node wraps a definition (an export, decorators, Go's `type` keyword) whose leading
    lines stay with it."""
    return node.type in _UNWRAP or (node.type in _UNWRAP_ONE and node.named_child_count == 1)


# Text, not structure: too big, such a node is cut by lines. Split into its children (quotes, content,
# interpolations) a docstring's opening quotes went with the class header and its text to the next chunk.
TEXT_NODES = frozenset({"string", "string_literal", "raw_string_literal", "template_string",
                         "interpreted_string_literal", "heredoc_body", "comment", "block_comment"})

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_LAST_WORD = re.compile(r"[A-Za-z_$][\w$]*[?!]?(?=[^\w$]*$)")

# A binding whose value is an import (`const x = @import("x.zig")`, `const fs = require("fs")`,
# `local util = require "util"`) names another module; it defines nothing a query could be after.
_IMPORT_ALIAS = re.compile(r"[^=]*=\s*(?:@import|require|import)\s*[(\"']")
_ZIG_CONTAINER = re.compile(r"[^=]*=\s*(?:extern\s+|packed\s+)?(struct|enum|union|opaque)\b")


# Elixir's documentation and annotation attributes precede the definition they describe, as
# decorators do (`@moduledoc` describes the enclosing module, and other attributes are values).
_ELIXIR_LEADS = frozenset({"doc", "typedoc", "spec", "impl", "deprecated", "tag"})


def is_prefix(node) -> bool:
    """Comments, decorators, attributes and annotations: they belong to what follows them."""
    kind = node.type
    if kind == "pragma":
        # `{-# INLINE f #-}` written after `f` is f's: it led the next definition.
        before = node.prev_named_sibling
        return not (before is not None and before.type in ("function", "bind", "signature")
                    and (name := before.child_by_field_name("name")) is not None
                    and node_text(name) in node_text(node).replace("#-}", " ").split())
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
                and after.named_child_count > 0 and node_text(node.named_children[0]) == node_text(after.named_children[0]))
    if kind == "string_literal" and node.parent is not None and node.parent.type in ("source_file", "block"):
        # Julia's docstring: a string standing alone on the rows just above what it documents (its
        # last line was cut off from the definition, and its first ended the chunk before).
        after = node.next_named_sibling
        return after is not None and after.start_point[0] == node.end_point[0] + 1
    if kind == "unary_operator" and node.child_count == 2 and node.children[0].type == "@":
        target = node.children[1]
        name = target.children[0] if target.type == "call" and target.child_count else target
        return name.type == "identifier" and node_text(name) in _ELIXIR_LEADS
    return False


class Definition:
    __slots__ = ("name", "display", "kind", "start", "end", "name_row", "parent", "path", "key", "bytes", "depth",
                 "statement", "declaration", "partial", "instance", "returns")

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
        self.returns = False  # a C-family function written with a return type: no constructor

_QUERIES: dict[str, object] = {}


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
    if types or any("@kw" in p or "@key" in p or "@lisp" in p for p in patterns[1 if types else 0 :]):
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


def node_text(node) -> str:
    return node.text.decode("utf-8", "replace")


# Nodes whose text is their own, not their children's: YAML's `run: |` block has one child, the `|`,
# and ended on that line (a workflow job lost its last line to a chunk of its own).
_TEXT_NODES = frozenset(("block_scalar",))


def end_row(node) -> int:
    """The row of the node's last token. Some grammars end a node where the next one begins:
    Scala's indentation-delimited body runs to the next line's indentation (a `def` without braces
    took the next `def`'s first line), others to the next line's start."""
    while node.child_count and node.type not in _TEXT_NODES:
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
    if found is not None:
        # R's `function` keyword sits in that field: an anonymous function (`list(value = function()
        # count)` was named by the first identifier of its body); a binding names one that has a name
        return found if found.is_named else None
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


def handed_on(node) -> list:
    """The comments a definition ends with that document the definition after it: Scala's grammar
    puts the next method's doc comment inside a brace-less body (`def x: T =` then an indented
    block). Only comments indented no deeper than the definition itself, with code before them
    and a definition right after them; [] when there are none."""
    following, last = node.next_named_sibling, node
    for _ in range(MAX_DEPTH):  # the last member of a body: what follows the body's owner (an enum's
        if following is not None or last.parent is None:  # method took the next class's documentation)
            break
        last = last.parent
        following = last.next_named_sibling
    if following is None or (following.type not in _KINDS and not wraps(following)):
        return []
    inner = node
    for _ in range(MAX_DEPTH):
        kids = inner.children
        i = len(kids)
        while i > 0 and is_prefix(kids[i - 1]):
            i -= 1
        if i < len(kids):
            first = kids[i]
            if i > 0 and first.start_point[0] > node.start_point[0] and first.start_point[1] <= node.start_point[1]:
                return list(kids[i:])
            return []
        if not kids or kids[-1].type in TEXT_NODES:
            return []
        inner = kids[-1]
    return []


def row_before(node, stop: int) -> int:
    """The last row of the node's text before byte `stop` (a row a handed-on comment starts)."""
    row = node.start_point[0]
    for child in node.children:
        if child.start_byte >= stop:
            break
        row = max(row, row_before(child, stop) if child.end_byte > stop else end_row(child))
    return row


def _binds_import(node) -> bool:
    return _IMPORT_ALIAS.match(node_text(node)[:300]) is not None


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


type_name = _last_word  # (what the chunker reads a qualified name's owner by)
_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")  # `FOLLY_NOINLINE`, `MYLIB_API`: a macro the grammar takes for a type


def _exports_named_function(node) -> bool:
    """`module.exports = function renderFile(...)` (CommonJS): the module's export object is no
    name of the function, its own name is (the binding named the chunk `exports`); the binding
    still spans the definition."""
    if node.type != "assignment_expression":
        return False
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return (left is not None and right is not None and right.type == "function_expression"
            and right.child_by_field_name("name") is not None and node_text(left) in ("module.exports", "exports"))


# (parent, node) types of other grammars' nodes that share a definition's type but define nothing
# of their own: Solidity's `using ShareMath for uint256` (a type_alias), Fortran's `function`
# header statement (the `function` around it is the definition: it was counted twice), the type of
# an Objective-C `@property NSString *body` (the property is the member: NSString was a struct).
_PARTS_NOT_DEFINITIONS = frozenset({("using_directive", "type_alias"), ("function", "function_statement"),
                                    ("property_declaration", "struct_declaration")})


_RESOURCE_KIND = re.compile(r"[A-Z][A-Za-z0-9]{1,60}")


def _mapping_pairs(node) -> list:
    """The pairs of the block mapping a YAML document or block node holds."""
    block = next((c for c in node.named_children if c.type == "block_node"), node if node.type == "block_node" else None)
    mapping = next((c for c in block.named_children if c.type == "block_mapping"), None) if block is not None else None
    return [p for p in mapping.named_children if p.type == "block_mapping_pair"] if mapping is not None else []


def _pair_value(pairs: list, key: str):
    for pair in pairs:
        k, v = pair.child_by_field_name("key"), pair.child_by_field_name("value")
        if k is not None and v is not None and node_text(k).strip().strip("\"'") == key:
            return v
    return None


def _resource(document) -> Definition | None:
    """A YAML document declaring a resource by `kind` (and `metadata.name`): Kubernetes' manifests,
    kustomize's and Helm's files; None for any other document."""
    pairs = _mapping_pairs(document)
    kind_node = _pair_value(pairs, "kind")
    if kind_node is None or kind_node.type != "flow_node":
        return None
    kind = node_text(kind_node).strip().strip("\"'")
    if not _RESOURCE_KIND.fullmatch(kind):
        return None
    name = ""
    metadata = _pair_value(pairs, "metadata")
    if metadata is not None and metadata.type == "block_node":
        name_node = _pair_value(_mapping_pairs(metadata), "name")
        if name_node is not None and name_node.type == "flow_node":
            name = node_text(name_node).strip().strip("\"'")
            if "\n" in name or "{" in name or len(name) > 100:
                name = ""
    display = f"{kind} {name}" if name else kind
    return Definition(name or kind, display, "section", document.start_point[0], end_row(document),
                      kind_node.start_point[0], (document.start_byte, document.end_byte))


def _definition(node, captures) -> Definition | None:
    node_type = node.type
    if captures.get("resource"):
        return _resource(node)
    key = captures.get("key")
    if key:  # a config section
        display = node_text(key[0]).strip().strip("\"'")
        name = display.rsplit(".", 1)[-1]
        if node.type == "block":  # HCL: the block type and its labels, `resource aws_s3_bucket logs`
            labels = [node_text(c).strip("\"") for c in node.named_children[1:] if c.type in ("string_lit", "identifier")]
            display = " ".join([display, *labels])
            name = labels[-1] if labels else display
        if not display or "\n" in display or len(display) > 120:
            return None
        return Definition(name, display, "section", node.start_point[0], end_row(node),
                          key[0].start_point[0], (node.start_byte, node.end_byte))
    lisp = captures.get("lisp")
    if lisp:  # Clojure's `(defn parse-path ...)`: a list whose head says what its second item defines
        name_node = captures.get("name", (None,))[0]
        kind = _LISP_KINDS.get(node_text(lisp[0]))
        if name_node is None or kind is None:
            return None
        display = node_text(name_node)
        if "\n" in display or len(display) > 120:
            return None
        return Definition(display, display, kind, node.start_point[0], end_row(node), name_node.start_point[0])
    kw = captures.get("kw")
    if kw:  # an Elixir `def`/`defmodule` call: the name is its first argument
        keyword = node_text(kw[0])
        args = next((c for c in node.named_children if c.type in ("arguments", "argument_list")), None)
        if args is None or not args.named_children:
            return None
        first = args.named_children[0]
        if keyword in _TEST_BLOCKS:  # labels, no identifier they define
            display = f"{keyword} {node_text(first)}"
            if "\n" in display or len(display) > 120:
                display = keyword
            return Definition(display, display, "test", node.start_point[0], end_row(node), node.start_point[0],
                              (node.start_byte, node.end_byte))
        if first.type == "call":
            first = first.child_by_field_name("target") or first
        elif first.type == "binary_operator":  # `def a when guard`
            first = first.child_by_field_name("left") or first
            if first.type == "call":
                first = first.child_by_field_name("target") or first
        display = node_text(first)
        name = _last_word(display) if keyword in ("defmodule", "defprotocol", "defimpl") else display
        if keyword == "defimpl":  # `defimpl String.Chars, for: Bank.Account`, as Rust's impls read
            target = next((node_text(pair.named_children[-1]) for pair in args.named_children[1:2]
                           for pair in pair.named_children if pair.type == "pair" and pair.named_child_count
                           and node_text(pair.named_children[0]).strip().startswith("for")), "")
            display = f"impl {display} for {target}" if target else f"impl {display}"
        if not name or "\n" in display or len(display) > 120:
            return None
        kind = _ELIXIR_KINDS.get(keyword, "function")
        return Definition(name, display, kind, node.start_point[0], end_row(node), first.start_point[0])
    if node_type == "impl_item":
        target = node.child_by_field_name("type")
        trait = node.child_by_field_name("trait")
        if target is None:
            return None
        name = _last_word(node_text(target))
        display = f"impl {node_text(trait)} for {node_text(target)}" if trait is not None else f"impl {node_text(target)}"
        d = Definition(name, display, "impl", node.start_point[0], end_row(node), target.start_point[0])
        d.instance = True  # see _EXTENDS
        return d
    if node_type == "extension_definition":  # Scala 3 `extension (s: String)`: methods added to String
        params = node.child_by_field_name("parameters")
        first = params.named_children[0] if params is not None and params.named_children else None
        target = first.child_by_field_name("type") if first is not None else None
        if target is None:
            return None
        name = _last_word(node_text(target))
        d = Definition(name, f"extension {node_text(target)}", "impl", node.start_point[0], end_row(node),
                       target.start_point[0])
        d.instance = True  # see _EXTENDS
        return d
    if node_type == "value_definition":  # OCaml's `let apply t amount = ...` of a module or file
        if node.parent is None or node.parent.type not in ("structure", "compilation_unit"):
            return None  # a local `let ... in`
        binding = next((c for c in node.named_children if c.type == "let_binding"), None)
        name_node = binding.child_by_field_name("pattern") if binding is not None else None
        if name_node is None or name_node.type != "value_name":
            return None  # `let () = ...`, a tuple
        function = any(c.type == "parameter" for c in binding.named_children)
        return Definition(node_text(name_node), node_text(name_node), "function" if function else "constant",
                          node.start_point[0], end_row(node), name_node.start_point[0])
    if node_type == "instance":  # Haskell `instance Show T`
        cls = node.child_by_field_name("name")
        if cls is None:
            return None
        # `instance (FromJSON a, FromJSON b) => FromJSON (a, b)`: the class and the type, not the
        # context (its first words named neither, and cut there, its brackets did not close).
        head = " ".join(node_text(node).split("where", 1)[0].split())
        if "=>" in head:
            head = "instance " + head.rsplit("=>", 1)[1].strip()
        words = head.split()
        display = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
        d = Definition(node_text(cls), display, "impl", node.start_point[0], end_row(node), cls.start_point[0])
        d.instance = True
        return d
    if node_type.endswith("_specifier") and node.child_by_field_name("body") is None:
        return None  # C's `struct buffer *buf` names a type, it does not define one
    span_node = node
    if node_type == "VarDecl" and (node.parent is None or node.parent.type != "Decl"):
        return None  # a Zig local, not a declaration of its container
    if node_type in ("FnProto", "VarDecl") and node.parent is not None and node.parent.type == "Decl":
        span_node = node.parent  # Zig: the declaration holds the prototype and the body
        container = _ZIG_CONTAINER.match(node_text(node)[:300]) if node_type == "VarDecl" else None
        if container:  # `const Color = enum(u8) {...}`: an enum, the others structs
            node_type = "enum_item" if container.group(1) == "enum" else "struct_item"
    if node_type == "function_declaration" and node.parent is not None and node.parent.type == "function_definition":
        span_node = node.parent  # Vim: the declaration line is the head of a definition holding the body
    if node_type in _MEMBERS:
        return _member(node)
    if node_type == "function_expression" and node.parent is not None and node.parent.type in _BINDS_FUNCTION:
        return None  # `res.download = function download()`: the binding names it (and is captured)
    if node_type == "TestDecl":  # Zig `test "resolve" {`: a label for its chunk, no identifier it defines
        title = next((c for c in node.named_children if "STRINGLITERAL" in c.type or c.type == "IDENTIFIER"), None)
        display = f"test {node_text(title)}" if title is not None else "test"
        if "\n" in display or len(display) > 120:
            display = "test"
        return Definition(display, display, "test", node.start_point[0], end_row(node), node.start_point[0],
                          (node.start_byte, node.end_byte))
    if node_type == "function_definition":
        head = _annotation_head(node)
        if head is not None:
            return _annotated_function(*head, node)
        test = _macro_test(node) or _attributed_class(node)
        if test is not None:
            return test
    if node_type in ("bind", "signature") and (node.parent is None or node.parent.type not in _HASKELL_TOP):
        return None  # a local binding, or `(x :: Double)` annotating a pattern
    if node_type == "bind":
        name_node = node.child_by_field_name("name")
        if name_node is None or name_node.type != "variable":
            return None  # `(a, b) = ...` binds a pattern, not a name
        if end_row(node) == node.start_point[0]:  # `limit = 3`: a value
            return Definition(node_text(name_node), node_text(name_node), "constant", node.start_point[0],
                              node.start_point[0], name_node.start_point[0], (node.start_byte, node.end_byte))
    data = captures.get("data")
    if data:  # a C table (above), named by its declarator; over lines, its chunk's label
        outer = node.parent
        while outer is not None and outer.type in _FILE_LEVEL:
            outer = outer.parent
        name_node = _descend(data[0], _IDENTIFIERS, "declarator") if outer is None else None
        if name_node is None:
            return None  # a function's local
        return Definition(node_text(name_node), node_text(name_node),
                          "variable" if end_row(node) > node.start_point[0] else "constant", node.start_point[0],
                          end_row(node), name_node.start_point[0], (node.start_byte, node.end_byte))
    table = captures.get("table")
    if table:  # Lua's `M.member = { ... }`: a value, named; with lines of code in it, a member
        display = node_text(table[0]).strip()
        name = _last_word(display)
        if not name or "\n" in display or len(display) > 120:
            return None
        return Definition(name, display, "property" if end_row(node) > node.start_point[0] else "constant",
                          node.start_point[0], end_row(node), table[0].start_point[0],
                          (node.start_byte, node.end_byte))
    named = captures.get("name")  # a pattern that says which node names the function (Lua)
    if named or node_type in _CLOSURE_TYPES:
        name_node = named[0] if named else node.child_by_field_name("name") or \
            node.child_by_field_name("pattern") or node.child_by_field_name("left") or \
            node.child_by_field_name("property")
        if _exports_named_function(node):
            name_node = node.child_by_field_name("right").child_by_field_name("name")
        kind = "function"
    else:
        if node_type == "rule" and _child_name(node) is None:
            return None  # F#'s match arm (`| Paid _ -> ...`), not a Make target
        if node.parent is not None and (node.parent.type, node_type) in _PARTS_NOT_DEFINITIONS:
            return None
        if node_type == "function_declaration" and node.parent is not None and node.parent.type == "function_body" \
                and any(c.type == "keyword_declare" for c in node.parent.children):
            return None  # a variable a SQL function DECLAREs
        name_node = _name_node(node)
        if node_type == "function_definition" and name_node is not None:
            name_node = _annotated_name(node, name_node)
        kind = _KINDS.get(node_type, "")
        if name_node is None and node_type in _NAMED_BY_CHILD:
            name_node = _child_name(node)
            if name_node is None and node_type == "struct_definition":  # Julia `struct Point{T<:Real}`, `struct A <: B`
                name_node = _descend(next((c for c in node.named_children if c.type == "type_head"), None))
            if node_type == "rule" and name_node is not None and node_text(name_node).startswith("."):
                return None  # `.PHONY:`, `.SUFFIXES:`: directives to make, not targets
    if name_node is None or not kind:
        return None
    if node_type == "type_spec":  # Go's `type Engine struct {...}` is a struct, `type Handler interface` an interface
        shape = node.child_by_field_name("type")
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(shape.type if shape is not None else "", kind)
    if node_type == "class_declaration":  # Kotlin and Swift say what it is with a keyword
        keyword = next((c.type for c in node.children[:4] if not c.is_named and c.type in _CLASS_KEYWORDS), "")
        kind = _CLASS_KEYWORDS.get(keyword, kind)
    if kind == "constant" and _binds_import(span_node):
        return None
    display = node_text(name_node).strip()
    if name_node.type == "qualified_identifier" and " " in display:
        # `CordRep* absl_nonnull Cord::TakeRep()`: a nullability macro read as the first scope,
        # the real one in an ERROR after it (the scope path was `absl_nonnull Cord::TakeRep`)
        misread = next((c for c in name_node.named_children if c.type == "ERROR"), None)
        if misread is not None:
            display = node_text(name_node)[misread.start_byte - name_node.start_byte:].strip() \
                if name_node.text.isascii() else display
    if "\n" in display or len(display) > 120:
        return None
    # A shell or PowerShell function's name is all of it (`_bash-it-component-help`, `git::status`,
    # `Remove-ExpiredBackup`), as the definition patterns read it.
    # A Lisp's symbol too (`my-mode-setup`).
    name = _last_word(display) if name_node.type not in _IDENTIFIERS_PLAIN else display
    if display.rsplit("::", 1)[-1].lstrip().startswith("~") and name and not name.startswith("~"):
        name = "~" + name  # a C++ destructor, `~Socket`, `Socket::~Socket`: not its class's name
    if name in ("operator", "operator!"):
        # C++'s `operator==`: the symbol is the name (`operator` alone named every operator of a
        # class, and `operator!=` came out as `operator!`); a conversion (`operator bool`) stays `operator`.
        name = operator_name(display) or name
    if not name:
        return None
    if node_type in ("method_declaration", "function_declaration"):
        # Go: `func (s *Server) Serve()` is Server.Serve; Kotlin: `fun Conn.describe()` is Conn.describe
        receiver = node.child_by_field_name("receiver")
        if receiver is not None and "->" not in node_text(receiver):  # (Kotlin's `(suspend () -> T).x`: a
            # function type, no owner; its first word was taken for one, `suspend.startCoroutineCancellable`)
            owner = _last_word(node_text(receiver).replace("*", " ").strip("() ")).rstrip("?")  # Kotlin `String?`
            owner = _bound_of(node, owner)
            if owner:
                display = f"{owner}.{name}"
    start = span_node.start_point[0]
    parent = span_node.parent
    if parent is not None and wraps(parent):  # decorators, `export`, `template<...>`
        start = parent.start_point[0]
    last = span_node
    if node_type in _SIGNATURES:
        # Dart: the body is the signature's sibling, not its child (a method's: its method_signature's)
        holder = last.parent if last.parent is not None and last.parent.type in _SIGNATURES else last
        if holder.next_named_sibling is not None and holder.next_named_sibling.type == "function_body":
            last = holder.next_named_sibling
    found = Definition(name, display if display != name else name, kind, start, end_row(last),
                       name_node.start_point[0], (span_node.start_byte, last.end_byte))
    found.declaration = _overload(span_node, parent, name) or _trait_binding(node)
    found.instance = kind == "impl" and node_type in _EXTENDS
    if node_type == "function_definition":
        returned = node.child_by_field_name("type")
        found.returns = returned is not None and not _MACRO_NAME.fullmatch(node_text(returned))
    if node_type in _PARTIAL_TYPES and any(c.type == "modifier" and node_text(c) == "partial" for c in node.children):
        found.partial = True  # see continuations
    return found


_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_MACRO_CALL = re.compile(r"[A-Z][A-Z0-9_]*\([^;{}]*\)")
_ANNOTATED_HEADS = frozenset({"field_declaration", "declaration", "expression_statement", "ERROR"})
# The end of a function's head: its (qualified) name, its parameters, its qualifiers
_DECLARED_HEAD = re.compile(r"((?:[A-Za-z_]\w*::)*(?:~?[A-Za-z_]\w*|operator\s*(?:\(\)|\[\]|[^\s\w(]+|\w+)))\s*"
                            r"\((?:[^();{}]|\([^();{}]*\))*\)"
                            r"(?:\s*(?:const|noexcept|override|final|volatile|&&|&))*\s*\Z")
# Name nodes that are the name whole (a qualified one's name is its last word)
_IDENTIFIERS_PLAIN = frozenset({"identifier", "type_identifier", "simple_identifier", "constant", "name", "variable",
                                "word", "function_name", "symbol"})


def _annotation_head(node):
    """C++'s `void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { ... }`: the grammar reads the
    annotation macro after the parameters as a function of that name holding the body, and the
    head before it as a node of its own (a declaration, an expression, an ERROR), unended, on the
    same line or the one before. (head node, its name as written), else None."""
    declarator = node.child_by_field_name("declarator")
    if node.child_by_field_name("type") is not None or declarator is None or declarator.type != "function_declarator":
        return None
    macro = declarator.child_by_field_name("declarator")
    if macro is None or macro.type != "identifier" or not _MACRO_NAME.fullmatch(node_text(macro)):
        return None
    head, row = node.prev_named_sibling, node.start_point[0]
    # (More annotations before this one read as calls: `ABSL_UNLOCK_FUNCTION(mutex)`, unended.)
    while head is not None and head.type == "expression_statement" and row - head.end_point[0] <= 1 \
            and _MACRO_CALL.fullmatch(node_text(head).strip()):
        head, row = head.prev_named_sibling, head.start_point[0]
    outer = head
    if head is not None and head.type == "template_declaration" and head.named_child_count:
        head = head.named_children[-1]  # `template <typename T>\nvoid reduce(T* out) ABSL_...(mu) {`
    if head is None or head.type not in _ANNOTATED_HEADS or row - head.end_point[0] > 1:
        return None
    found = _DECLARED_HEAD.search(node_text(head))
    if found is None or _MACRO_NAME.fullmatch(found.group(1).rsplit("::", 1)[-1]):
        return None  # ended (`;`), or no declarator's head (`int* p ABSL_PT_GUARDED_BY(mu){nullptr}`)
    return outer, found.group(1)


def _annotated_function(head, display: str, node) -> Definition | None:
    """The function an annotated head and its body define (`_annotation_head`), named by the head."""
    name = display.rsplit("::", 1)[-1]
    start = head.start_point[0]
    if head.parent is not None and wraps(head.parent):
        start = head.parent.start_point[0]
    return Definition(name, display if display != name else name, "function", start, end_row(node),
                      head.end_point[0], (head.start_byte, node.end_byte))


def _annotated_name(node, name_node):
    """C++'s `inline void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {`, read as a function named by the
    annotation macro with the real declarator in an ERROR before it: that declarator's name, else
    name_node."""
    if not _MACRO_NAME.fullmatch(node_text(name_node)):
        return name_node
    # (the ERROR is the definition's child, or a sibling of the name in a `T&` declarator)
    holders = [node] + ([name_node.parent] if name_node.parent is not None and name_node.parent != node else [])
    for child in (c for holder in holders for c in holder.named_children):
        if child.start_byte >= name_node.start_byte:
            continue
        if child.type == "ERROR":  # (`lock()` is an init_declarator to the grammar as often)
            declarator = next((c for c in child.named_children if c.type in ("function_declarator", "init_declarator")),
                              None)
            inner = declarator.child_by_field_name("declarator") if declarator is not None else None
            if inner is not None and inner.type in _IDENTIFIERS:
                return inner
    return name_node


def _bound_of(node, owner: str) -> str:
    """A Kotlin receiver that is the function's own type parameter (`fun <P : Pipeline<*>> P.install(`)
    is its bound's type (`Pipeline`), or none (`fun <T> T.also(`): `P.install` named no scope."""
    params = next((c for c in node.named_children if c.type == "type_parameters"), None)
    if params is None:
        return owner
    for param in params.named_children:
        named = [c for c in param.named_children if c.type in ("type_identifier", "user_type", "nullable_type")]
        if named and node_text(named[0]) == owner:
            bound = node_text(named[1]).rstrip("?") if len(named) > 1 else ""  # (`T : Closeable?`)
            return _last_word(bound.split("<", 1)[0]) if bound and bound != "Any" else ""
    return owner


def _macro_test(node) -> Definition | None:
    """A C or C++ block a macro defines (GoogleTest's `TEST(Uint128, AliasTests) { ... }`, its
    TEST_F and TYPED_TEST, benchmark and fuzzing macros): no return type, an upper-case name,
    arguments that are bare names. It is named by them, `Uint128.AliasTests` (every such block was
    `TEST`, so a file's tests could not be told apart and `TEST` was a definition in each)."""
    declarator = node.child_by_field_name("declarator")
    if node.child_by_field_name("type") is not None or declarator is None or declarator.type != "function_declarator":
        return None
    macro, params = declarator.child_by_field_name("declarator"), declarator.child_by_field_name("parameters")
    if macro is None or params is None or macro.type != "identifier" or not _MACRO_NAME.fullmatch(node_text(macro)):
        return None
    names = []
    for param in params.named_children:
        kind = param.child_by_field_name("type")
        if param.type != "parameter_declaration" or param.child_by_field_name("declarator") is not None \
                or kind is None or kind.type not in ("type_identifier", "identifier"):
            return None
        names.append(node_text(kind))
    if not names:
        return None
    display = ".".join(names)
    return Definition(names[-1], display, "test", node.start_point[0], end_row(node), macro.start_point[0],
                      (node.start_byte, node.end_byte))


# `class ABSL_LOCKABLE Mutex {`, `struct GTEST_API_ TestInfo : Base {`: a class whose head holds
# macros (export, attribute, annotation ones) the grammar cannot expand; it reads a function.
_ATTRIBUTED_CLASS = re.compile(
    r"(class|struct|union)\s+(?:[A-Z][A-Z0-9_]*(?:\([^()]*\))?\s+)+([A-Za-z_]\w*)\s*(?:<[^{;]*>\s*)?(?:final\s*)?"
    r"(?::[^{;]*)?")


def _attributed_class(node) -> Definition | None:
    """A C++ class the grammar read as a function returning `class MACRO` named by the class's name:
    the class, named by the word before its bases and body (abseil's `Mutex` was the function
    `ABSL_ATTRIBUTE_WARN_UNUSED`, and `class Mutex` found nothing)."""
    head, body = node.child_by_field_name("type"), node.child_by_field_name("body")
    if head is None or body is None or head.type not in ("class_specifier", "struct_specifier", "union_specifier") \
            or head.child_by_field_name("body") is not None:
        return None
    text = node.text[:body.start_byte - node.start_byte].decode("utf-8", "replace").strip()
    found = _ATTRIBUTED_CLASS.fullmatch(text)
    if found is None:
        return None
    name = found.group(2)
    start = node.parent.start_point[0] if node.parent is not None and wraps(node.parent) else node.start_point[0]
    row = node.start_point[0] + text[:found.start(2)].count("\n")
    return Definition(name, name, _KINDS.get(head.type, "class"), start, end_row(node), row,
                      (node.start_byte, node.end_byte))


# A C# partial type in a file named as one part of the type (`JsonTextReader.Async.cs` beside
# `JsonTextReader.cs`) continues a type declared elsewhere: its first chunk (usings and a first
# member) took the type's definition term, and beat the class itself. Swift's extensions were
# treated alike and measured no better (an agent's error message lost the extension holding it).
_PARTIAL_TYPES = frozenset({"class_declaration", "struct_declaration", "interface_declaration", "record_declaration"})


def _equation_of(node, d: Definition, equations: dict) -> Definition | None:
    """The Haskell function a further equation of it is (`f [] = ...` after `f (x:xs) = ...`,
    comments or a pragma between them), else None: each equation defined the name apart, and the
    densest of pandoc's 30 `getDefaultExtensions "html" = ...` lines outranked the one after the
    signature."""
    before = node.prev_named_sibling
    while before is not None and ("comment" in before.type or before.type in ("pragma", "haddock")):
        before = before.prev_named_sibling
    if before is None or before.type not in ("function", "bind"):
        return None
    head = equations.get((before.start_byte, before.end_byte, before.type))
    return head if head is not None and head.name == d.name else None


def continuations(defs: list[Definition], path: str) -> None:
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
        return any(c.type == "decorator" and _OVERLOAD_DECORATOR.search(node_text(c)) for c in wrapper.children)
    if node.type not in _SIGNATURES:
        return False
    outer = wrapper if wrapper is not None and wraps(wrapper) else node
    following = outer.next_named_sibling
    while following is not None:
        inner = following.named_children[-1] if wraps(following) and following.named_child_count else following
        if inner.type in _IMPLEMENTATIONS:
            named = inner.child_by_field_name("name")
            return named is not None and node_text(named) == name
        if inner.type not in _SIGNATURES and following.type != "comment":
            return False
        following = following.next_named_sibling
    return False


def _objc_property_name(node):
    """The identifier an Objective-C `@property (copy) NSString *body;` declares (`body`), or None."""
    found = next((c for c in node.named_children if c.type == "struct_declaration"), None)
    found = next((c for c in found.named_children if c.type == "struct_declarator"), None) if found is not None else None
    return _descend(found, _IDENTIFIERS, "declarator")


def _member(node) -> Definition | None:
    """A property, event, indexer or operator: `Name`, `this[]`, `operator +`, `explicit operator int`."""
    node_type = node.type
    if node.parent is None or node.parent.type not in _MEMBER_HOLDERS:
        return None  # a Swift `let` inside a function is a local
    name_node = node.child_by_field_name("name")
    if node_type in ("val_declaration", "var_declaration") and node.parent.type != "template_body":
        return None  # (Go's `var x int` is a binding: _bindings; only Scala's abstract members here)
    if node_type in ("val_definition", "var_definition"):  # Scala: one name, not a pattern (`val (a, b) =`)
        name_node = node.child_by_field_name("pattern")
        if name_node is None or name_node.type != "identifier":
            return None
    if name_node is None and node_type == "property_declaration":  # Kotlin: `val timeout: Int`
        declaration = next((c for c in node.named_children if c.type == "variable_declaration"), None)
        name_node = next((c for c in declaration.named_children if c.type in _IDENTIFIERS), None) \
            if declaration is not None else _objc_property_name(node)
    if node_type == "indexer_declaration":
        name, display, row = "this", "this[]", node.start_point[0]
    elif node_type in ("operator_declaration", "conversion_operator_declaration"):
        head = node_text(node).split("(", 1)[0]
        words = head.split("operator", 1)
        target = " ".join(words[1].split()) if len(words) == 2 else ""
        if not target or len(target) > 60:
            return None
        kind_word = next((w for w in ("implicit", "explicit") if w in words[0].split()), "")
        # `operator ==` is named `operator==`, as C++'s; a conversion (`operator int`) `operator`.
        name = operator_name(f"operator {target}") or "operator"
        display, row = f"{kind_word} operator {target}".strip(), node.start_point[0]
    elif name_node is not None:
        name = display = node_text(name_node).strip()
        row = name_node.start_point[0]
        if not name or "\n" in name or len(name) > 120 or not _LAST_WORD.fullmatch(name):
            return None
    else:
        return None
    kind = _KINDS[node_type]
    if kind == "property" and end_row(node) == node.start_point[0]:
        kind = "constant"  # `public string Name { get; set; }`: a value, not code
    return Definition(name, display, kind, node.start_point[0], end_row(node), row,
                      (node.start_byte, node.end_byte))


def _bindings(root) -> list[Definition]:
    """Module-level bindings (`MAX = 3`, `export const x = ...`, Go `var`/`const`)."""
    out = []
    for child in root.named_children:
        while wraps(child) or (child.type == "expression_statement" and child.named_child_count == 1):
            inner = child.named_children[-1] if child.named_child_count else None
            if inner is None or inner.type == child.type:
                break
            child = inner
        if child.type not in _BINDINGS or _binds_import(child):
            continue
        holders = [child] if child.type == "assignment" else [
            c for c in child.named_children if c.type in _BINDING_NAMES]
        for group in (c for c in child.named_children if c.type == "var_spec_list"):  # Go's `var (` group
            holders += [c for c in group.named_children if c.type in _BINDING_NAMES]
        if child.type == "property_declaration":  # Kotlin/Swift `val x = ...`
            holders = [child]
        for holder in holders:
            if holder.type in ("const_spec", "var_spec"):  # Go's `B, C = 2, 3` names each
                for target in holder.children_by_field_name("name")[1:]:
                    name = _last_word(node_text(target))
                    if name:
                        out.append(Definition(name, name, "constant", child.start_point[0], end_row(child),
                                              target.start_point[0], (child.start_byte, child.end_byte)))
            target = holder.child_by_field_name("name") or holder.child_by_field_name("left") or \
                holder.child_by_field_name("pattern")
            if target is None:
                target = next((c for c in holder.named_children if c.type in _IDENTIFIERS), None)
                if target is None:
                    nested = next((c for c in holder.named_children if c.type == "variable_declaration"), None)
                    target = next((c for c in nested.named_children if c.type in _IDENTIFIERS), None) if nested else None
            if target is None or target.type not in _IDENTIFIERS:
                continue
            name = _last_word(node_text(target))
            if name:
                row = target.start_point[0]
                out.append(Definition(name, name, "constant", child.start_point[0], end_row(child), row,
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
    d.end = max(d.end, (following.start_point[0] - 1) if following is not None else end_row(root))
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
    out = bytearray(blank(source))
    for _head, first, last, _end in bodies:
        out[first:last] = source[first:last]
    for head, first, last, end in bodies:  # a nested macro's head and delimiters were copied with its parent's body
        out[head:first] = blank(source[head:first])
        out[last:end] = blank(source[last:end])
    return bytes(out)


def blank(data: bytes) -> bytes:
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
        equations: dict[tuple, Definition] = {}  # Haskell: by equation node, the function it is of
        for _pattern, captures in (match for root in roots for match in cursor.matches(root)):
            for node in captures.get("def", ()):
                key = (node.start_byte, node.end_byte, node.type)
                if key in seen or node in roots:
                    continue
                seen.add(key)
                d = _definition(node, captures)
                if d is not None and d.name in _STATEMENT_WORDS.get(grammar, ()):
                    d = None  # see _STATEMENT_WORDS
                if d is not None and grammar == "haskell" and node.type == "signature" and is_prefix(node):
                    continue  # the first line of the function that follows (is_prefix), not one of its own
                if d is not None and grammar == "haskell" and node.type in ("function", "bind"):
                    head = _equation_of(node, d, equations)
                    equations[key] = head or d
                    if head is not None:  # a further equation: the function defined once, from its first
                        head.end, head.bytes = max(head.end, d.end), (head.bytes[0], node.end_byte)
                        continue
                if d is not None:
                    d.key = (node.start_byte, node.end_byte)
                    if node.type in ("FnProto", "VarDecl") and node.parent is not None and node.parent.type == "Decl":
                        d.key = (node.parent.start_byte, node.parent.end_byte)  # Zig: the splitter meets the Decl
                    if d.bytes == (0, 0):
                        d.bytes = d.key
                    if d.kind == "namespace" and node.child_by_field_name("body") is None \
                            and not any(c.type == "block" for c in node.named_children):  # Perl's `package X { }`
                        _to_next_namespace(d, node, tree.root_node)
                    handed = handed_on(node) if d.end > d.start else []
                    if handed:  # the next definition's documentation is not this one's
                        d.end = max(d.start, row_before(node, handed[0].start_byte))
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
        # Two bindings of one group (Go's `var ( JSON ...; XML ... )`) share its span: neither holds
        # the other (XML was `JSON.XML`, a group's eighth `JSON.XML.Form.Query....MsgPack`).
        while stack and not (stack[-1].start <= d.start and d.end <= stack[-1].end and stack[-1] is not d
                             and stack[-1].bytes[0] <= d.bytes[0] and d.bytes[1] <= stack[-1].bytes[1]
                             and not (stack[-1].kind == d.kind == "constant" and stack[-1].bytes == d.bytes)):
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
