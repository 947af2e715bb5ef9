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
Markdown and reStructuredText are chunked by headings (`markdown.py`, standard library). Parsing
is `parsing.py`'s job, naming what a tree defines `definitions.py`'s; this module cuts and labels.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import replace
from itertools import accumulate

from ..languages import CODE, from_content
from ..notebook import with_headings
from ..read import split_lines
from ..records import Chunk
from .definitions import (MACRO_DEPTH, MAX_DEPTH, TEXT_NODES, Definition, blank, continuations, definitions,
                          end_row, handed_on, is_prefix, knows_definitions, macro_items, node_text, row_before,
                          type_name, wraps)
from .grammars import HEADING_LANGUAGES, grammar_for
from .lines import ChunkingPolicy, chunk_lines
from .parsing import Allowance, parse

ALONE_SHARE = 0.5  # a definition at least this share of the budget is a chunk of its own
MIN_SPAN = 300  # a span smaller than this (in characters) joins a neighbour
_MAX_WRAPPED = 16  # a wrapper's parent holds it and a few comments: a long list is none (and not scanned)

# A definition this far over the budget, most of it documentation, stays whole: cut, a Javadoc
# longer than its three-line method was a chunk of its own and the method joined the next Javadoc.
WHOLE_SLACK = 1.25
UNEVEN = 2  # pieces of one run of a split node are cut evenly when one is below 1/this of their mean
# The evening's work a file may take (items times max_lines): a real file's split bodies take a few
# hundred thousand; a generated one of tiny statements took tens of millions (tens of seconds).
EVENING_WORK = 4_000_000
TINY = 48  # a span this small (in characters) joins its predecessor (a closing brace, `end`)

# tree-sitter-yaml's scanner crashes the process (SIGSEGV, no exception) past about 255 nested
# block collections, by indentation or by compact `- - -` on one line: such a file is cut by lines.
MAX_YAML_NESTING = 128
_YAML_COMPACT = re.compile(r"(?:[-?][ \t]+)*")
_BARE_MACRO_LINE = re.compile(rb"^[ \t]*[A-Z][A-Z0-9]*_[A-Z0-9_]+[ \t]*(?=\r?$)", re.MULTILINE)
_FUNCTION_LIKE = frozenset({"function", "method", "macro"})

# Constructors not named after their class (Python, JavaScript/TypeScript, Swift, PHP, Ruby).
_CONSTRUCTOR_NAMES = frozenset({"__init__", "__new__", "constructor", "init", "__construct", "initialize"})
_CLOSING = re.compile(r"[\s)\]};,]*(?:(?:end|fi|done|esac|endif|end\w*)[\s)\]};,.]*)*$")
# A line opening a block that goes on below it: `{` (or `(`, `[`) at its end, a Python `:`, Ruby's
# and Elixir's `do`, shell's `then`/`do`, an arrow; a comment may follow.
_OPENS_BLOCK = re.compile(r"(?:[{(\[]|(?<!:):|\bdo(?:\s*\|[^|\n]*\|)?|\bthen|=>|->)[ \t]*(?:(?://|#|--)[^\n]*)?\r?\n?$")
_COMMENT_LINE = re.compile(r"\s*(//|/\*|\*|--|;;|#(?:[ \t!#\[]|$)|@\w|\(\*|{-|\"\"\"|''')")

# The files whose trees the chunker mishandled in this process (the first 100; they fell back to
# lines): the test suite fails on any it did not cause on purpose, as the fallback would hide the bug.
MISHANDLED: list[str] = []


