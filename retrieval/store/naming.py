"""The name of a root's store under RETRIEVAL_INDEX_DIR. One rule for the store and for the warm
path's client, which imports nothing else of the store (it runs before every query)."""
from __future__ import annotations

import os

from ..blake import blake2b

STORE_NAME_BYTES = 64  # of a root's name in its store's name


def store_name(root: str) -> str:
    """`<name>-<tag>`: the root's directory name as a readable hint, cut short (a name of 243+ bytes
    made the store's name too long to exist), and a tag of the root's real path, so one tree reached
    through two paths (a link in one) has one store, as its `.retrieval` is one directory."""
    real = os.path.realpath(root)
    tag = blake2b(real.encode("utf-8", "surrogateescape"), digest_size=6).hexdigest()
    name = os.path.basename(real.rstrip(os.sep)).encode("utf-8", "surrogateescape")[:STORE_NAME_BYTES]
    return f"{name.decode('utf-8', 'ignore') or 'root'}-{tag}"
