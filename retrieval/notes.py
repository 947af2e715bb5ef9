"""One-line notes (for stderr) about state a user cannot see: remembered index filters, filters that
match nothing in the index, a missing index, and why a query has no hit."""
from __future__ import annotations

import os
import re

from .output import counted, shell_word, shown_path


def first_line(exc: BaseException) -> str:
    """What an exception says, in one line (its class name when it says nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


def filters_json(options) -> dict:
    """The remembered options that decide which files an index holds (empty: the defaults)."""
    if options is None:
        return {}
    out: dict = {}
    if options.include:
        out["include"] = list(options.include)
    if options.exclude:
        out["exclude"] = list(options.exclude)
    if options.max_bytes is not None:
        out["max_file_bytes"] = options.max_bytes
    if options.profile != "code":
        out["profile"] = options.profile
    if options.embed_model:
        out["embed_model"] = options.embed_model
    if options.context_model:
        out["context_model"] = options.context_model
    if options.bm25:
        out["bm25"] = list(options.bm25)
    if options.turbovec_bits:
        out["turbovec_bits"] = options.turbovec_bits
    return out


def filters_text(filters: dict) -> str:
    """The filters as the `index` options that would set them."""
    parts = [f"--include {shell_word(g)}" for g in filters.get("include", ())]
    parts += [f"--exclude {shell_word(g)}" for g in filters.get("exclude", ())]
    if "max_file_bytes" in filters:
        parts.append(f"--max-file-bytes {filters['max_file_bytes']}")
    if "profile" in filters:
        parts.append(f"--profile {filters['profile']}")
    if "embed_model" in filters:
        parts.append(f"--embed-model {shell_word(filters['embed_model'])}")
    if "bm25" in filters:
        parts.append("--bm25 " + ",".join(f"{v:g}" for v in filters["bm25"]))
    if "context_model" in filters:  # an environment variable, not an option
        parts.append(f"(RETRIEVAL_CONTEXT_MODEL={shell_word(filters['context_model'])})")
    if "turbovec_bits" in filters:  # likewise
        parts.append(f"(RETRIEVAL_TURBOVEC_BITS={filters['turbovec_bits']})")
    return " ".join(parts)


def kept_filters(options) -> dict:
    """The remembered options a later query or refresh keeps applying, said in its note (and in
    `query --json`): the profile and BM25's parameters too, which change every ranking (one `eval
    --profile prose` left every later query ranked as prose without a word). Not the models nor
    the width of the vectors: the index's identity (`status` shows them), not a choice made once
    and forgotten."""
    filters = filters_json(options)
    for key in ("embed_model", "context_model", "turbovec_bits"):
        filters.pop(key, None)
    return filters


def remembered_note(options, command: str) -> str | None:
    """The note for a query or refresh running under filters given to an earlier `index`."""
    filters = kept_filters(options)
    if not filters:
        return None
    verb = "searching an index" if command == "query" else "indexing"
    return (f"{verb} with the remembered filters {filters_text(filters)} "
            "(`retrieval index --reset-filters` drops them)")


def _describe(filters) -> dict[str, list[tuple[str, object]]]:
    """Each filter option given, with (what it says, the filter of that value alone) per value."""
    from .service import QueryFilter

    parts = {"--path": [(f"--path {shell_word(_typed(filters, g))}", QueryFilter(paths=(g,))) for g in filters.paths],
             "--lang": [(f"--lang {language}", QueryFilter(language=language)) for language in filters.languages],
             "--kind": [(f"--kind {kind}", QueryFilter(kind=kind)) for kind in filters.kinds]}
    return {option: values for option, values in parts.items() if values}


def _manifest(root: str, name: str) -> dict | None:
    """name's index manifest at root, read once for every note; None when missing or unreadable."""
    from .store import layout

    try:
        return layout.read_manifest(layout.store_dir(root), name) or None
    except (layout.ManifestProblem, layout.StoreError):
        return None


def _files_in_index(manifest: dict | None) -> list[tuple] | None:
    """(path, language, kind) of each file with a chunk in the index; None when unreadable."""
    from .service import file_table

    if not manifest:
        return None
    try:
        return [(path, e[3], e[4]) for path, e in file_table(manifest).items() if e[5] > 0]
    except (KeyError, TypeError, IndexError):
        return None


def _outside(glob: str) -> bool:
    """Whether a --path, as the command made it relative to the root, still leads out of it (a
    path from here inside the root became `./...`)."""
    body = glob[1:] if glob.startswith("!") else glob
    return os.path.isabs(body) or body == ".." or body.startswith("../")


def _unmatched_filters(root: str, files: list[tuple], filters) -> str | None:
    """The note when the query filters match no indexed file (so no query could have a hit)."""
    from .service import QueryFilter

    seen: dict = {}  # each filter's answer, once: the hints below ask of the same globs again

    def matches(query_filter) -> bool:
        key = (tuple(query_filter.paths), query_filter.language, query_filter.kind)
        if key not in seen:
            allow = query_filter.compile()
            seen[key] = any(allow(*f) for f in files)
        return seen[key]

    if matches(filters):
        return None
    outside = [g for g in filters.paths if _outside(g) and not matches(QueryFilter(paths=(g,)))]
    if outside:  # "no indexed file matches" blamed the index for a path it can never hold
        named = " and ".join(f"--path {shell_word(g)}" for g in outside)
        return (f"{named} {'is' if len(outside) == 1 else 'are'} outside the root {shown_path(root)}: only files "
                "under the root are searched (--root chooses another)")
    # Several --lang or --kind are alternatives (any of them); --path globs are read in order, a `!`
    # taking back; options of different kinds all apply. One is to blame alone when it, all its
    # values together, matches no file: its values that match none on their own, else all of them.
    alone, shown = [], []
    for option, group in _describe(filters).items():
        labels = [label for label, _ in group]
        whole = QueryFilter(paths=filters.paths) if option == "--path" else None
        if (whole is not None and not matches(whole)) or (whole is None and not any(matches(one) for _, one in group)):
            failing = [label for label, one in group if not matches(one)]
            alone.append(" or ".join(failing) if failing else " ".join(labels) + " together")
        negated = option == "--path" and any(g.startswith("!") for g in filters.paths)
        shown.append(" ".join(labels) if negated or len(labels) == 1 else "either " + " or ".join(labels))
    if alone:
        return f"no indexed file matches {' or '.join(alone)}{_glob_hint(root, filters, matches)}"
    return f"no indexed file matches {', with '.join(shown)} together"


def _glob_hint(root: str, filters, matches) -> str:
    """For a `--path` that matches nothing but would as written otherwise, the glob to give: one
    with Windows' separator, `src\\app.py` (a backslash escapes the next character in a glob), or
    a hit's span pasted along, `src/app.py:10-20`."""
    from .service import QueryFilter

    for glob in filters.paths:
        # Only a glob with a backslash or a span can be helped (each test is a pass over the files).
        if ("\\" not in glob and not _SPAN.search(glob)) or matches(QueryFilter(paths=(glob,))):
            continue
        typed = _typed(filters, glob)  # what to suggest: the glob as given, mended the same way
        slashed = glob.replace("\\", "/")
        if slashed != glob and slashed.strip("/") and matches(QueryFilter(paths=(slashed,))):
            suggested = _from_here(root, typed.replace("\\", "/"), slashed)
            return (" (a backslash escapes the next character; directories are separated by /: "
                    f"--path {shell_word(suggested)})")
        path = _SPAN.sub("", glob)
        if path != glob and path and matches(QueryFilter(paths=(path,))):
            return f" (a span is no part of the path: --path {shell_word(_from_here(root, _SPAN.sub('', typed), path))})"
    return ""


def _from_here(root: str, suggested: str, matched: str) -> str:
    """The glob to suggest: as typed, mended; but a `./` or `../` one is read from where the
    command runs (cli._rooted_globs), so from inside the root it is the glob that matched (`matched`,
    as the root sees it) said from there (`.\\app\\x.py` in `src/`: `../app/x.py`, not `./app/x.py`)."""
    if not suggested.startswith(("./", "../")) or not matched.startswith("./"):
        return suggested
    try:
        here = os.path.realpath(os.getcwd())
        real_root = os.path.realpath(root)
    except OSError:
        return suggested
    if here != real_root and not here.startswith(real_root.rstrip(os.sep) + os.sep):
        return suggested
    relative = os.path.relpath(os.path.join(real_root, matched[2:]), here).replace(os.sep, "/")
    return relative if relative.startswith("../") else "./" + relative


_SPAN = re.compile(r":\d+(?:-\d+)?$")


def _typed(filters, glob: str) -> str:
    """glob as it was given where the command ran (QueryFilter.typed_paths), else as it is."""
    typed = filters.typed_paths
    if len(typed) == len(filters.paths) and glob in filters.paths:
        return typed[filters.paths.index(glob)]
    return glob


def no_hits(root: str, name: str, filters, min_confidence: str | None, query: str = "", matcher=None) -> str | None:
    """Why a query came back empty (an empty answer with nothing on stderr looks like a tool that
    did not run): filters that match no indexed file, an index holding no file, nothing at the
    confidence asked for, or no word of the query in the index. Text retrievers return only chunks
    holding a word of the query; a dense one answers from any non-empty index."""
    manifest = _manifest(root, name)
    files = _files_in_index(manifest)
    if files is None:
        return None
    if filters:
        unmatched = _unmatched_filters(root, files, filters) or _unmatched_patterns(root, files, filters, matcher)
        if unmatched:
            return unmatched
    # (Files a filter may not admit: not told of, they could not hold the answer asked for.)
    large = "" if filters else left_out(root, name, manifest)
    if not files:
        return (f"no hits: the index of {shown_path(root)} holds no file (nothing there is indexable source, "
                "docs or config; binary, ignored and secret-looking files are skipped)" + large)
    if min_confidence:
        return f"no hits at or above --min-confidence {min_confidence}"
    from .text import STOPWORDS

    words = re.findall(r"\w+", query.lower())
    if not query.strip():
        return "no hits: the query is blank"
    if not words:
        return "no hits: the query has no word to search for (only punctuation or symbols)"
    if all(w in STOPWORDS for w in words):
        return f"no hits: every word of the query is too common to be searched for ({', '.join(dict.fromkeys(words))})"
    from .text import tokenize

    if not tokenize(query):  # `retrieval query H`: it said no text held the word, which was never searched for
        given = ", ".join(dict.fromkeys(re.findall(r"\w+", query)))
        return (f"no hits: no word of the query is searched for ({given}): single "
                "letters and the most common words are not indexed")
    if filters and filters.patterns:
        return f"no hits: none of the chunks the query ranks has a line matching {_patterns_said(filters)}"
    if filters:
        return "no hits: no indexed text of the files the filters admit contains a word of the query" + large
    return NO_WORD + large


NO_WORD = "no hits: no indexed text contains a word of the query"  # (a "did you mean" may follow it)


# The files left out that were meant to be read as text, and so may hold a missing answer (a
# generated parser over the size cap, a source file with a NUL byte or in Latin-1), as a note says them.
_LEFT_OUT = (("too-large", "larger than the size cap"), ("binary", "binary"), ("invalid-utf8", "not UTF-8"),
             ("unreadable", "unreadable"))
_BEFORE_FILE = frozenset({"binary", "unreadable"})  # said before the noun: "1 binary file"


def left_out(root: str, name: str, manifest: dict | None = None) -> str:
    """What a note on a missing answer adds when files that may hold it were left out (too large,
    binary, not UTF-8, unreadable), else "". `manifest`: name's, when the caller read it already.
    Ignored and secret-looking files are left out on purpose, and are not said."""
    if manifest is None:
        manifest = _manifest(root, name)
    try:
        skipped = (manifest or {}).get("skipped") or {}
        counts = [(int(skipped.get(reason, 0)), said) for reason, said in _LEFT_OUT]
    except (TypeError, ValueError, AttributeError):
        return ""
    counts = [(n, said) for n, said in counts if n > 0]
    if not counts:
        return ""
    total = sum(n for n, _ in counts)
    large = skipped.get("too-large", 0)
    raise_cap = "; `retrieval index --max-file-bytes N` raises the cap" if large else ""
    if len(counts) == 1:
        n, said = counts[0]
        files = f"{n:,} {said} {'file' if n == 1 else 'files'}" if said in _BEFORE_FILE else f"{counted(n, 'file')} {said}"
        return (f"; {files} {'was' if n == 1 else 'were'} left out (`retrieval status "
                f"--skipped` names {'it' if n == 1 else 'them'}{raise_cap})")
    return (f"; {counted(total, 'file')} {'was' if total == 1 else 'were'} left out "
            f"({', '.join(f'{n} {said}' for n, said in counts)}: `retrieval status --skipped` names them{raise_cap})")


