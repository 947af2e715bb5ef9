"""Know whether anything in the tree changed since the last look, without a stat of every file.

Linux: inotify through ctypes, one watch per walked directory (a directory watch reports its files'
writes, attribute changes, creations, deletions and renames). The kernel queues an event when the
change happens, so draining the queue when a query arrives sees every edit saved before it.
Elsewhere, or when the watches cannot be set up, `PollWatcher` says "maybe changed" every time and
the caller checks the stats, as a cold query does.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
# Linux's values where os lacks them (Windows, where `retrieval mcp` imports this module too).
IN_NONBLOCK, IN_CLOEXEC = getattr(os, "O_NONBLOCK", 0o4000), getattr(os, "O_CLOEXEC", 0o2000000)

MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name


class PollWatcher:
    """No notifications: every look may have changed (the caller stats the files)."""

    exact = False
    # What `serve` says of it when it starts (its class name meant nothing to a user).
    described = "no change notifications here: each query checks the files' times"

    def watch_dirs(self, dirs) -> bool:
        return False

    def changed(self) -> bool:
        return True

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass


class InotifyWatcher:
    """Watches directories; `changed()` drains the queue and says whether a relevant event came."""

    def __init__(self, root: str, ignore_names: tuple[str, ...] = ()):
        self.root = root
        self.ignore_names = {n.encode("utf-8", "surrogateescape") for n in ignore_names}
        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._fd = fd
        self._dirs: dict[int, str] = {}  # wd -> relative directory
        self._watched: set[str] = set()
        self._interest: dict[str, frozenset | None] = {}  # directory -> entry names that matter (None: all)
        self.failed = False  # a watch could not be added: changes there go unseen

    described = "edits seen as they are saved (inotify)"

    @property
    def exact(self) -> bool:
        """Whether a quiet queue means an unchanged tree (every directory has its watch)."""
        return not self.failed

    def fileno(self) -> int:
        return self._fd

    def watch_dirs(self, dirs) -> bool:
        """Watch every directory in dirs (relative to root, or absolute outside it) not watched yet;
        True when any was new. `dirs` may map each to the entry names whose events matter there
        (None: all; see `directories`)."""
        added = False
        for rel in dirs:
            wanted = dirs.get(rel) if isinstance(dirs, dict) else None
            if rel in self._watched:
                if self._interest.get(rel, None) is not None:  # widen what matters there
                    self._interest[rel] = None if wanted is None else self._interest[rel] | wanted
                continue
            path = self.root if rel == "." else os.path.join(self.root, rel)
            # A link inside the tree is not followed (nor walked), but the root named as one
            # (`--root ~/proj`, a link to the checkout) is the directory it names.
            mask = MASK & ~IN_DONT_FOLLOW if rel == "." else MASK
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)
            if wd < 0:
                err = ctypes.get_errno()
                if err in (2, 20):  # ENOENT, ENOTDIR: not there (yet)
                    # Watch the nearest directory that is: making this one there is an event (a
                    # global excludes file in a `~/.config/git` made later), and the refresh it
                    # starts asks for this one again.
                    added = self._watch_above(path) or added
                    continue
                self.failed = True  # ENOSPC (the watch limit) or EACCES: fall back to stats
                continue
            moved = self._dirs.get(wd)
            if moved is not None and moved != rel:
                # The same directory under a new name (`mv pkg pkg2`, its move not drained yet): the
                # kernel hands back its watch. Its old name is no longer watched, nor those below it.
                self._forget(moved)
                self._drop_below(moved)
            self._dirs[wd] = rel
            self._watched.add(rel)
            self._interest[rel] = wanted
            added = True
        return added

    def _watch_above(self, path: str) -> bool:
        """Watch the nearest existing directory above `path` (absolute), for the entry on the way
        down to it."""
        parent = os.path.dirname(path)
        while parent != path:
            if os.path.isdir(parent):
                rel = os.path.relpath(parent, self.root)
                if rel == ".." or rel.startswith(".." + os.sep):
                    rel = parent  # outside the tree: by its absolute path
                return self.watch_dirs({rel: frozenset({os.path.basename(path)})})
            path, parent = parent, os.path.dirname(parent)
        return False

    def changed(self) -> bool:
        """Drain the queue; True when an event may change the index (or the queue overflowed)."""
        relevant = self.failed  # a directory without its watch may have changed (still drain: no busy loop)
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return relevant
            except InterruptedError:
                continue
            offset = 0
            while offset + EVENT.size <= len(data):
                wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
                name = data[offset + EVENT.size: offset + EVENT.size + length].rstrip(b"\0")
                offset += EVENT.size + length
                if mask & IN_IGNORED:  # the directory went away: watch it again later
                    self._forget(self._dirs.pop(wd, None))
                    relevant = True
                elif mask & IN_MOVE_SELF:
                    # Renamed (maybe out of the tree): its watch would follow it. Dropped, so that the
                    # old name and the new one are both watched afresh by the refresh that follows.
                    moved = self._dirs.pop(wd, None)
                    self._forget(moved)
                    self._libc.inotify_rm_watch(self._fd, wd)
                    # The directories below it moved too, their watches with them, still filed under
                    # the old names: a new tree put in its place (`mv src src.old; cp -r src.old src`)
                    # was taken for watched, and its edits went unseen.
                    self._drop_below(moved)
                    relevant = True
                elif mask & IN_Q_OVERFLOW:
                    # Events were dropped, maybe the IN_IGNORED of a directory removed and made again
                    # (a checkout): no name counts as watched until the refresh that follows adds it
                    # again (the kernel hands back a live watch as it is, a new directory gets one).
                    self._watched.clear()
                    self._interest.clear()
                    relevant = True
                else:
                    rel = self._dirs.get(wd)
                    wanted = self._interest.get(rel) if rel is not None else None
                    if rel == "." and name in self.ignore_names:
                        continue  # the store beside the tree: its own writes are not changes
                    if wanted is None or name.decode("utf-8", "surrogateescape") in wanted:
                        relevant = True

    def _forget(self, rel: str | None) -> None:
        self._watched.discard(rel)
        self._interest.pop(rel, None)

    def _drop_below(self, rel: str | None) -> None:
        """Forget, and stop, the watches of the directories under `rel` (names inside the tree)."""
        if rel is None or os.path.isabs(rel):
            return
        # The root itself moved (`mv repo repo.old; git clone ... repo`): every directory of the tree
        # went with it; those outside it (by their absolute names) stay where they were.
        prefix = "" if rel == "." else rel + os.sep
        for wd, name in list(self._dirs.items()):
            if name != "." and not os.path.isabs(name) and name.startswith(prefix):
                del self._dirs[wd]
                self._forget(name)
                self._libc.inotify_rm_watch(self._fd, wd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# File systems whose files can change without this kernel's VFS seeing it (another machine, the
# host of a VM or WSL): inotify stays silent there, so the server stats the files as a cold query does.
REMOTE_FILESYSTEMS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "drvfs", "afs",
                                "ceph", "lustre", "gpfs", "fuse.sshfs", "fuse.rclone", "fuse.glusterfs"})


def filesystem_type(path: str, mountinfo: str | None = None) -> str:
    """The type of the file system holding `path` (Linux's /proc/self/mountinfo; '' if unknown)."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
                mountinfo = fh.read()
        except OSError:
            return ""
    path = os.path.realpath(path)
    best, kind = -1, ""
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best:  # the deepest mount holding it (a later one over the same point wins)
            best, kind = len(point), right.split()[0]
    return kind


def make_watcher(root: str, ignore_names: tuple[str, ...] = ()):
    if sys.platform.startswith("linux") and filesystem_type(root) not in REMOTE_FILESYSTEMS:
        try:
            return InotifyWatcher(root, ignore_names)
        except (OSError, AttributeError):
            pass
    return PollWatcher()


def directories(root: str, watch: dict) -> dict[str, frozenset | None]:
    """The directories to watch for a manifest's `watch` table, each with the entry names whose
    events matter there: None (every entry) for a directory of the tree; for one that holds only
    watched files (an ignore file, a file over the size cap, the absent `.git` of a directory above
    the root, a git config file), those files' names, so that a busy home directory or `/` costs
    no check for what happens in it otherwise."""
    root = os.path.abspath(root)
    out: dict[str, frozenset | None] = {}

    def key(path: str) -> str:
        # One name per directory: an absolute path inside the tree is its relative one (a second
        # name for the same directory would be watched twice, and look new every time).
        if os.path.isabs(path):
            inside = os.path.relpath(path, root)
            if inside != ".." and not inside.startswith(".." + os.sep):
                return inside
        return path

    def everything(directory: str) -> None:
        out[key(directory) or "."] = None

    def names(directory: str, name: str) -> None:
        directory = key(directory) or "."
        if directory in out and out[directory] is None:
            return
        out[directory] = (out.get(directory) or frozenset()) | {name}

    for rel, value in watch.items():
        if rel.endswith("/") or rel == ".":  # walked directories are recorded as "dir/" (and ".")
            everything(rel.rstrip("/") or ".")
        elif value and value[0] == 0 and os.path.isdir(os.path.join(root, rel)):
            everything(rel)
        else:
            names(os.path.dirname(rel) or ".", os.path.basename(rel))
    return out