def _definition_keys(node) -> tuple:
    """The byte ranges under which `node` may be a definition: its own and, for a wrapper (an
    export, a decorated definition), the wrapped node's."""
    keys = ((node.start_byte, node.end_byte),)
    if wraps(node) and node.named_child_count:
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
                 lines: list[str], inner=()):
        # defs: byte range of each definition node -> whether it is big enough to stay alone
        self.off = line_offsets
        self.inner = inner  # Rust: trees of the items in macros' bodies (definitions.macro_items), outermost first
        self.lines = lines
        self.budget = budget
        self.max_lines = max_lines
        self.defs = defs
        self.evening = EVENING_WORK  # what _even_run may still spend on this file (see there)
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
        """A node a little over the budget whose documentation is most of it: kept whole. Not only
        a definition: a C `#if` holding a `#define` with its 37 lines of documentation was cut from
        them. (A file's opening comments before a statement are the file's: its licence went with
        the first `#include`.)"""
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
            if is_prefix(child):
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
            handed = handed_on(node)
            stop = handed[0].start_byte if handed else None
        b = end_row(node) if stop is None or stop >= node.end_byte else max(a, row_before(node, stop))
        bare_fits = self.fits(node.start_point[0], b)  # without the comments leading it
        # A split definition's body, or a body's one wrapper (Go's `statement_list`), is spliced even
        # where it fits, when the header could not take it whole: as a unit, gin's `ClientIP` was its
        # documentation and signature alone, its body another chunk.
        spliced = alone is None and depth < MAX_DEPTH and bare_fits and self._wraps_body(node, b)
        if (self.fits(a, b) and not spliced) or (prefix and self._mostly_documentation(a, node, b) and (
                alone is not None or not _opens_file(prefix[0]))):
            # [start, end, is a definition, stays alone, cut by lines]
            items.append([a, b, alone is not None, bool(alone), False])
            return handed
        if prefix and depth == 0 and b == node.start_point[0] and bare_fits and _opens_file(prefix[0]):
            # A file's opening comments too big to take its first line with them (a licence over the
            # budget, then `#include "geo.h"`): cut by lines, the licence broke at the budget and its
            # tail went with the include. They are the file's, in even pieces; the line goes on.
            items.extend([self.FENCE, *self._documentation_items(prefix), self.FENCE])
            items.append([node.start_point[0], b, alone is not None, bool(alone), False])
            return handed
        if b == node.start_point[0] or depth >= MAX_DEPTH or node.child_count == 0 or node.type in TEXT_NODES \
                or self._hides_text(node) or self._opens_text(node):
            items.append([a, b, alone is not None, True, True])  # a leaf too big: cut by lines later
            return handed
        # A decorated or exported definition is fenced once, around its decorators too.
        # (Not again inside a node holding nothing but it, which was fenced with its key: Ruby's
        # `body_statement` around a module's one class. Fenced twice, the class's leading comments
        # were cut from its header.)
        outer = node.parent
        fenced = (alone is not None or wraps(node)) and not (
            outer is not None and (wraps(outer) or (outer.start_byte, outer.end_byte) == (node.start_byte, node.end_byte)))
        # Over the budget only with the comments leading it: the node stays whole after them (split
        # into its children, express's `res.sendFile = function sendFile(...) {` joined its JSDoc
        # and the body was a chunk without its signature; mini.nvim's `MiniPairs.config = {` ended
        # the function before it, and the table was a chunk of its own).
        # Not a file's opening comments before its first node: they are the file's (a Haskell module's
        # documentation went apart from its `module` line, a short chunk that won on its shortness).
        whole = bool(prefix) and not spliced and bare_fits and (
            fenced or not _opens_file(prefix[0]))
        if fenced or whole:
            items.append(self.FENCE)
            if prefix:
                self.leads.append((prefix[0].start_point[0], end_row(prefix[-1]), keys))
            items.extend(self._documentation_items(prefix))
            prefix = []
            if whole:
                items.append([node.start_point[0], b, alone is not None, bool(alone), False])
                items.append(self.FENCE)
                return handed
        # Anything else split (a body, a long statement) adds its children to the sequence; comments
        # before it go to its first child.
        self._flatten(self._items_of(node) or node.children, depth + 1, items, prefix, stop)
        if fenced:
            items.append(self.FENCE)
        return handed

    def _documentation_items(self, prefix: list) -> list[list]:
        """Items of comments apart from what they lead. Documentation too big for the budget is cut
        in even pieces: a block comment by rows, a run of line comments (Ruby's `#`, Lua's `--`: one
        node a line) between its nodes. Cut greedily, the run left a tail of a few lines alone
        (rails' MiddlewareStackProxy)."""
        items: list[list] = []
        rows = [(p.start_point[0], end_row(p)) for p in prefix]
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
        return items

    def _items_of(self, node) -> list | None:
        """A Rust macro's body split by the items in it, its delimiters around them, not by its
        tokens: split by tokens, tokio's `pub struct JoinHandle<T> {` in `cfg_rt! { ... }` ended a
        chunk and its fields began the next. None for any other node."""
        if node.type != "token_tree" or not self.inner or node.child_count < 2:
            return None
        first, last = node.children[0], node.children[-1]
        for tree in self.inner:  # the first whose top level holds items inside this body
            found = [n for n in tree.root_node.children
                     if first.end_byte <= n.start_byte and n.end_byte <= last.start_byte and n.start_byte < n.end_byte]
            if found:
                return [first, *found, last]
        return None

    def _wraps_body(self, node, b: int) -> bool:
        """Whether the node, over more than one row, is a split definition's body (its last part) or
        all a split node holds but comments and the like (a body's wrapper; not the file's one
        node: the root is never split), splitting it loses none of its text, and what holds it, with
        the comments leading it, is too big for its header to take it whole (`_tidy` joins a header
        and its body up to the budget and a small span)."""
        parent = node.parent
        if parent is None or b == node.start_point[0] or node.child_count == 0 or node.type in TEXT_NODES \
                or wraps(node):
            return False
        if any(key in self.defs for key in _definition_keys(parent)) \
                and parent.named_child(parent.named_child_count - 1) == node:
            holder = parent
        elif parent.parent is not None and parent.named_child_count <= _MAX_WRAPPED \
                and all(child == node or is_prefix(child) for child in parent.named_children):
            holder = parent.parent
        else:
            return False
        start = min(self.lead_rows.get(key, holder.start_point[0]) for key in _definition_keys(holder))
        return self.size(start, b) > self.budget + min(MIN_SPAN, self.budget // 4) and not self._hides_text(node)

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
        row, last = node.start_point[0], end_row(node)
        for _ in range(MAX_DEPTH):
            big = None
            for child in node.children:
                end = end_row(child)
                if self.size(child.start_point[0], end) > self.budget:
                    big = child
                    break
                if end > row:
                    return False  # a child before the big one goes past the first row
            if big is None or big.start_point[0] != row or end_row(big) < last:
                return False  # (arguments after a long string: its call is split as before)
            if big.type in TEXT_NODES:
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
            row = max(row, end_row(child))
        return any(self.lines[r].strip() for r in range(row + 1, end_row(node) + 1))

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
            # Only statements: the members of a class or module keep to the greedy cut (its header
            # with its first members, as many as fit). The last piece counts too: left small, it
            # was a chunk of a few lines (689 of 8,732 split functions; gin's
            # findCaseInsensitivePathRec cut 34/19/56/7/63/66 lines), ranked on its length alone.
            run_items = [item for g in groups[i:j] for item in g]
            if len(run) > 2 and UNEVEN * min(sizes) < sum(sizes) / len(run) \
                    and not any(item[2] for item in run_items) and len(run_items) * self.max_lines <= self.evening:
                # (its cost: each item against up to max_lines before it; past the file's allowance the
                # greedy cut stays: 499,000 lines of `;` took 38 s)
                self.evening -= len(run_items) * self.max_lines
                run = self._even_run(run_items, len(run)) or run
            evened.extend(run)
            i = j
        return [[a, b, cut] for a, b, _d, _l, cut in evened]

    def _even_run(self, items: list, count: int) -> list[list] | None:
        """The items in `count` spans that fit (no two definitions together where one stays alone),
        of sizes as even as can be (the least sum of squares); None if they do not go in `count`."""
        n = len(items)
        off, budget, max_lines = self.off, self.budget, self.max_lines  # fits() and size(), inlined: the hot loop
        best: list = [(0, 0, -1)] + [None] * n  # for the first j items: (spans, sum of squares, start of the last)
        for j in range(1, n + 1):
            end, defs, lone, found = -1, 0, False, None
            for i in range(j - 1, -1, -1):
                a, b, is_def, alone, _cut = items[i]
                end = max(end, b)
                defs += is_def
                lone = lone or alone
                size = off[end + 1] - off[a]
                if size > budget or end - a >= max_lines or (defs > 1 and lone):
                    break
                if best[i] is not None:
                    cost = (best[i][0] + 1, best[i][1] + size ** 2, i)
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
    return [0, *accumulate(map(len, lines))]


def _tidy(spans: list[list], lines: list[str], off: list[int], opens, budget: int, min_span: int,
          lead_rows: frozenset = frozenset(), apart=lambda prev, span: False, max_lines: int = 1 << 30,
          starts_on=lambda row: False) -> list[list]:
    """Ordered, disjoint, blank-trimmed spans; tiny tails join their predecessor; comment lines at
    the end of a span move down to the definition they document. Joins keep to the budget and to
    `max_lines` (rows of a few characters each fit any budget). A row two spans share is the
    earlier one's, unless a definition starts on it (`starts_on`) and the later span starts there."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[list] = []
    for a, b, cut in spans:
        if out and a <= out[-1][1]:
            prev = out[-1]
            if a == prev[1] and prev[0] < a and not cut and not prev[2] and starts_on(a):
                # The row opens a definition (Zig's `pub` before `fn name(...) {`, a JS declarator
                # `const onIntersect = (entries) => {`): its signature, not the previous chunk's last
                # line. Given to the earlier span, the definition's chunk began without it.
                prev[1] = a - 1
                while prev[1] > prev[0] and not lines[prev[1]].strip():
                    prev[1] -= 1
            else:
                a = prev[1] + 1
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
            # (The documentation of a definition that fits alone but not with it, too: joined to
            # the chunk before, curl's doc of a function ended the previous function's chunk.)
            if opens(span[0], span[1]) or span[0] in lead_rows:
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
    # A span ending in a line that opens a block whose body starts the next one (`do {`, `} else if
    # (...) {`, `if route.is_json_stream:`): that line, and comments just above it, move down to
    # their body when it still fits (1,440 cuts in a chunk review left a loop's head apart from it).
    for prev, cur in zip(moved, moved[1:]):
        if prev[2] or cur[2] or prev[1] + 1 != cur[0] or not _OPENS_BLOCK.search(lines[prev[1]]):
            continue
        first = prev[1]  # (a head nested in a head, `if a:` over `if b:`, goes down with it)
        while first - 1 > prev[0] and (_OPENS_BLOCK.search(lines[first - 1]) or _COMMENT_LINE.match(lines[first - 1])):
            first -= 1
        # A head over several lines goes whole or not at all: `) -> list[np.ndarray]:` closing a
        # signature went down alone, and the piece before ended inside its parameter list.
        opened = first
        while first > prev[0] and _unclosed(lines, first, prev[1]):
            first -= 1
        if first < opened and off[first] - off[prev[0]] < min_span:
            continue  # (it would leave a class's header line alone: the head stays where it starts)
        if first > prev[0] and fits(first, cur[1], budget + min_span) and not starts_on(cur[0]):
            prev[1], cur[0] = first - 1, first
            while prev[1] > prev[0] and not lines[prev[1]].strip():
                prev[1] -= 1
    return moved


# What brackets in a head's lines do not count in: double-quoted strings and line comments
# (`option: str = "("`, `# (see note`, `int b);// (see`; not `'http://x')`, `'#'`, `${#arr[@]}`;
# not single-quoted strings: Rust's lifetimes, `&'a str`, open none)
_QUOTED_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|(?<![:\w/\'"${])(?:#|//).*')


def _unclosed(lines: list[str], a: int, b: int) -> bool:
    """Whether rows a..b close more brackets than they open (a head's last lines, its opening above)."""
    text = _QUOTED_OR_COMMENT.sub("", "".join(lines[a:b + 1]))
    return sum(text.count(c) for c in ")]") > sum(text.count(c) for c in "([")


# A module header naming the module, in languages whose file says its own name (Haskell's and
# PureScript's `module Data.Aeson.Key where`, Elm's `module Main exposing (..)`): that name, not the path's.
_DECLARED_MODULE = re.compile(r"^(?:> ?)?module[ \t]+([A-Z][\w']*(?:\.[A-Z][\w']*)*)(?![\w.'])", re.MULTILINE)
_BLOCK_COMMENT = re.compile(r"\{-.*?-\}", re.DOTALL)  # (a commented-out header is none)
_DECLARING = frozenset({"haskell", "purescript", "elm"})
_HEADER_LINES = 200  # a module's header comes first, after its pragmas and documentation


def declared_module(language: str, lines) -> str | None:
    """The module name a file declares in its header, for the languages above; None otherwise."""
    if language not in _DECLARING:
        return None
    found = _DECLARED_MODULE.search(_BLOCK_COMMENT.sub("", "".join(lines[:_HEADER_LINES])))
    return found.group(1) if found else None


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

    def wrapper(d: Definition) -> bool:
        """Whether d is a module that is a namespace in all but name: its one member holds all its
        lines but its first and last few (Ruby's `module ActiveSupport` around `class OptionMerger
        ... end`: the whole class was labelled `ActiveSupport`, a module). A class around one
        method is still the class."""
        if d.kind != "module":
            return False
        members = [m for m in candidates if m.parent is d]
        return len(members) == 1 and (d.end - d.start + 1) - led(members[0]) <= WRAPPER_ROWS

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
                and current.kind != "namespace" and (
                    any(k.name in _CONSTRUCTOR_NAMES or _constructor(k) for k in kids if k.start >= a)
                    or len({k.name for k in kids if k.start >= a}) >= 2):
            # The class's header with its constructor (a longer method after it too), or with several
            # of its members (laravel's `interface Mailable` and six signatures was `Mailable.send`;
            # 22% of the classes of two methods or more had no chunk of their own): the class.
            return current
        if current is None and MINOR_SHARE * led(best) < b - a + 1:
            # A file's licence and imports with a one-line `type ContextKeyType int` are not that
            # type: the chunk is the module's.
            return None
        current = best
        if a <= current.start and current.end <= b and current.kind != "namespace" and not wrapper(current):
            return current  # all of it is in the chunk: the chunk is that definition (a namespace is only a prefix)


MINOR_SHARE = 5  # a top-level definition holding less than 1/this of a chunk's lines does not name it
WRAPPER_ROWS = 3  # a definition with no more rows of its own around its one member is a namespace

MAX_MEMBERS = 32  # a chunk of a long enum or constant table names more: its first ones are kept


def _members(named: list[Definition], primary: Definition | None,
             lead_rows: dict[tuple, int] | None = None) -> tuple[tuple[str, str, str, int, int], ...]:
    """(name, scope path, kind, first line, last line) of the definitions named in a chunk other
    than the one labelling it (or its overloads, which share its scope path). The lines (1-based,
    its leading documentation included) are those of a definition the query's words may choose
    instead (retrieval.labels): beside the label, or a member of a class-like one; (0, 0) for one
    around it or inside a function (a closure is part of what the function does)."""
    out = {}
    label = primary.path if primary is not None else None
    rows = lead_rows or {}
    for d in named:
        if d.path != label and d.kind != "test" and not _constructor(d) and d.path not in out:
            around = primary is not None and d.start <= primary.start and primary.end <= d.end
            inside = primary is not None and primary.start <= d.start and d.end <= primary.end
            first = min(d.start, rows.get(d.key, d.start))
            fixed = around or (inside and primary.kind in _FUNCTION_LIKE)
            out[d.path] = (d.name, d.path, d.kind, *((0, 0) if fixed else (first + 1, d.end + 1)))
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
    module, module_kind = (f"module {declared_module(language, lines) or module_name(path)}", "module") \
        if kind == CODE else (path, kind)
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
                                    scope or (a + 1, b + 1), defined, _members(held, primary, lead_rows)))
            continue
        chunks.append(Chunk(path, a + 1, b + 1, "".join(lines[a : b + 1]), language, kind, context, symbol,
                            chunk_kind, scope, names, _members(inside, primary, lead_rows)))
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