def _patterns_said(filters) -> str:
    return " or ".join(f"-e {shell_word(p)}" for p in filters.patterns) + (" (-F)" if filters.fixed_strings else "") \
        + (" (-i)" if filters.ignore_case else "")


def _unmatched_patterns(root: str, files: list[tuple], filters, matcher=None) -> str | None:
    """The note when no line of the files the other filters admit matches a -e pattern (`matcher`:
    the search's LineMatcher, holding what it read already)."""
    if not filters.patterns:
        return None
    allow = filters.compile()
    matcher = matcher or filters.line_matcher(root)
    if any(allow(*f) and matcher.allows_file(f[0]) for f in files):
        return None
    others = " the other filters admit" if filters.paths or filters.language or filters.kind else ""
    return f"no hits: no line of the indexed files{others} matches {_patterns_said(filters)}"


def no_index_hint(root: str, rows: list[dict]) -> str | None:
    if any(row["state"] not in ("missing", "unavailable") for row in rows):
        return None
    return (f"no index yet: `retrieval index --root {shell_word(root)}` builds one "
            "(or the first `retrieval query` there does)")


# An identifier's parts (`CONTEXT_MISSING_ERROR`, `contextMissingError`, `HTTPServer2`).
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def files_without_identifier(root: str, paths: list[str], query: str) -> str | None:
    """The note for `-l` when a bare compound identifier's query lists files that do not hold it
    in any naming style (rg's `-l` lists only files holding the pattern; these are ranked files,
    and some only share its parts: `CONTEXT_MISSING_ERROR` listed ten files, four holding it)."""
    from .query import search_text
    from .ranking import is_symbol_query
    from .snippets import current_text

    name = search_text(query).strip()
    parts = _PARTS.findall(name)
    if not paths or not is_symbol_query(name) or len(parts) < 2 or not re.fullmatch(r"\w+", name):
        return None
    spelled = re.compile(r"(?<![^\W_])" + "_?".join(map(re.escape, parts)) + r"(?![^\W_])", re.IGNORECASE)
    held = sum(1 for path in paths if spelled.search(current_text(root, path) or ""))
    if held == len(paths):
        return None
    grep = f"(-e {shell_word(name)} lists only files holding it as written)"
    if not held:  # ("0 of the 1 files listed hold ...; the others")
        listed = "the file listed does" if len(paths) == 1 else f"none of the {len(paths)} files listed"
        return f"{listed} {'not hold' if len(paths) == 1 else 'holds'} {name} (in any naming style), only parts of it {grep}"
    return (f"{held} of the {len(paths)} files listed {'holds' if held == 1 else 'hold'} {name} (in any naming style); "
            f"the others only share parts of it {grep}")
