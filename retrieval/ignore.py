"""Gitignore semantics: pattern compilation and layered matching.

Rules follow git's documented behaviour: the last matching pattern wins, deeper ignore files
override shallower ones, `!` re-includes, a trailing `/` matches directories only, a pattern with a
slash elsewhere is anchored to its file's directory, and `**` spans directories.
"""
from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, replace

from .lazyre import LazyPattern


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern
    negated: bool
    dir_only: bool
    literal: str = ""  # the path the pattern spells out, when it has no wildcard (`vendor`, `src/build`)
    # An attribute line's `!attr`: a match that leaves the attribute unspecified, as if no line of
    # lower priority had set or unset it (their verdict is then None, not theirs).
    unspecified: bool = False


class _Unspecified:
    """What RuleSet.verdict answers for a match of an `unspecified` rule: no verdict, and no rule
    of lower priority is asked (IgnoreStack turns it into None)."""

    def __repr__(self) -> str:
        return "UNSPECIFIED"


UNSPECIFIED = _Unspecified()


# POSIX character classes inside a bracket expression (`[[:digit:]]`), ASCII as in git.
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


class _Malformed(ValueError):
    """A pattern git's wildmatch gives up on (an unclosed `[`, an unknown `[:class:]`): it
    matches nothing."""


def _class_end(glob: str, i: int) -> int:
    """The index of the `]` closing the bracket expression opened at glob[i]."""
    n = len(glob)
    j = i + 1
    if j < n and glob[j] in "!^":
        j += 1
    if j < n and glob[j] == "]":
        j += 1  # a `]` first in the set is a member
    while j < n and glob[j] != "]":
        if glob.startswith("[:", j):
            end = glob.find(":]", j + 2)
            if end >= 0:
                j = end + 2
                continue
        if glob[j] == "\\":
            j += 1
        j += 1
    if j >= n:
        raise _Malformed(glob)
    return j


def _class_body(body: str) -> str:
    """A glob bracket expression's body as a regex class body. Characters that are literal in a glob
    but would start a nested set or a set operation in a regex (`[`, `&&`, `--`, `||`, `~~`) are
    escaped, so any pattern compiles the same way on every Python version, without a warning."""
    out = ["^"] if body[:1] in ("!", "^") else []
    k = len(out)
    while k < len(body):
        c = body[k]
        if body.startswith("[:", k) and body.find(":]", k + 2) >= 0:
            end = body.find(":]", k + 2)
            name = body[k + 2 : end]
            if name not in _POSIX_CLASSES:
                raise _Malformed(body)
            out.append(_POSIX_CLASSES[name])
            k = end + 2
            continue
        if c == "\\" and k + 1 < len(body):
            out.append(re.escape(body[k + 1]))
            k += 2
            continue
        if c in "\\[&|~" or (c == "-" and body[k - 1 : k] == "-"):
            out.append("\\" + c)
        else:
            out.append(c)
        k += 1
    return "".join(out)


