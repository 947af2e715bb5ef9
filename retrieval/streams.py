"""The standard streams when they fail: shared by the CLI and the server's client (stdlib only)."""
from __future__ import annotations

import os
import sys


def holds_unicode(stream) -> bool:
    """Whether the stream's encoding can write every character (a UTF codec), or it has none."""
    import codecs

    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


# Set when the command line runs (retrieval.cli.main): what it may do to the process's streams, a
# program using the Python API must not have done to its own.
COMMAND_LINE = False


def tolerant_output() -> None:
    """stdout and stderr in an encoding that cannot write every character (PYTHONIOENCODING=latin-1,
    an ISO-8859 locale) write those they cannot as backslash escapes: a `✓` in a snippet was a
    traceback. (JSON escapes them itself: retrieval.cli._json.) And a stderr that cannot be written
    (a closed pipe, a full disk) drops the diagnostics, never the results (Diagnostics)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None or holds_unicode(stream) or getattr(stream, "errors", None) != "strict":
            continue
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    if sys.stderr is not None and not isinstance(sys.stderr, Diagnostics):
        sys.stderr = Diagnostics(sys.stderr)


class Diagnostics:
    """stderr, whose writes fail quietly: a note that cannot be written (`2>/dev/full`, a reader of
    stderr that went away) ended the command as if its results could not be, exit 1 or a silent
    0 with nothing printed, before the results were written. Everything else is the stream's."""

    def __init__(self, stream):
        self._stream = stream
        self.failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                return self._stream.write(text)
            except OSError:
                self.failed = True
        return len(text)

    def flush(self) -> None:
        if not self.failed:
            try:
                self._stream.flush()
            except OSError:
                self.failed = True

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def discard_stdout() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered would fail again when Python
    flushes it at exit (a closed pipe, a full disk)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def run_piped(main) -> int:
    """main()'s exit code, for a script whose output a reader may stop reading (`| head`): a closed
    pipe ends it quietly with 0, as the commands end, instead of a BrokenPipeError traceback."""
    try:
        code = main()
        sys.stdout.flush()  # inside: what is still buffered fails here, not at exit
        return code
    except BrokenPipeError:
        discard_stdout()
        return 0


# A query read from stdin is a question or a pasted report, not a log file: past this it is refused
# (`query - < /dev/zero` grew until the kernel killed it; 10 MB of words took 14 s to rank).
MAX_QUERY_BYTES = 1 << 20


def _terminal(stream) -> bool:
    """Whether stream reads a terminal itself (a server's copy of a caller's terminal input is not)."""
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False


def read_stdin_query() -> bytes:
    """At most MAX_QUERY_BYTES + 1 bytes of stdin (one more than allowed shows it is too long);
    b"" when stdin is closed."""
    if sys.stdin is None:
        return b""
    if _terminal(sys.stdin) and sys.stderr is not None:
        # Typed `query -` at a prompt, it sat waiting with no word of what for.
        print("reading the query from the terminal: end it with Ctrl-D (Ctrl-Z, Enter on Windows)", file=sys.stderr)
    return sys.stdin.buffer.read(MAX_QUERY_BYTES + 1)


# The commands whose results are their stdout (index's work is the index, its report aside; serve,
# mcp, clean and skill print none there or not only there, or speak the protocol).
PRINTS_RESULTS = ("query", "search", "status", "eval")


def refuse_closed_stdout(command: str | None) -> None:
    """One error line and exit 1 when stdout is closed (started `>&-`) for a command whose results
    go there: they were thrown away and the command said it succeeded."""
    if sys.stdout is None and command in PRINTS_RESULTS:
        if sys.stderr is not None:
            print(f"error: `retrieval {command}` prints its results on stdout, which is closed", file=sys.stderr)
        sys.exit(1)
