"""Where a store lives and how its per-retriever manifest is read and committed.

  <root>/.retrieval/            (or a directory under $RETRIEVAL_INDEX_DIR, one per root)
    STORE.json                  schema version and the root it belongs to
    lock                        the writer lock
    <retriever>/manifest.json   the commit point: options, per-file manifest, retriever state
    <retriever>/...             the retriever's immutable files (segments, vectors, ...)
"""
from __future__ import annotations

import errno
import json
import os
import shlex
import stat

from .atomic import TMP_PREFIX, remove_tree, write_bytes, write_json
from .naming import store_name

SCHEMA = 2  # 2: the file table is stored as columns
STORE_DIRNAME = ".retrieval"
ENV_INDEX_DIR = "RETRIEVAL_INDEX_DIR"


class StoreError(RuntimeError):
    """The store cannot be used (unreadable, not writable, damaged beyond rebuilding)."""


class ManifestProblem(Exception):
    """A manifest that exists but cannot be used as-is; the store is rebuilt."""


def store_dir(root: str) -> str:
    root = os.path.abspath(root)
    moved = os.environ.get(ENV_INDEX_DIR)
    if moved:
        if not os.path.isabs(moved):
            # Taken from the current directory, it named another store in each subdirectory a
            # command ran from, each a full rebuild.
            raise StoreError(f"{ENV_INDEX_DIR}={moved} is a relative path: it must be absolute (or unset it)")
        if not os.path.lexists(moved) and not os.path.isdir(os.path.dirname(os.path.abspath(moved))):
            # Made with all its parents, a typo wrote a tree of directories wherever it pointed
            # (`/nonexistent/deep/repo-...`): the directory itself is made, not its parents.
            raise StoreError(f"{ENV_INDEX_DIR}={moved} does not exist, nor does the directory above it: create it "
                             "(or unset the variable)")
        # One subdirectory per root, so several repositories can share one index directory.
        return os.path.join(os.path.abspath(moved), store_name(root))
    return os.path.join(root, STORE_DIRNAME)


# Errors an index directory elsewhere gets around (a read-only checkout, a directory not ours).
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def elsewhere() -> str:
    """Where to keep an index that cannot be written where it is: RETRIEVAL_INDEX_DIR (said as set
    already when it is: naming it as the way out said to do what had been done)."""
    moved = os.environ.get(ENV_INDEX_DIR)
    return (f"point {ENV_INDEX_DIR}, now {moved}, at a writable directory" if moved else
            f"set {ENV_INDEX_DIR}=/a/writable/directory to keep indexes elsewhere")


def unwritable(action: str, store: str, exc: OSError) -> StoreError:
    """The error for a store that cannot be written; for a read-only or foreign directory it says
    how to keep the index elsewhere."""
    message = f"cannot {action} the index at {store}: {exc.strerror or exc}"
    moved = os.environ.get(ENV_INDEX_DIR)
    if moved and os.path.exists(moved) and not os.path.isdir(moved):
        message = f"{ENV_INDEX_DIR}={moved} is not a directory: point it at one (or unset it)"
    elif moved and os.path.islink(moved) and not os.path.exists(moved):
        # The error was the link's target's "No such file or directory", said of the store below it.
        message = (f"{ENV_INDEX_DIR}={moved} is a symbolic link to {os.readlink(moved)}, which does not exist: "
                   "create that directory or point the variable at another (or unset it)")
    elif getattr(exc, "errno", None) in NOT_WRITABLE:
        message += f" ({elsewhere()})"
    elif getattr(exc, "errno", None) in (errno.ENOTDIR, errno.EEXIST):
        # A file where the store has a directory (put there by hand or by a tool): named, since
        # the path said only that something on it is no directory (or, making it, that it exists).
        path = os.path.abspath(exc.filename if isinstance(exc.filename, str) else store)
        # Exists: only the store's own directories are made that way (a temp file made exclusively
        # is no directory in the way).
        made = exc.errno == errno.ENOTDIR or path == os.path.abspath(store) or os.path.dirname(path) == os.path.abspath(store)
        blocker = _file_in_the_way(path) if made else None
        if blocker:
            message = (f"{blocker} is a file where the index keeps a directory: move it away, or set "
                       f"{ENV_INDEX_DIR} to keep indexes elsewhere")
    return StoreError(message)


def refuse_blocked(store: str) -> None:
    """One error line, as a write would say it, for a file where the store goes or an index
    directory (RETRIEVAL_INDEX_DIR) that is a file: `status` said it in every retriever's row, the
    extras not installed too, and exited 0."""
    if _file_in_the_way(store):
        raise unwritable("read", store, NotADirectoryError(errno.ENOTDIR, "Not a directory", store))