def _translate(glob: str, spelled_too: bool = False) -> str:
    """Glob body -> regex body, with `*`, `?` and `[...]` never matching a `/`. `spelled_too`: a
    bracket expression or a backslash also matches itself as written (see compile_globs)."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            run = i
            while run < n and glob[run] == "*":
                run += 1
            # `**` is special only as a whole path component: `**/` (zero or more directories) at
            # the start or after a `/`, or a trailing `/**` (everything inside). Any other run of
            # stars is one `*` (`foo**bar`, `src/**.py`), as in git.
            whole = run - i >= 2 and (i == 0 or glob[i - 1] == "/")  # `***/` is `**/` too
            if whole and glob.startswith("/", run):
                out.append("(?:.*/)?")
                i = run + 1
            elif whole and run == n:
                out.append(".*")
                i = run
            else:
                out.append("[^/]*")
                i = run
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            try:
                j = _class_end(glob, i)
                expression = "(?!/)[" + _class_body(glob[i + 1 : j]) + "]"
                re.compile(expression)
            except (_Malformed, re.error):
                if not spelled_too:
                    raise _Malformed(glob) from None
                out.append(re.escape(c))  # `[unclosed`, `[z-a]`: only what is written
            else:
                out.append(f"(?:{expression}|{re.escape(glob[i : j + 1])})" if spelled_too else expression)
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            escaped = re.escape(glob[i])
            out.append(f"(?:{escaped}|{re.escape(glob[i - 1 : i + 1])})" if spelled_too else escaped)
        elif c == "\\" and not spelled_too:
            raise _Malformed(glob)  # a trailing backslash escapes nothing: git's pattern matches nothing
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(_committed(out))


_STAR, _STARSTAR = "[^/]*", "(?:.*/)?"
# `(?>...)` is Python 3.11's; before it a lookahead, which re never backtracks into, captures what
# the group would match and a backreference consumes it: the same commitment.
_ATOMIC = sys.version_info >= (3, 11)
_COMMITS = itertools.count()  # unique group names: rules are joined into one alternation


def _committed(out: list[str]) -> list[str]:
    """A pattern's pieces with each wildcard that another of its kind follows made to commit
    to the first place the text after it matches. A repository's `*a*a*a*a*a*a*a*a*b` or
    `**/a/**/a/**/a/**/a/**/a/**/a/b` made the regex try every split of a long name or deep path:
    seconds to hours for one path, a hang for the walk. Committing loses no match: the next
    wildcard takes up whatever a later place would have left (git's wildmatch gives up early too).
    A `*` commits only to a piece within its component (it never crosses a `/`), a `**/` to whole
    components (ending in `/`, as the next `**/` begins). Remembered `--include` globs come from
    the store, which a repository can commit, so they are matched the same way."""
    opened = {}
    for kind in (_STAR, _STARSTAR):
        at = [k for k, piece in enumerate(out) if piece == kind]
        for k, nxt in zip(at, at[1:]):
            between = out[k + 1 : nxt]
            # A user's glob spells a bracket or backslash either way (`(?:...|...)`, two lengths):
            # the first place is then not always the one to keep.
            if (kind == _STARSTAR or "/" not in between) and not any(t.startswith("(?:") for t in between):
                opened[k] = nxt
    if not opened:
        return out
    closing: dict[int, str] = {}  # (each piece closes at most one: the runs of one kind are in turn)
    result = []
    for k, piece in enumerate(out):
        result.append(closing.get(k, ""))
        if k in opened:
            lazy = "[^/]*?" if piece == _STAR else "(?:.*?/)??"
            if _ATOMIC:
                piece, closing[opened[k]] = "(?>" + lazy, ")"
            else:
                name = f"_c{next(_COMMITS)}"
                piece, closing[opened[k]] = f"(?=(?P<{name}>{lazy}", f"))(?P={name})"
        result.append(piece)
    return result


def compile_rule(line: str, *, spelled_too: bool = False) -> Rule | None:
    """One line of an ignore file -> Rule, or None for blanks and comments. `spelled_too`: see
    compile_globs."""
    line = _trim_trailing_spaces(line.rstrip("\n").rstrip("\r"))
    if not line or line.startswith("#"):
        return None
    negated = False
    if line.startswith("!"):
        negated, line = True, line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    # git drops one trailing `/`: in an ignore file `build//` is left ending in `/` and matches
    # nothing; a user's glob (`--path src//`) means the directory.
    line = line.rstrip("/") if spelled_too else line[:-1] if dir_only else line
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    try:
        body = _translate(line, spelled_too)
    except _Malformed:
        return None
    prefix = "" if anchored else "(?:.*/)?"
    try:
        regex = re.compile(f"^{prefix}{body}$", re.DOTALL)
    except re.error:
        # A malformed pattern (a reversed range such as `[z-a]`) matches nothing in git either.
        return None
    literal = "" if any(c in line for c in "*?[\\") else line
    return Rule(regex, negated, dir_only, literal)


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces dropped unless escaped, read as git does: a backslash escapes the character
    after it, so in `a\\\\ ` (an escaped backslash) the space is not escaped and goes."""
    last_space = None
    i = 0
    while i < len(line):
        if line[i] == " ":
            if last_space is None:
                last_space = i
        else:
            if line[i] == "\\":
                i += 1
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _compile_lines(lines, spelled_too: bool = False) -> list[Rule]:
    return [r for r in (compile_rule(g, spelled_too=spelled_too) for g in lines) if r is not None]


def parse_ignore_text(text: str) -> list[Rule]:
    # A byte-order mark (Windows editors write one) is not part of the first pattern, as in git.
    return _compile_lines(text.removeprefix("\ufeff").splitlines())


def parse_attributes_text(text: str, attribute: str) -> list[Rule]:
    """The lines of a `.gitattributes` that set or unset `attribute`, as rules: set (`*.pb.go
    linguist-generated`, `=true`) is a match, unset (`-linguist-generated`, `=false`) a negation,
    unspecified (`!linguist-generated`) an `unspecified` rule, so that an IgnoreStack's verdict for
    a file is True, False or None as git resolves the attribute (the last matching line, deeper
    files first). Patterns are gitignore's and match files only (a `dir/` pattern marks nothing,
    as in git; `dir/**` does)."""
    rules = []
    for line in text.removeprefix("\ufeff").splitlines():  # git skips a byte order mark too
        fields = line.split()
        if len(fields) < 2 or fields[0].startswith(("#", "[attr]", "!", '"')):
            continue  # blanks, comments, macros, the forbidden negative and quoted patterns
        words = [word[word[0] in "-!":].partition("=") for word in fields[1:]]
        if not all(_ATTRIBUTE_NAME.fullmatch(name) for name, _, _ in words):
            continue  # git drops a line naming an invalid attribute (`# x` after one), all of it
        verdict = None
        for word, (name, _, value) in zip(fields[1:], words):
            if name == attribute:
                # Linguist reads any value but `false` as set (`=1`, `=yes`).
                verdict = UNSPECIFIED if word.startswith("!") else not word.startswith("-") and value != "false"
        if verdict is None:
            continue
        rule = compile_rule("!" + fields[0] if verdict is False else fields[0])
        if rule is not None and not rule.dir_only:
            rules.append(replace(rule, unspecified=True) if verdict is UNSPECIFIED else rule)
    return rules


_ATTRIBUTE_NAME = LazyPattern(r"[._0-9A-Za-z][-._0-9A-Za-z]*")  # git's attr_name_valid, after a `-` or `!`


def compile_globs(globs) -> "RuleSet":
    """User globs (--include, --exclude, --path) with gitignore syntax, `!` included. A leading
    `./` means the root, as a shell user writes it (to git, `./src` names nothing). A bracket
    expression or a backslash in one also matches itself as written: Next.js routes live in
    directories named `[slug]`, which a glob would read as one letter of s, l, u, g."""
    return RuleSet(_compile_lines((_from_root(_composed(e)) for g in globs for e in expand_braces(g)),
                                  spelled_too=True))


def literal_glob(path: str) -> str:
    """A glob that matches `path` alone: `a[1].py` as written also matched `a1.py`, `*` any name.
    The characters globs read are escaped, and a trailing space (an ignore line drops it)."""
    escaped = "".join("\\" + c if c in "\\*?[{" else c for c in path)
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


_MAX_BRACE_GLOBS = 256  # `{a,b}{c,d}...` multiplies: more alternatives than this is refused
_MAX_BRACES = 64


def _shown(glob: str) -> str:
    return repr(glob if len(glob) <= 60 else glob[:57] + "...")


class BraceError(ValueError):
    """A glob whose braces make more alternatives than _MAX_BRACE_GLOBS, or that holds more than
    _MAX_BRACES braces."""


def expand_braces(glob: str) -> list[str]:
    """`*.{py,pyi}` -> `*.py`, `*.pyi`, as ripgrep's -g and a shell read it (gitignore has no
    braces; only globs given as options are expanded), nested and repeated groups too; the glob as
    written comes last, so a name holding braces (`{slug}.ts`) still matches itself. A backslash
    escapes a brace; a group with no comma is no group. BraceError past _MAX_BRACE_GLOBS: dropping
    some would leave out (or let back in, after a `!`) files without a word."""
    if "{" not in glob:
        return [glob]
    if glob.count("{") > _MAX_BRACES:  # (each alternative is found by a pass over the glob)
        raise BraceError(f"{_shown(glob)}: more than {_MAX_BRACES} braces")
    if _brace_group(glob) is None:
        return [glob]
    out: list[str] = []
    pending = [glob]
    while pending:
        current = pending.pop()
        group = _brace_group(current)
        if group is None:
            out.append(current)
            if len(out) > _MAX_BRACE_GLOBS:
                raise BraceError(f"{_shown(glob)}: its braces make more than {_MAX_BRACE_GLOBS} globs")
            continue
        start, end, options = group
        pending.extend(current[:start] + o + current[end + 1:] for o in reversed(options))
    return list(dict.fromkeys(out)) + ([glob] if glob not in out else [])


def _brace_group(glob: str):
    """(start, end, alternatives) of the leftmost `{...}` holding a comma at its own level, else
    None; one pass (a glob of 1,500 unclosed braces took minutes scanned from each one)."""
    open_groups: list[list] = []  # [start, commas at its level]
    found = None
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            open_groups.append([i, []])
        elif c == "," and open_groups:
            open_groups[-1][1].append(i)
        elif c == "}" and open_groups:
            start, commas = open_groups.pop()
            if commas and (found is None or start < found[0]):
                cuts = [start, *commas, i]
                found = (start, i, [glob[a + 1:b] for a, b in zip(cuts, cuts[1:])])
        i += 1
    return found


def _composed(text: str) -> str:
    """A user's glob or a path it is matched against in one Unicode form (NFC): `é` typed is one
    character, while a name macOS stored (and a checkout from there keeps) may be `e` and a
    combining accent. Only the globs given here: ignore files match as git matches them."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def compile_selection(globs) -> "RuleSet":
    """Globs that select files (--path, --include): when every one is a negation (`!tests/**`),
    they select everything else, as a user means by it (with no positive pattern, nothing at all)."""
    globs = tuple(globs)
    if globs and all(g.startswith("!") for g in globs):
        globs = ("**",) + globs
    # Each glob also names the files below what it matches, in its place: `!tests/` takes back
    # tests/a.py, as `tests/` selects it (a file's own match came first, so `**` or `*.py` kept it).
    return compile_globs(tuple(g for glob in globs for g in (glob, _below(glob)) if g))


def _below(glob: str) -> str | None:
    """`tests/` -> `**/tests/**`, `!src/gen` -> `!src/gen/**`: the files under what it names."""
    negated, body = (True, glob[1:]) if glob.startswith("!") else (False, glob)
    body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body  # as a gitignore line: a slash inside anchors it to the root
    return ("!" if negated else "") + (body if anchored else "**/" + body) + "/**"


def _from_root(glob: str) -> str:
    if glob.startswith("#"):
        # A glob given on the command line is no ignore file's comment: `--path '#notes.md'` was
        # dropped, and every file selected.
        return "\\" + glob
    negated, body = (True, glob[1:]) if glob.startswith("!") else (False, glob)
    stripped = body
    while stripped.startswith("./"):
        stripped = stripped[2:]
    return ("!" if negated else "") + (body if stripped == body else "/" + stripped)


class RuleSet:
    """One ignore file's rules compiled into two alternations (files; directories), highest
    priority first, so one regex call finds the last matching rule."""

    def __init__(self, rules: list[Rule], *, ignorecase: bool = False):
        self.rules = tuple(rules)
        self.leaves_unspecified = any(r.unspecified for r in rules)  # some verdict may be UNSPECIFIED
        # git's core.ignoreCase folds ASCII letters only (`É` is not `é`), as re.ASCII does.
        flags = re.DOTALL | (re.IGNORECASE | re.ASCII if ignorecase else 0)
        ordered = list(reversed(rules))
        self._files = self._combine([r for r in ordered if not r.dir_only], flags)
        self._dirs = self._combine(ordered, flags)

    # Rules per alternation: re's cost per group grows with the pattern's group count, so one
    # alternation of a repository's 20,000 patterns took 0.7 s per path (5,000: 28 ms); in
    # alternations of this many, matching costs time linear in the patterns.
    CHUNK = 256

    @classmethod
    def _combine(cls, rules: list[Rule], flags: int = re.DOTALL):
        if not rules:
            return None
        return [cls._alternation(rules[i : i + cls.CHUNK], flags) for i in range(0, len(rules), cls.CHUNK)]

    @staticmethod
    def _alternation(rules: list[Rule], flags: int):
        pattern = "|".join(f"({r.regex.pattern})" for r in rules)
        outcomes = [UNSPECIFIED if r.unspecified else not r.negated for r in rules]
        # Group numbers shift when a rule's own pattern has groups: map each rule to its group.
        starts, group = [], 1
        for r in rules:
            starts.append(group)
            group += 1 + r.regex.groups
        return re.compile(pattern, flags), dict(zip(starts, outcomes))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def verdict(self, local: str, is_dir: bool):
        """True ignored, False re-included, None when no rule matches (UNSPECIFIED: the last
        matching rule is an `unspecified` one)."""
        combined = self._dirs if is_dir else self._files
        if combined is None:
            return None
        for regex, outcome_by_group in combined:  # highest priority first
            m = regex.match(local)
            if m is not None:
                return outcome_by_group[m.lastindex if m.lastindex in outcome_by_group else _first_group(m)]
        return None


def _first_group(m) -> int:
    for i, value in enumerate(m.groups(), start=1):
        if value is not None:
            return i
    return 1


class IgnoreStack:
    """Ignore rules collected while walking down a tree, each set scoped to its directory (or
    attribute rules: the same patterns, the same precedence)."""

    def __init__(self, layers: tuple[tuple[str, str, RuleSet, bool], ...] = (), *, ignorecase: bool = False,
                 overrides: tuple[tuple[str, str, RuleSet, bool], ...] = ()):
        # (directory relative to the root with a trailing '/', or '';
        #  what to put before a path below that directory to make it relative to the rules' own
        #  directory: '' for ignore files inside the tree, 'sub/' when the rules are above it;
        #  rules;
        #  whether they are one git repository's own: its .gitignore files and info/exclude)
        self._layers = layers
        # Layers asked before every one of `layers`, the last pushed first: a repository's
        # info/attributes, which git ranks above each directory's .gitattributes.
        self._overrides = overrides
        self._ordered = tuple(reversed(overrides)) + tuple(reversed(layers))  # the order they are asked in
        self.ignorecase = ignorecase  # git's core.ignoreCase: every rule pushed matches letters in either case

    def push(self, base: str, rules: list[Rule], prefix: str = "", *, repository: bool = False,
             override: bool = False) -> "IgnoreStack":
        if not rules:
            return self
        layer = (base, prefix, RuleSet(rules, ignorecase=self.ignorecase), repository)
        if override:
            return IgnoreStack(self._layers, ignorecase=self.ignorecase, overrides=self._overrides + (layer,))
        return IgnoreStack(self._layers + (layer,), ignorecase=self.ignorecase, overrides=self._overrides)

    def entering_repository(self) -> "IgnoreStack":
        """The rules inside a nested repository or submodule: git applies none of the outer
        repository's own there (the user's global excludes, `.ignore` and `.retrievalignore` still)."""
        return IgnoreStack(tuple(layer for layer in self._layers if not layer[3]), ignorecase=self.ignorecase,
                           overrides=tuple(layer for layer in self._overrides if not layer[3]))

    def verdict(self, relpath: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a negation, None when no rule matches (or the one
        that decides leaves it unspecified)."""
        # Deeper ignore files take precedence: the first layer (from the deepest) with a match decides.
        for base, prefix, ruleset, _ in self._ordered:
            if base and not relpath.startswith(base):
                continue
            verdict = ruleset.verdict(prefix + relpath[len(base):], is_dir)
            if verdict is not None:
                return None if verdict is UNSPECIFIED else verdict
        return None

    def ignored(self, relpath: str, is_dir: bool) -> bool:
        return self.verdict(relpath, is_dir) is True

    @property
    def empty(self) -> bool:
        return not self._ordered

    def judge(self, directory: str):
        """verdict(relpath, is_dir) for the paths directly in `directory` ('' or ending in '/'),
        with the layers that can apply to them picked once: a walk asks for every entry."""
        layers = []
        for base, prefix, ruleset, _ in self._ordered:
            if not base or (base.endswith("/") and directory.startswith(base)):
                layers.append((len(base), prefix, ruleset, None))  # every path in the directory is below it
            elif not base.endswith("/"):
                layers.append((len(base), prefix, ruleset, base))  # not a directory's: as verdict() checks it
        if not layers:
            return _no_verdict
        if (len(layers) == 1 and layers[0][:2] == (0, "") and layers[0][3] is None
                and not layers[0][2].leaves_unspecified):
            return layers[0][2].verdict  # the root's rules only: the path is theirs as it is

        def verdict(relpath: str, is_dir: bool) -> bool | None:
            for cut, prefix, ruleset, base in layers:
                if base is not None and not relpath.startswith(base):
                    continue
                found = ruleset.verdict(prefix + relpath[cut:], is_dir)
                if found is not None:
                    return None if found is UNSPECIFIED else found
            return None

        return verdict

    def names(self, relpath: str) -> bool:
        """Whether a negation spells this path out (`!vendor/`, `!src/build/`): a wildcard that
        happens to match it (`!*/`) does not take back what is pruned by default."""
        fold = _ascii_lower if self.ignorecase else str
        name = fold(relpath.rsplit("/", 1)[-1])
        for base, prefix, ruleset, _ in self._layers:
            if base and not relpath.startswith(base):
                continue
            local = fold(prefix + relpath[len(base):])
            if any(r.negated and fold(r.literal) in (name, local) for r in ruleset.rules if r.literal):
                return True
        return False


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def matches_any(rules: RuleSet, relpath: str, is_dir: bool = False) -> bool:
    """True when the last matching rule is positive (used for --include/--exclude globs)."""
    return rules.verdict(_composed(relpath), is_dir) is True