MINIFIED_BYTES = 10_000

MINIFIED_LINE = 1_000  # mean characters per line


def _minified(text: str) -> bool:
    """A file of very long lines (a minified bundle): its syntax tree cannot cut inside a line,
    walking it for definitions took seconds (a 1 MB one-line bundle: 30,000 "definitions"), and its
    mangled names labelled its chunks (jquery.min.js's 87 KB line was the function `v`)."""
    return len(text) > MINIFIED_BYTES and (text.count("\n") + 1) * MINIFIED_LINE < len(text)


# Markup whose `<script>` elements hold code of another language (a Vue or Svelte component's
# logic): the script is chunked by its own grammar, the rest by the host's. A PHP page's HTML is
# text to its grammar: its scripts are found in the text (_scripts_in_text).
_SCRIPT_HOSTS = frozenset({"vue", "svelte", "html", "php"})

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
        script_language = _script_language(node_text(tags[0]))
        if first <= last and script_language:
            found.append((first, last, script_language))
    return sorted(found)


def _script_language(head: str) -> str | None:
    """The language of a `<script ...>` start tag's code: typescript or javascript, None for
    another `type` (a template, JSON)."""
    kind = _SCRIPT_TYPE.search(head)
    if kind and kind.group(1).lower() not in _SCRIPT_TYPES:
        return None
    typed = _SCRIPT_LANG.search(head) or (kind and kind.group(1).lower() == "text/typescript")
    return "typescript" if typed else "javascript"


