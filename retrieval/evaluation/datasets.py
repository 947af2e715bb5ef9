"""Evaluation datasets: queries with the targets a good ranking should surface.

Two encodings of the same records are read:

- a JSON list (the semble annotation format): `[{query, relevant, secondary, category}, ...]`
- JSONL: one such object per line (blank lines and `#` comment lines are skipped).

A target is a path string, a docid (`path:start-end`, a span as hits name it) or `{path,
start_line, end_line}`; paths are relative to the indexed root and are matched by suffix on a `/`
boundary (see metrics.py). Prose collections may give plain document ids instead of paths
(`CACM-1410` for `CACM-1410.txt`); the runner resolves those against the tree. `qrels` (`{docid: grade}`, grade > 0 relevant) is accepted in place of
`relevant` so TREC-style judgments convert without loss of meaning (gains stay binary).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field


class DatasetError(ValueError):
    """The dataset file cannot be read as an evaluation dataset."""


@dataclass(frozen=True)
class Target:
    path: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def has_span(self) -> bool:
        return self.start_line is not None

    def __str__(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}" if self.has_span else self.path


@dataclass(frozen=True)
class EvalQuery:
    query: str
    targets: tuple[Target, ...]  # relevant then secondary: both count, with binary gains
    category: str = ""
    id: str = ""
    extra: dict = field(default_factory=dict, compare=False)  # fields we do not interpret


def normalize_path(path: str) -> str:
    """POSIX, relative, no `./`: the form hit paths take."""
    path = path.replace("\\", "/").strip()
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


# A hit's docid as `query --json` prints it: a span of the file (fed back as a qrels key, it was
# read as a path named `a.py:1-23`, which no file is).
_DOCID = re.compile(r"(.+):([1-9][0-9]*)-([1-9][0-9]*)")


def parse_target(value, where: str = "") -> Target:
    if isinstance(value, str):
        path, start, end = value, None, None
        docid = _DOCID.fullmatch(value)
        if docid and int(docid.group(2)) <= int(docid.group(3)):
            path, start, end = docid.group(1), int(docid.group(2)), int(docid.group(3))
    elif isinstance(value, dict) and isinstance(value.get("path"), str):
        path, start, end = value["path"], value.get("start_line"), value.get("end_line")
        if (start is None) != (end is None):
            raise DatasetError(f"{where}target {path!r} has only one of start_line and end_line")
        if start is not None:
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in (start, end)) or start < 1 or end < start:
                raise DatasetError(f"{where}target {path!r} has a bad span {start!r}-{end!r} "
                                   "(line numbers are integers from 1, start <= end)")
    else:
        raise DatasetError(f"{where}a target must be a path or {{path, start_line, end_line}}, not {value!r}")
    path = normalize_path(path)
    if not path:
        raise DatasetError(f"{where}a target has an empty path")
    return Target(path, start, end)


_KNOWN = {"query", "relevant", "secondary", "qrels", "category", "id", "query_id", "qid"}


def parse_query(obj, where: str = "") -> EvalQuery:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}expected an object, got {type(obj).__name__}")
    text = obj.get("query")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}missing or empty 'query'")
    if "relevant" in obj:
        relevant = obj["relevant"]
    elif "qrels" in obj:
        qrels = obj["qrels"]
        relevant = [d for d, g in qrels.items() if _grade(g, where) > 0] if isinstance(qrels, dict) else qrels
    else:
        raise DatasetError(f"{where}missing 'relevant'")
    secondary = obj.get("secondary") or []
    if not isinstance(relevant, list) or not isinstance(secondary, list):
        raise DatasetError(f"{where}'relevant' and 'secondary' must be lists")
    # A target named twice (in relevant and secondary, say) is one target: counted twice, one hit
    # would earn it twice and NDCG would pass 1.
    targets = tuple(dict.fromkeys(parse_target(t, where) for t in relevant + secondary))
    category = obj.get("category") or ""
    qid = obj.get("id", obj.get("query_id", obj.get("qid", "")))
    extra = {k: v for k, v in obj.items() if k not in _KNOWN}
    return EvalQuery(_printable(text), targets, _printable(str(category)), _printable(str(qid)), extra)


def _grade(value, where: str = "") -> float:
    """A qrels grade: a number, or a number written as a string (`"1"`). Anything else (`"relevant"`)
    is an error: read as 0, every such target was silently dropped."""
    try:
        grade = float(value)
    except (TypeError, ValueError):
        grade = float("nan")
    if isinstance(value, bool) or grade != grade:
        raise DatasetError(f"{where}a qrels grade must be a number (0 = not relevant), got {value!r}")
    return grade


_SURROGATE = re.compile("[\ud800-\udfff]")


def _printable(text: str) -> str:
    """JSON may escape a lone surrogate (`"\\ud800"`), which no output can encode: replaced."""
    return _SURROGATE.sub("\ufffd", text)


MAX_DATASET_CHARS = 256 << 20  # far above any real one: swebench-dev's 169 issue texts are 366 KB


def _read_text(path: str) -> str:
    """The dataset's text, from the file or, for `-`, standard input (a pipeline's queries)."""
    if path == "-":
        # As bytes, decoded here: the terminal's locale says nothing about a dataset's encoding.
        raw = sys.stdin.buffer.read(MAX_DATASET_CHARS + 1)
        if len(raw) > MAX_DATASET_CHARS:  # `yes | retrieval eval -` must end too
            raise DatasetError(f"<stdin>: over {MAX_DATASET_CHARS:,} bytes: not an evaluation dataset")
        return raw.decode("utf-8-sig")
    with open(path, encoding="utf-8-sig") as fh:  # -sig: a byte-order mark some editors write
        return fh.read(MAX_DATASET_CHARS + 1)


def load_dataset(path: str) -> list[EvalQuery]:
    """All queries of a JSON-list or JSONL dataset (`-`: standard input); DatasetError naming the
    file and line."""
    from ..output import shown_path

    # Escaped: an error is one line, cut at a newline in the name.
    name = "<stdin>" if path == "-" else shown_path(os.path.basename(path))
    try:
        data = _read_text(path)
    except OSError as exc:
        raise DatasetError(f"cannot read the dataset {shown_path(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    if len(data) > MAX_DATASET_CHARS:  # `eval /dev/zero` grew until the kernel killed it
        raise DatasetError(f"{name}: over {MAX_DATASET_CHARS:,} characters: not an evaluation dataset")
    stripped = data.lstrip()
    if stripped.startswith("{") and "\n" in stripped.rstrip():
        try:  # one query written as a pretty-printed object, not one object per line
            single = json.loads(data)
        except (ValueError, RecursionError):
            single = None
        if isinstance(single, dict):
            return [parse_query(single, f"{name}: ")]
    if stripped.startswith("["):
        try:
            items = json.loads(data)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
            raise DatasetError(f"{name}: not valid JSON ({exc})") from None
        queries = [parse_query(obj, f"{name}: query {i + 1}: ") for i, obj in enumerate(items)]
    else:
        queries = []
        # Lines end at \n only: U+2028 and other separators that splitlines() breaks at may stand
        # unescaped inside a JSON string.
        for number, line in enumerate(data.split("\n"), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise DatasetError(f"{name}:{number}: not valid JSON ({exc})") from None
            queries.append(parse_query(obj, f"{name}:{number}: "))
    if not queries:
        raise DatasetError(f"{name}: the dataset has no queries")
    return queries
