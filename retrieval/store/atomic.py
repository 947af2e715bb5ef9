"""The one way anything is written to the store: a temp file beside the target, then a rename.

A reader therefore sees the old file or the new one, never a torn one, and a crash leaves at most a
stray temp file (named `.tmp-*`, removed by the next writer). Durable writes reach the disk before
their rename, and the rename before the call returns, so after a power cut the commit point
(the manifest) never names data that was lost.
"""
from __future__ import annotations

import errno
import json
import os

TMP_PREFIX = ".tmp-"
# Windows opens a descriptor in text mode unless told otherwise: every b"\n" written would become
# b"\r\n" (a segment's postings torn, its size wrong) and a read would stop at the first ^Z.
_BINARY = getattr(os, "O_BINARY", 0)


def write_bytes(path: str, data: bytes, *, durable: bool = False) -> int:
    return write_chunks(path, (data,), durable=durable)


def write_chunks(path: str, chunks, *, durable: bool = False) -> int:
    """write_bytes for data produced piece by piece (a file larger than memory should hold at once)."""
    directory = os.path.dirname(path) or "."
    fd, tmp = _create_temp(directory)
    size = 0
    try:
        with os.fdopen(fd, "wb") as fh:
            for data in chunks:
                fh.write(data)
                size += len(data)
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
    if durable:
        fsync_dir(directory)
    return size


def _create_temp(directory: str) -> tuple[int, str]:
    """A new private file `.tmp-<random>` in directory, as tempfile.mkstemp makes one (tempfile
    itself is not imported: its import costs a cold query more than this function)."""
    for _ in range(100):
        tmp = os.path.join(directory, TMP_PREFIX + os.urandom(8).hex())
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | _BINARY, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", directory)


def write_new(path: str, data: bytes) -> int:
    """Create a file no reader can see yet (it lives in a directory published later), durably."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o666)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return len(data)


def publish_dir(tmp: str, final: str) -> None:
    """Rename a finished directory into place: its entries first, then the rename, made durable."""
    fsync_dir(tmp)
    os.rename(tmp, final)
    fsync_dir(os.path.dirname(final) or ".")


def fsync_dir(path: str) -> None:
    """Make the creations and renames in a directory durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # platforms where a directory cannot be opened (Windows) make renames durable alone
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems cannot sync a directory; any other failure is a real one.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def dumps(obj) -> bytes:
    # Compact, key-sorted: the same index is the same bytes.
    text = json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A path that is not valid UTF-8 (the root's, say) holds lone surrogates: \u-escaped, they
        # survive the round trip through json.loads unchanged.
        return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode("ascii")


def write_json(path: str, obj, *, durable: bool = False) -> int:
    return write_bytes(path, dumps(obj), durable=durable)


def remove_stale_temps(directory: str, levels: int = 1) -> None:
    """Remove the temporary files and directories a killed writer left in directory and, for
    levels > 1, in its subdirectories that far down (a retriever with arms writes in one each:
    hybrid's dense/ and lexical/). Symbolic links are not followed. The caller holds the writer lock."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(TMP_PREFIX):
            try:
                if entry.is_dir(follow_symlinks=False):
                    # An unfinished version (pi-serini's Lucene directory): left to the collection
                    # after a commit, one more piled up with each build killed before committing.
                    remove_tree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        elif levels > 1:
            try:
                below = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if below:
                remove_stale_temps(entry.path, levels - 1)


def remove_tree(path: str, *, ignore_errors: bool = False) -> None:
    """shutil.rmtree that also removes a tree deeper than Python's recursion limit: a store
    committed to a repository can hold one (`seg-000099/d/d/...` 3,000 levels down), whose
    RecursionError failed every refresh and `clean` ("maximum recursion depth exceeded")."""
    import shutil  # here: its import (archive codecs) costs a cold query more than it uses

    try:
        shutil.rmtree(path, ignore_errors=ignore_errors)
    except RecursionError:
        try:
            _remove_deep(path)
        except OSError:
            if not ignore_errors:
                raise


def _remove_deep(path: str) -> None:
    """Depth first with a list of directory descriptors, not recursion (nor paths, which would
    outgrow PATH_MAX); links are removed, never followed."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    fds, names = [os.open(path, flags)], []
    try:
        while fds:
            with os.scandir(fds[-1]) as entries:
                below = None
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        below = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fds[-1])
            if below is not None:
                fds.append(os.open(below, flags, dir_fd=fds[-1]))
                names.append(below)
                continue
            os.close(fds.pop())
            if names:
                os.rmdir(names.pop(), dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
    os.rmdir(path)
