"""The standard streams when they fail: shared by the CLI and the server's client (stdlib only)."""
from __future__ import annotations

import os
import sys


def discard_stdout() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered would fail again when Python
    flushes it at exit (a closed pipe, a full disk)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


# A query read from stdin is a question or a pasted report, not a log file: past this it is refused
# (`query - < /dev/zero` grew until the kernel killed it; 10 MB of words took 14 s to rank).
MAX_QUERY_BYTES = 1 << 20


def read_stdin_query() -> bytes:
    """At most MAX_QUERY_BYTES + 1 bytes of stdin (one more than allowed shows it is too long);
    b"" when stdin is closed."""
    if sys.stdin is None:
        return b""
    return sys.stdin.buffer.read(MAX_QUERY_BYTES + 1)
