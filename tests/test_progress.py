"""Progress on stderr: one line in place on a terminal, nothing for counts off a terminal."""
from __future__ import annotations

import io

import pytest

from retrieval import service
from retrieval.progress import Reporter, Tick


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def terminal(monkeypatch):
    """(a clock the reporter reads, what it wrote, a reporter writing to a terminal)."""
    clock = Clock()
    monkeypatch.setattr("retrieval.progress.time.monotonic", clock)
    out = io.StringIO()
    return clock, out, Reporter(out, interactive=True)


def test_off_a_terminal_counts_are_dropped_and_diagnostics_printed():
    out = io.StringIO()
    report = Reporter(out, interactive=False)
    report(Tick("lexical: indexed 1/10 files", 1, 10))
    report("the lexical index is damaged; rebuilding it")
    report.close()
    assert out.getvalue() == "the lexical index is damaged; rebuilding it\n"


def test_off_a_terminal_a_count_that_runs_long_is_said_now_and_then_on_lines_of_its_own(monkeypatch, tmp_path):
    """A first embedding build said one line and then nothing for minutes: to an agent's shell, a hang."""
    clock = Clock()
    monkeypatch.setattr("retrieval.progress.time.monotonic", clock)
    with open(tmp_path / "stderr", "w+") as stream:  # a pipe or a file: a descriptor, no terminal
        report = Reporter(stream, interactive=False)
        for now, done in [(0, 0), (10, 100), (31, 310), (50, 500), (92, 920), (150, 1000), (151, 1000)]:
            clock.now = float(now)
            report(Tick(f"hybrid: embedded {done}/1000 chunks", done, 1000))
        report.close()
        stream.seek(0)
        assert stream.read() == ("hybrid: embedded 310/1000 chunks · 10/s · about 1m09s left\n"
                                 "hybrid: embedded 920/1000 chunks · 10/s · about 8s left\n")
    # Not for a caller that reads every stderr line as a note (an MCP call run in a child process).
    monkeypatch.setenv("RETRIEVAL_PROGRESS_LINES", "0")
    with open(tmp_path / "notes", "w+") as stream:
        report = Reporter(stream, interactive=False)
        for now, done in [(0, 0), (31, 310), (92, 920)]:
            clock.now = float(now)
            report(Tick(f"hybrid: embedded {done}/1000 chunks", done, 1000))
        stream.seek(0)
        assert stream.read() == ""


def test_on_a_terminal_counts_rewrite_one_line_with_rate_and_time_left(terminal):
    clock, out, report = terminal
    report(Tick("lexical: indexed 0/100 files", 0, 100))
    clock.now = 0.05
    report(Tick("lexical: indexed 5/100 files", 5, 100))  # too soon to redraw
    clock.now = 2.0
    report(Tick("lexical: indexed 40/100 files", 40, 100))
    report("a diagnostic")
    report.close()
    assert out.getvalue() == (
        "\rlexical: indexed 0/100 files\x1b[K"
        "\rlexical: indexed 40/100 files · 20/s · about 3s left\x1b[K"
        "\r\x1b[Ka diagnostic\n"
    )
    assert "\n" not in out.getvalue()[: out.getvalue().index("a diagnostic")]


def test_two_counts_of_one_retriever_each_time_their_own_rate(terminal):
    """`lexical+ctx` counts the contexts it generates, then the files it indexes: the second count's
    rate and time left were reckoned from the first one's start."""
    clock, out, report = terminal
    report(Tick("lexical+ctx: 1/100 contexts generated", 1, 100))
    clock.now = 100.0
    report(Tick("lexical+ctx: 100/100 contexts generated", 100, 100))
    report(Tick("lexical+ctx: indexed 1/50 files", 1, 50))
    clock.now = 101.0
    report(Tick("lexical+ctx: indexed 11/50 files", 11, 50))
    assert out.getvalue().endswith("\rlexical+ctx: indexed 11/50 files · 10/s · about 4s left\x1b[K")


def test_on_a_narrow_terminal_the_line_is_cut_to_its_width(monkeypatch):
    monkeypatch.setattr("retrieval.progress._columns", lambda stream: 30)
    out = io.StringIO()
    report = Reporter(out, interactive=True)
    report(Tick("treesitter: indexed 1,234/56,789 files", 1234, 56789))
    line = out.getvalue().removeprefix("\r").removesuffix("\x1b[K")
    assert line == "treesitter: indexed 1,234/56…" and len(line) < 30  # a wrapped line leaves rows behind


def counting_refresh(root, monkeypatch):
    ticks = iter(range(10**9))
    monkeypatch.setattr(service.time, "monotonic", lambda: float(next(ticks)))
    seen = []
    service.refresh(str(root), progress=seen.append)
    return [m for m in seen if isinstance(m, Tick)]


def test_a_first_build_counts_files_and_a_refresh_counts_changed_files(sample_repo, rewrite, monkeypatch):
    first = counting_refresh(sample_repo, monkeypatch)
    assert first and all("indexed" in t and "changed" not in t for t in first)
    assert first[-1].total == 7 and first[-1].done <= 7
    rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    pass\n")
    again = counting_refresh(sample_repo, monkeypatch)
    assert again and all(t.endswith("/1 changed files") for t in again)


def test_a_reporter_for_terminals_only_drops_messages_off_a_terminal():
    out = io.StringIO()
    report = Reporter(out, interactive=False, messages=False)
    report("lexical: 40 queries")
    assert out.getvalue() == ""


def test_the_time_left_waits_for_a_share_of_the_count_and_a_slow_rate_is_not_zero(terminal):
    """4 of 114 files embedded said `0/s · about 245m37s left` of a build that took 5 minutes."""
    clock, out, report = terminal
    report(Tick("hybrid: indexed 0/114 files", 0, 114))
    clock.now = 30.0
    report(Tick("hybrid: indexed 4/114 files", 4, 114))
    assert out.getvalue().endswith("hybrid: indexed 4/114 files · 0.1/s\x1b[K")
    clock.now = 60.0
    report(Tick("hybrid: indexed 12/114 files", 12, 114))
    assert out.getvalue().endswith("hybrid: indexed 12/114 files · 0.2/s · about 8m30s left\x1b[K")
