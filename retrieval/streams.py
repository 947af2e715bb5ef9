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