def _file_in_the_way(path: str) -> str | None:
    """The first existing component of path that is not a directory (None when none is)."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        prefix = os.sep.join(parts[:i])
        if not os.path.lexists(prefix):
            return None
        if not os.path.isdir(prefix):
            return prefix
    return None


def retriever_dir(store: str, name: str) -> str:
    return os.path.join(store, name)


def lock_path(store: str) -> str:
    """The writer lock's file (retrieval.store.lock), one for the whole store."""
    return os.path.join(store, "lock")


def manifest_path(store: str, name: str) -> str:
    return os.path.join(store, name, "manifest.json")


def ensure_store(store: str) -> None:
    """The store directory, where the writer lock lives; its files are written under the lock."""
    refuse_symlink(store)
    try:
        # The owner's alone, as ssh keeps ~/.ssh: the index holds every word of files only their
        # owner may read (a 0600 source's words were in 0644 segment files).
        os.makedirs(store, mode=0o700, exist_ok=True)
        _refuse_other_owner(store)
        if not os.path.exists(os.path.join(store, "STORE.json")):
            _refuse_foreign(store)
    except OSError as exc:
        raise unwritable("write", store, exc) from exc


def refuse_untrusted(store: str, root: str) -> None:
    """For a reader: a store that neither this user nor the root's owner made is not read (a
    predictable name under a shared RETRIEVAL_INDEX_DIR, planted in advance, chose the hits and the
    text an agent reads). A teammate's index in a checkout of theirs is read."""
    if not hasattr(os, "geteuid"):
        return
    try:
        owner = os.stat(store).st_uid
        if owner == os.geteuid() or owner == os.stat(root).st_uid:
            return
    except OSError:
        return  # none yet, or unreadable: what reads it says so
    if owner == 0:
        raise StoreError(f"refusing to read the index at {store}: root made it{_BY_ROOT} "
                         f"`sudo rm -rf {shlex.quote(store)}` removes it, or set {ENV_INDEX_DIR} to keep yours elsewhere")
    raise StoreError(f"refusing to read the index at {store}: another user (uid {owner}) made it, neither you nor the "
                     f"repository's owner; remove it, or set {ENV_INDEX_DIR} to keep the index elsewhere")


# Said to the repository's owner of a store root made there, which they can neither use nor delete.
_BY_ROOT = (" (a command run with sudo, or in a container running as root) and it is root's alone, its "
            "files unreadable and undeletable by you:")


def _refuse_other_owner(store: str) -> None:
    """A store directory another user made (a predictable name under a shared RETRIEVAL_INDEX_DIR)
    is theirs to read, replace or poison: never written into. One of ours open to others is closed."""
    if not hasattr(os, "geteuid"):
        return
    st = os.stat(store)
    if st.st_uid == 0 != os.geteuid():
        raise StoreError(f"refusing to write the index at {store}: root made it{_BY_ROOT} `sudo rm -rf {shlex.quote(store)}` "
                         f"removes it, or set {ENV_INDEX_DIR} to keep yours elsewhere")
    if st.st_uid != os.geteuid():
        raise StoreError(f"refusing to write the index at {store}: it belongs to another user (uid {st.st_uid}); "
                         f"run as that user, or set {ENV_INDEX_DIR} to keep the index elsewhere")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(store, stat.S_IMODE(st.st_mode) & 0o700)  # (one the user made read-only stays so)


def write_markers(store: str, root: str) -> None:
    """STORE.json (what `clean` checks before deleting) and a .gitignore; call with the lock held."""
    try:
        marker = os.path.join(store, "STORE.json")
        if not os.path.exists(marker):
            write_json(marker, {"schema": SCHEMA, "root": os.path.abspath(root)}, durable=True)
        # Keep git from ever picking the store up.
        gitignore = os.path.join(store, ".gitignore")
        if not os.path.lexists(gitignore):
            write_bytes(gitignore, b"*\n")
    except OSError as exc:
        raise unwritable("write", store, exc) from exc


def refuse_foreign(store: str) -> None:
    """For a reader: a directory at the store's place that no build of ours made is refused as a
    build refuses it (status listed its indexes as missing, to be built by a command that failed)."""
    try:
        if os.path.isdir(store) and not os.path.exists(os.path.join(store, "STORE.json")):
            _refuse_foreign(store)
    except OSError:
        pass  # unreadable: what reads it says so


def _refuse_foreign(store: str) -> None:
    """A directory at the store's place that holds what no writer of ours puts there (a `.retrieval`
    of the user's or of another tool) is not adopted: `clean` deletes a store whole, the user's
    files with it."""
    foreign = foreign_names(store)
    if foreign:
        raise StoreError(f"refusing to keep the index in {store}: it holds {foreign[0]}, which retrieval did "
                         f"not write (move that away, or set {ENV_INDEX_DIR} to keep the index elsewhere)")