def selects(rules: RuleSet, relpath: str) -> bool:
    """True when a file, or any directory above it, is matched positively: `--include src/` and
    `--path docs` select everything below those directories. (Many paths: `selector`.)"""
    return selector(rules)(relpath)


def selector(rules: RuleSet):
    """selects(rules, path) for many paths, each directory's verdict worked out once: a walk and a
    filtered query judge every file, and the directories above a file cost most of it."""
    below: dict[str, bool] = {}  # directory -> the verdict of it or the nearest one above it

    def directory_verdict(directory: str) -> bool:
        walked = []  # from this directory up to the first one judged (a loop: paths may be deep)
        while True:
            verdict = below.get(directory)
            if verdict is not None:
                break
            walked.append(directory)
            verdict = rules.verdict(directory, True)
            if verdict is not None or "/" not in directory:
                break
            directory = directory.rpartition("/")[0]
        verdict = bool(verdict)  # no directory above matched: not selected
        below.update(dict.fromkeys(walked, verdict))
        return verdict

    def select(relpath: str) -> bool:
        relpath = _composed(relpath)
        verdict = rules.verdict(relpath, False)
        if verdict is not None:
            return verdict
        return directory_verdict(relpath.rpartition("/")[0]) if "/" in relpath else False

    return select


def _no_verdict(relpath: str, is_dir: bool) -> None:
    return None
