"""Set in the process that is a root's server, so that its own `status` need not ask itself."""
from __future__ import annotations

STORE: str | None = None  # the store directory this process serves
INFO: dict = {}  # what a ping answers: pid, root, version, started, idle_timeout