def foreign_names(store: str) -> list[str]:
    """The names in a store directory that no writer of ours puts there, sorted."""
    from ..retrievers.base import REGISTRY
    from ..server.client import SERVE_DIRNAME

    # STORE.json too: another writer may have made the store ours since the caller looked for it.
    ours = {*REGISTRY, SERVE_DIRNAME, "lock", ".gitignore", "STORE.json"}
    return sorted(n for n in os.listdir(store) if n not in ours and not n.startswith(TMP_PREFIX))


def refuse_symlink(path: str) -> None:
    """A store (or a retriever's directory in it) that is a symbolic link could send every write
    outside the root, e.g. a `.retrieval` link committed to a cloned repository."""
    if os.path.islink(path):
        raise StoreError(
            f"refusing to use {path}: it is a symbolic link (set {ENV_INDEX_DIR} to keep the index elsewhere)"
        )


def read_manifest(store: str, name: str) -> dict | None:
    """The committed manifest; None when there is none; ManifestProblem when unusable."""
    path = manifest_path(store, name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:  # put there by hand or by a tool: not a manifest, so no index
        raise ManifestProblem(f"{path} is a directory") from None
    except OSError as exc:
        raise unwritable("read", path, exc) from exc
    try:
        manifest = json.loads(data)
    except ValueError:
        raise ManifestProblem(f"the {name} index is corrupt") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        schema = manifest.get("schema") if isinstance(manifest, dict) else None
        if type(schema) is int and schema > 0:
            # Said as such: a newer version's index is rebuilt in this one's schema, not misread.
            age = "a newer" if schema > SCHEMA else "an older"
            raise ManifestProblem(f"the {name} index was written by {age} version of retrieval "
                                  f"(store schema {schema}; this one reads {SCHEMA})")
        raise ManifestProblem(f"the {name} index has an old or unknown schema")
    config, state, files = manifest.get("config"), manifest.get("state"), manifest.get("files")
    if (
        manifest.get("retriever") != name
        or not isinstance(files, dict)
        or not isinstance(config, dict)
        or not isinstance(config.get("options"), dict)
        or not isinstance(state, dict)
        or not _columns_ok(files)
    ):
        raise ManifestProblem(f"the {name} index is corrupt")
    return manifest


# The per-file table, one list per field: a cold query parses it, and columns parse several times
# faster than one small list per file.
FILE_COLUMNS = ("path", "size", "mtime", "digest", "language", "kind", "chunks", "skip")
CTIME_COLUMN = "ctime"  # optional: indexes written before it have none (0: not recorded)
MARKED_COLUMN = "marked"  # optional: what .gitattributes said of each file when it was indexed


def _columns_ok(files: dict) -> bool:
    columns = [files.get(c) for c in FILE_COLUMNS]
    for optional in (CTIME_COLUMN, MARKED_COLUMN):
        if optional in files:
            columns.append(files[optional])
    marked = files.get(MARKED_COLUMN)
    if isinstance(marked, list) and not all(v is None or isinstance(v, bool) for v in marked):
        return False  # not a list at all fails below, as any column does
    return all(isinstance(c, list) for c in columns) and len({len(c) for c in columns}) == 1


def commit_manifest(store: str, name: str, manifest: dict) -> None:
    path = manifest_path(store, name)
    if os.path.isdir(path) and not os.path.islink(path):  # (see read_manifest) in the way of the rename
        remove_tree(path, ignore_errors=True)
    write_json(path, manifest, durable=True)


def directory_size(path: str) -> int:
    """Bytes of the files under path, leaving out what an interrupted writer left (a `*.tmp`
    directory, a `.tmp-*` file): the next writer removes those, and they are not the index."""
    total = 0
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.endswith(".tmp") and not d.startswith(TMP_PREFIX)]
        for f in files:
            if f.startswith(TMP_PREFIX):
                continue
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


CACHE_OFF = ("off", "0", "none", "no")


def machine_cache(name: str = "", env: str = "") -> str | None:
    """A cache this user's indexes share: `$env` when set (None when it says off), else
    $XDG_CACHE_HOME/retrieval/<name> (~/.cache when XDG_CACHE_HOME is unset)."""
    value = os.environ.get(env, "").strip() if env else ""
    if value.lower() in CACHE_OFF:
        return None
    if value:
        return os.path.abspath(value)  # the server changes directory per call
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "retrieval", name) if name else os.path.join(home, "retrieval")
