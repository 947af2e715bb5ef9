"""The one way anything is written to the store: a temp file beside the target, then a rename.

A reader therefore sees the old file or the new one, never a torn one, and a crash leaves at most a
stray temp file (named `.tmp-*`, removed by the next writer).
"""
from __future__ import annotations

import json
import os
import tempfile

TMP_PREFIX = ".tmp-"


def write_bytes(path: str, data: bytes, *, durable: bool = False) -> int:
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return len(data)


def dumps(obj) -> bytes:
    # Compact, key-sorted: the same index is the same bytes.
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")


def write_json(path: str, obj, *, durable: bool = False) -> int:
    return write_bytes(path, dumps(obj), durable=durable)


def remove_stale_temps(directory: str) -> None:
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(TMP_PREFIX):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