_SCRIPT_OPEN = re.compile(r"<script\b[^>]*>", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)


def _scripts_in_text(text: str) -> list[tuple[int, int, str]]:
    """As _scripts, for a page whose grammar reads its HTML as text (PHP's): the rows between each
    `<script>` tag and its end tag. A script holding PHP (`<?= $x ?>`) is no JavaScript alone: left out."""
    found = []
    at = 0
    while (opened := _SCRIPT_OPEN.search(text, at)) is not None:
        closed = _SCRIPT_CLOSE.search(text, opened.end())
        if closed is None:
            break
        at = closed.end()
        script_language = _script_language(opened.group(0))
        if "<?" in text[opened.end() : closed.start()] or not script_language:
            continue
        first, last = text.count("\n", 0, opened.end()) + 1, text.count("\n", 0, closed.start()) - 1
        if first <= last:
            found.append((first, last, script_language))
    return found


def _html_texts(root) -> list:
    """The `text` nodes of a PHP page: its HTML, outside `<?php ... ?>`."""
    return [child for top in root.children if top.type in ("text", "text_interpolation")
            for child in ([top] if top.type == "text" else top.children) if child.type == "text"]


def _with_scripts(host: list[Chunk], text: str, path: str, language: str, kind: str,
                  policy: ChunkingPolicy, grammar: str) -> list[Chunk]:
    """The host's chunks with each script's rows replaced by that script's own AST chunks (their
    scope paths, kinds and definitions); the file's language stays the host's."""
    try:
        tree = parse(grammar, text.encode("utf-8", "surrogatepass"))
    except (ImportError, ValueError, RuntimeError, LookupError, OSError):
        return host
    if tree is None:
        return host
    if grammar == "php":  # in the page's HTML only: a PHP string building a `<script>` is PHP
        scripts = [(node.start_point[0] + first, node.start_point[0] + last, script_language)
                   for node in _html_texts(tree.root_node)
                   for first, last, script_language in _scripts_in_text(node_text(node))]
    else:
        scripts = _scripts(tree.root_node)
    lines = split_lines(text)
    inner: list[Chunk] = []
    taken: list[tuple[int, int]] = []  # 1-based rows now chunked by a script's grammar
    for first, last, script_language in scripts:
        code = "".join(lines[first : last + 1])
        pieces = _chunk_tree(code, path, script_language, kind, policy, grammar_for(path, script_language))
        if not pieces:
            continue
        shift = first
        for c in pieces:
            scope = (c.scope[0] + shift, c.scope[1] + shift) if c.scope else None
            members = tuple((*m[:3], m[3] + shift, m[4] + shift) if m[3] else m for m in c.members)
            inner.append(replace(c, start_line=c.start_line + shift, end_line=c.end_line + shift,
                                 language=language, scope=scope, members=members))
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
    return _glue_tags(sorted(kept + inner, key=lambda c: (c.start_line, c.end_line)), {id(c) for c in inner}, lines)


