"""Progress for people: one line on a terminal, rewritten in place; off a terminal, a line now and
then for a count that runs long (Reporter.QUIET_FIRST).

The service reports through a plain `Callable[[str], None]`. Counts are `Tick`s, strings that also
carry (done, total): a caller that knows nothing of them prints the text, `Reporter` turns them into
a single line with a rate and an estimate of the time left. Other messages (an index found damaged
and rebuilt, ...) are diagnostics and always printed, on their own line.
"""
from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO


class Tick(str):
    """A progress count: the text to show, plus how many of how many items are done."""

    done: int
    total: int

    def __new__(cls, text: str, done: int, total: int) -> "Tick":
        tick = super().__new__(cls, text)
        tick.done, tick.total = done, total
        return tick


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Reporter:
    """A progress sink for stderr (or `stream`). Call `close()` before printing anything else."""

    MIN_INTERVAL = 0.1  # seconds between redraws: a terminal need not be rewritten per file

    def __init__(self, stream: TextIO | None = None, interactive: bool | None = None, messages: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            interactive = redraws(self.stream)
        self.interactive = interactive
        self.messages = messages or interactive  # False: other messages on a terminal only
        # Off a terminal, counts that run long on lines of their own (QUIET_FIRST), unless stderr is
        # captured or they are asked away.
        self._now_and_then = not interactive and messages and _has_descriptor(self.stream) and _lines_wanted()
        self._line = False  # a progress line is on screen
        self._started: dict[str, tuple[float, int]] = {}
        self._drawn = float("-inf")

    # Off a terminal a long count is said now and then, on a line of its own: a first embedding
    # build said one line and then nothing for minutes, which a caller cannot tell from a hang.
    # Not into a captured stream (a server's, whose lines would become an agent's notes).
    QUIET_FIRST = 30.0
    QUIET_EVERY = 60.0

    def __call__(self, message: str) -> None:
        if isinstance(message, Tick):
            if _listener is not None:
                _listener(message)
            if self.interactive:
                self._draw(message)
            elif self._now_and_then:
                self._say_now_and_then(message)
            return
        if not self.messages:
            return
        self._erase()
        self.stream.write(f"{message}\n")
        self.stream.flush()

    def _with_rate(self, tick: Tick, now: float) -> tuple[str, float]:
        """The tick's text with its rate and the time left; when its count began."""
        # The count's words without its numbers: one retriever's successive counts (contexts generated,
        # then files indexed) each time their own rate.
        label = count_kind(tick)
        started, first_done = self._started.setdefault(label, (now, tick.done))
        text = str(tick)
        elapsed = now - started
        if elapsed > 0.5 and tick.done > first_done:
            rate = (tick.done - first_done) / elapsed
            text += f" · {rate:,.0f}/s" if rate >= 10 else f" · {rate:.1f}/s"  # not `0/s` for a slow count
            # Not from the first few items: 4 of 114 files embedded said "about 245m37s left" of a
            # build that took 5 minutes (files are no even share of the work).
            if tick.total > tick.done and tick.done - first_done >= max(3, tick.total // 20):
                text += f" · about {_duration((tick.total - tick.done) / rate)} left"
        return text, started

    def _say_now_and_then(self, tick: Tick) -> None:
        now = time.monotonic()
        text, started = self._with_rate(tick, now)
        if now - started < self.QUIET_FIRST or now - self._drawn < self.QUIET_EVERY or tick.done >= tick.total:
            return
        self._drawn = now
        self.stream.write(f"{text}\n")
        self.stream.flush()

    def _draw(self, tick: Tick) -> None:
        now = time.monotonic()
        if now - self._drawn < self.MIN_INTERVAL and tick.done < tick.total:
            self._with_rate(tick, now)  # its count's start, from the first tick on
            return
        self._drawn = now
        text, _started = self._with_rate(tick, now)
        # \r back to the start of the line, \x1b[K clears what a longer previous line left behind;
        # cut to the terminal's width, since a wrapped line leaves a row behind at every redraw.
        width = _columns(self.stream)
        if len(text) >= width:
            text = text[: max(0, width - 2)] + "…"
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._line = True

    def _erase(self) -> None:
        if self._line:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._line = False

    def close(self) -> None:
        self._erase()


PROGRESS_LINES_ENV = "RETRIEVAL_PROGRESS_LINES"  # 0: none off a terminal (a caller that reads stderr as notes)


def _lines_wanted() -> bool:
    from .settings import env_flag

    return env_flag(PROGRESS_LINES_ENV, True)


def _has_descriptor(stream) -> bool:
    try:
        stream.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        return False
    return True


def redraws(stream) -> bool:
    """Whether a line can be rewritten in place on `stream`: a terminal, unless it says it cannot
    move the cursor (TERM=dumb: an editor's shell buffer printed every `\x1b[K` as text)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def _columns(stream) -> int:
    """The width of the terminal `stream` writes to (80 when it cannot be told)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


# Who else hears each count, whatever stream a Reporter writes to: a server running a command for
# a client (`retrieval mcp`: the client's progress notifications). One command at a time.
_listener: Callable[[Tick], None] | None = None


def tell_listener(tick: Tick) -> None:
    """A count no Reporter draws (the embedding's, which draws its own line) to the command's
    listener, if any: an MCP call heard nothing for the 40-50 s a batch of embeddings took."""
    if _listener is not None:
        _listener(tick)


def count_kind(tick: Tick) -> str:
    """What a count counts, its words without their numbers (`lexical: indexed  of  files`): one
    command's successive counts (contexts generated, files indexed, chunks embedded) are told apart."""
    return re.sub(r"\d[\d,]*", "", str(tick))


@contextmanager
def listening(listener: Callable[[Tick], None]) -> Iterator[None]:
    """Every Tick given to a Reporter is also given to listener (its exceptions swallowed: a client
    gone away is no reason to stop a build) until the block ends."""
    global _listener

    def heard(tick: Tick) -> None:
        try:
            listener(tick)
        except Exception:  # noqa: BLE001
            pass

    previous, _listener = _listener, heard
    try:
        yield
    finally:
        _listener = previous


def from_caller(progress):
    """A caller's progress callback as the service calls it: checked to be callable now (an
    `int` failed deep inside, after files were read), and any exception it raises marked as the
    caller's (`raised_by_caller`) on its way out. Raised to cancel a long build, a `ValueError` or
    `RuntimeError` from it read as a damaged index and started a full rebuild."""
    if getattr(progress, "_from_caller", False):
        return progress
    if not callable(progress):
        raise TypeError(f"progress must be a callable taking one str, not {type(progress).__name__}")

    def call(message: str) -> None:
        try:
            progress(message)
        except Exception as exc:
            try:
                exc._retrieval_raised_by_caller = True
            except AttributeError:  # an exception type without attributes of its own: raised as it is
                pass
            raise

    call._from_caller = True
    return call


def raised_by_caller(exc: BaseException) -> bool:
    """Whether exc came from a caller's progress callback (from_caller): the caller's to handle,
    never damage to repair."""
    return getattr(exc, "_retrieval_raised_by_caller", False) is True
