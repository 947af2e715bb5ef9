"""A child process that ends with the process that started it.

`retrieval mcp` answers a call that cannot start behind a slow one in a process of its own; a
host stops its server with SIGTERM (or kills it), which no cleanup of the server's survives, and
the child went on alone, an embedding build for minutes. Linux sends the child SIGTERM when its
parent ends (prctl PR_SET_PDEATHSIG), which the command handles as it does a `kill`: locks
released, the store left whole. Elsewhere the child finishes its call.
"""
from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int) -> None:
    """Have SIGTERM sent to this process when `parent` (its parent's pid, as the parent knew it)
    ends; exit at once (143) if it has ended already."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            return
    if os.getppid() != parent:  # ended before the request above was made: the signal would never come
        sys.exit(128 + signal.SIGTERM)