_TAG_LINE = re.compile(r"\s*<(/?)script\b[^>]*>\s*$", re.IGNORECASE)


def _glue_tags(chunks: list[Chunk], inner: set[int], lines: list[str]) -> list[Chunk]:
    """A host chunk of a script's tag lines alone (`</script>`, `<script setup>`) joined to the
    script's chunk beside it: a chunk of one tag said nothing, and outranked code on its length."""
    out: list[Chunk] = []
    for i, c in enumerate(chunks):
        tags = [_TAG_LINE.match(line) for line in c.text.splitlines() if line.strip()]
        if id(c) in inner or not tags or not all(tags):
            out.append(c)
            continue
        closing, opening = any(t.group(1) for t in tags), any(not t.group(1) for t in tags)
        before = out[-1] if out else None
        after = chunks[i + 1] if i + 1 < len(chunks) else None
        if closing and not opening and before is not None and id(before) in inner and before.end_line + 1 == c.start_line:
            out[-1] = _joined(before, c.end_line, lines)
        elif opening and not closing and after is not None and id(after) in inner and c.end_line + 1 == after.start_line:
            chunks[i + 1] = _joined(after, c.start_line, lines)
            inner.add(id(chunks[i + 1]))
        else:
            out.append(c)
    return out


def _joined(c: Chunk, line: int, lines: list[str]) -> Chunk:
    """c widened to `line` (before or after it), its text the file's lines."""
    start, end = min(c.start_line, line), max(c.end_line, line)
    return replace(c, start_line=start, end_line=end, text="".join(lines[start - 1 : end]))


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
    allowance = Allowance()  # one for all of the file's parses
    try:
        tree = parse(grammar, source, allowance)
        if tree is None:
            return None
        if tree.root_node.has_error and b"\r\n" in source:
            # Some grammars (Dockerfile's) take a Windows line end for an error: the parser sees
            # Unix ones (same rows; byte offsets are only compared within the tree).
            unix = source.replace(b"\r\n", b"\n")
            again = parse(grammar, unix, allowance)
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
        blanked = _DIRECTIVE.sub(lambda m: blank(m.group(0)), source) if mostly or grammar == "csharp" else source
        if blanked != source:
            again = parse(grammar, blanked, allowance)
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
            outer = parse(grammar, items, allowance) if items is not None else None
            if outer is None:
                break
            inner.append(outer)
    try:
        defs = definitions(tree, grammar, inner)
    except RecursionError:  # pragma: no cover - the query runs in C; kept as a guard
        defs = []
    continuations(defs, path)
    off = _line_offsets(lines)
    sized = {}
    for d in defs:
        if d.kind != "constant":
            big = off[d.end + 1] - off[d.start] >= ALONE_SHARE * budget and not d.statement
            sized[d.key] = big
    splitter = _Splitter(off, budget, policy.line_cap(path), sized, parsed_lines, inner)
    starts = [d.start for d in defs]

    def opens(a: int, b: int) -> bool:
        """A definition starts in rows a..b and goes on after them."""
        return any(d.end > b and d.kind != "constant" for d in defs[bisect.bisect_left(starts, a):
                                                                    bisect.bisect_right(starts, b)])

    # Rows a definition starts on and goes on after, where none that began before ends.
    ending = {d.end for d in defs if d.start < d.end and d.kind != "constant"}
    opening = {d.start for d in defs if d.start < d.end and d.kind != "constant"} - ending

    def starts_on(row: int) -> bool:
        return row in opening

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
                      frozenset(first for first, _last, _keys in splitter.leads), apart, policy.line_cap(path),
                      starts_on)
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
    """A constructor (or C++ destructor) named after its class (Java, C#, C++, Dart): it does not
    define the class's name, or a query naming the class finds a short constructor before the class
    itself. Its scope path (`HashCodeBuilder.HashCodeBuilder`) still places it. C++'s out of its
    class (`Socket::Socket(...)`, `Socket::~Socket()`, `Box<T>::Box()`: the class is in a header)
    too."""
    if d.kind not in _FUNCTION_LIKE:
        return False
    parent, bare = d.parent, d.name.lstrip("~")
    if parent is not None and parent.name == bare and parent.kind not in (*_FUNCTION_LIKE, "namespace", "module"):
        return True  # (a namespace's function of its name is a function: `namespace log { void log(...) }`)
    owner, qualified, _ = d.display.rpartition("::")
    # (`void log::log(...)`, with a return type, is a function `log` of a namespace `log`; a macro
    # before a constructor, `MYLIB_API Foo::Foo(...)`, reads as one and is none)
    return bool(qualified) and not d.returns and type_name(owner) == bare


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
        chunks = chunk_lines(text, path, language=language, kind=kind, policy=policy)
    return with_headings(chunks, text)
