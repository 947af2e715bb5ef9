"""Plain-text tables for evaluation results (shared by `retrieval eval` and scripts/)."""
from __future__ import annotations

from typing import Sequence

from .runner import Evaluation


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def table(headers: Sequence[str], rows: Sequence[Sequence], left: Sequence[int] = (0,)) -> str:
    """Columns in `left` left-aligned (labels), the rest right-aligned (numbers)."""
    cells = [[str(h) for h in headers]] + [[c if isinstance(c, str) else fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        parts = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _label(name: str, k: int) -> str:
    return f"{name.upper()}@{k}" if name in ("ndcg", "recall", "mrr") else name.upper()


def evaluation_text(ev: Evaluation, per_query: bool = False) -> str:
    if not ev.runs:
        return ""
    names = ev.runs[0].metric_names
    headers = ["retriever"] + [_label(n, ev.k) for n in names] + ["queries", "lines/hit", "index", "build s", "cold ms",
                                                              "warm p50 ms"]
    rows = []
    for run in ev.runs:
        s = run.summary()
        build = f"{run.build_seconds:.2f}" if run.index_status == "indexed" else "reused"
        lines = run.hit_lines()["top_k"]
        rows.append([run.retriever] + [s[n] for n in names]
                    + [str(s["queries"]), f"{lines:.1f}" if lines is not None else "-", run.index_status, build,
                       ms(run.cold_seconds), ms(run.warm_p50_seconds)])
    out = [table(headers, rows)]
    if names and any(run.summary()["queries"] for run in ev.runs):
        out.append(interval_text(ev.runs, _label(names[0], ev.k)))
    # Only categories with a scored query: one whose queries' targets are all missing was a row of dashes.
    cats = sorted({c for run in ev.runs for c, s in run.by_category().items() if s["queries"]})
    if len(cats) > 1:
        headers = ["category", "retriever"] + [_label(n, ev.k) for n in names] + ["queries"]
        rows: list = []
        for cat in cats:
            for run in ev.runs:
                s = run.by_category().get(cat)
                if s and s["queries"]:
                    rows.append([cat, run.retriever] + [s[n] for n in names] + [str(s["queries"])])
        out.append(table(headers, rows, left=(0, 1)))
    for run in ev.runs:
        table_text = calibration_text(run.calibration(), ev.k)
        if table_text:
            out.append(f"{run.retriever}:\n{table_text}" if len(ev.runs) > 1 else table_text)
    stats = [f"{run.retriever} index: {run.index['documents']} documents, {run.index['unique_terms']} unique terms, "
             f"{run.index['total_terms']} term occurrences" for run in ev.runs if run.index]
    if stats:
        out.append("\n".join(stats))
    notes = []
    if ev.missing_targets:
        counted = "; MAP and P@30 count them as relevant and unretrieved" if "map" in ev.metrics else ""
        are = "target is" if ev.missing_targets == 1 else "targets are"
        notes.append(f"{ev.missing_targets} {are} not in the tree (left out of the scores){counted}")
    unscored = ev.runs[0].summary()["unscored"]
    if unscored:
        have = "query has" if unscored == 1 else "queries have"
        counted = " (but for MAP and P@30, which count it as 0)" if "map" in ev.metrics else ""
        notes.append(f"{unscored} {have} no target in the tree and {'is' if unscored == 1 else 'are'} not scored{counted}")
    if notes:
        out.append("note: " + "; ".join(notes))
    if per_query:
        for run in ev.runs:
            headers = ["#", "category"] + [_label(n, ev.k) for n in names] + ["ms", "query"]
            rows = []
            for i, row in enumerate(run.rows, start=1):
                text = " ".join(row.query.split())
                rows.append([row.id or str(i), row.category or "-"] + [row.scores.get(n) for n in names]
                            + [ms(row.seconds), text[:60] + ("..." if len(text) > 60 else "")])
            out.append(f"{run.retriever}:\n" + table(headers, rows, left=(0, 1, len(headers) - 1)))
    return "\n\n".join(out)


def interval_text(runs, label: str) -> str:
    """How far the headline metric could move on other queries like these: each run's 95% bootstrap
    interval and, for each later run, its difference from the first on the same queries."""
    first = runs[0]
    name = first.metric_names[0]
    theirs = first.summary()[name]
    rows = []
    for n, run in enumerate(runs):
        own = run.interval()
        row = [run.retriever, f"{fmt(own[0])}-{fmt(own[1])}" if own else "-"]
        if n:
            paired = run.paired_interval(first)
            mine = run.summary()[name]
            row += ["-" if mine is None or theirs is None else f"{mine - theirs:+.3f}",
                    f"{paired[0]:+.3f} to {paired[1]:+.3f}" if paired else "-"]
        elif len(runs) > 1:
            row += ["", ""]
        rows.append(row)
    headers = ["retriever", f"{label} 95% interval"]
    if len(runs) > 1:
        headers += [f"minus {first.retriever}", "its 95% interval"]
    return (table(headers, rows) + "\n(bootstrap over the queries: what another set of queries like these "
            "could give; a difference whose interval holds 0 is not shown by this dataset)")


def calibration_text(calibration: dict, k: int) -> str:
    """The confidence calibration table: per level, the top-k hits given it and the share that match."""
    if not calibration:
        return ""
    from ..confidence import LEVELS

    order = [lv for lv in reversed(LEVELS) if lv in calibration] + sorted(set(calibration) - set(LEVELS))
    # No level: `all`'s spans that only retrievers other than the lead found (they carry none).
    rows = [[lv or "(none)", str(calibration[lv]["hits"]), str(calibration[lv]["matched"]), calibration[lv]["precision"]]
            for lv in order]
    return table(["confidence", f"hits@{k}", "matching", "precision"], rows)
