"""What a pasted report carries for its human readers, not for a search: the issue template's HTML
comments (instructions to the reporter, hidden when the issue is rendered) and environment listings
(`xr.show_versions()`, `pip list`, `pip freeze`, `conda list`, a tool's version banner).

Their words (numpy, pandas, setuptools, "Paste the output here") match the file that prints the
versions and every module importing those packages, not the code the report is about; the dense
arm, which reads a report's first 256 tokens only, spent them on a template's instructions.
swebench-dev, the 75 instances of all but sphinx and sympy (which paste no listings): `hybrid` file
Acc@1/3/5 0.467/0.747/0.840 -> 0.480/0.747/0.853, MRR 0.733 -> 0.749, edited lines inside a
2,000-token answer 0.600 -> 0.613 (the comments alone: MRR 0.739, 0.613); `lexical` Acc@5 0.827 ->
0.867, MRR 0.688 -> 0.701. xarray's `print_versions.py` had been among the first five files for
reports about `where` and about time decoding.
"""
from __future__ import annotations

import re

# Unclosed at the end of a text: hidden to its end when rendered, so dropped to its end.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# A package or tool and its version: `numpy: 1.19.1`, `pytest==5.4.2`, `attrs   19.3.0`,
# `pydap: None`, `Python 3.9.10 (main, ...)`. Not `x = 1.5`: an assignment is code.
_VERSION_LINE = re.compile(
    r"[ \t]*[A-Za-z_][\w.\-\[\] ]{0,40}?[ \t]*(?::|==|[ \t])[ \t]*(?:None|[vV]?\d+(?:\.\d+)+[\w.+\-]*)(?:\s.*)?\s*")
# The other lines of a listing: `OS: Linux`, `LANG: en_US.UTF-8`, a rule of dashes, a heading
# in capitals (`INSTALLED VERSIONS`).
_LISTING_LINE = re.compile(r"[ \t]*[\w.\-]{1,30}[ \t]*(?::|==)[ \t]*\S.{0,80}|[-=\s]{3,}|[ \t]*[A-Z][A-Z ]{3,40}\s*")
_LONGEST_LISTING_LINE = 200
MIN_VERSION_LINES = 3  # a config snippet may name a version or two; a listing names many
LISTING_SHARE = 0.6  # of a paragraph's lines, for it to be a listing (a fence or a stray line may sit in it)


def _is_listing(lines: list[str]) -> bool:
    versions = listed = 0
    for line in lines:
        if len(line) > _LONGEST_LISTING_LINE:
            continue
        if _VERSION_LINE.fullmatch(line):
            versions += 1
            listed += 1
        elif _LISTING_LINE.fullmatch(line):
            listed += 1
    return versions >= MIN_VERSION_LINES and listed >= LISTING_SHARE * len(lines)


# A terminal's colour codes, and the time stamp a log line or a CI step starts with (ISO 8601, as
# GitHub Actions and most loggers write it; `02 May 2024 10:11:12.345`; syslog's `May  2 10:11:12`):
# their digits and `T`/`Z` matched number tables and date code, not the message after them (a
# serde message behind `2024-01-20T03:14:15.926Z` found a numeric tuple impl first).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_LOG_STAMP = re.compile(
    r"^([ \t]*)\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    rf"|\d{{1,2}} {_MONTH} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d+)?"
    rf"|{_MONTH} +\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d+)?)\]?"
    # and the level after it (`ERROR`, `[WARN]`): no file writes a message with them
    r"(?:[ \t]+\[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL|CRITICAL|NOTICE)\]?:?)?(?=[ \t]|$)", re.MULTILINE)


def strip_boilerplate(text: str) -> str:
    """`text` without HTML comments, colour codes, log lines' time stamps and the paragraphs (runs
    of lines between blank lines) that list installed versions; unchanged when nothing else would
    be left."""
    out = _HTML_COMMENT.sub(" ", text) if "<!--" in text else text
    if "\x1b" in out:
        out = _ANSI.sub("", out)
    out = _LOG_STAMP.sub(r"\1", out)
    if out.count("\n") >= MIN_VERSION_LINES:
        kept: list[str] = []
        paragraph: list[str] = []
        for line in out.split("\n") + [""]:
            if line.strip():
                paragraph.append(line)
                continue
            if paragraph and not _is_listing(paragraph):
                kept.extend(paragraph)
            paragraph = []
            kept.append(line)
        out = "\n".join(kept[:-1])
    return out if out.strip() else text
