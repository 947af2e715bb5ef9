"""The agent skill file (SKILL.md beside this module), shipped inside the package so that every
install has it: `retrieval skill` prints it, `retrieval skill --install` puts it where agents look."""
from __future__ import annotations

import os
from importlib import resources

FILE = "SKILL.md"
# Claude Code reads personal skills from ~/.claude/skills/<name>/SKILL.md.
DEFAULT_DIR = os.path.join("~", ".claude", "skills", "retrieval")


def text() -> str:
    # importlib.resources reads it from a wheel, a source tree or a zipapp alike.
    return resources.files(__name__).joinpath(FILE).read_text(encoding="utf-8")


# Beside an installed SKILL.md: the digest of what was installed, so an update can tell the file
# it wrote from one the user edited since (kept as SKILL.md.bak, never lost).
STAMP = ".retrieval-skill.sha256"


def _digest(content: str) -> str:
    import hashlib

    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _write(path: str, content: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(content)
    os.replace(tmp, path)


def _free_backup(path: str) -> str:
    """SKILL.md.bak, else SKILL.md.bak.1, .2, ...: an earlier backup (a hand-written skill) is
    never overwritten by a later one."""
    candidate, n = path + ".bak", 0
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{path}.bak.{n}"
    return candidate


def install(directory: str = DEFAULT_DIR) -> tuple[str, str, str | None]:
    """Write SKILL.md into `directory` (created if need be). Returns (path, what happened, the
    backup kept of one the user edited or None): 'installed', 'updated' or 'unchanged'. OSError
    with a message that names the directory when it cannot be written."""
    if not directory.strip():
        raise OSError("no directory given to --install")
    if directory == "~" or directory.startswith(("~/", "~" + os.sep)):
        # An empty HOME made `~/.claude/...` `/.claude/...` (expanduser's "/", the top of the file
        # system, as root), a relative one a directory under wherever the command ran. (POSIX:
        # Windows reads USERPROFILE, not HOME.)
        home = os.environ.get("HOME") if os.name == "posix" else None
        if home is not None and not os.path.isabs(home):
            raise OSError(f"cannot install the skill under {directory}: HOME is {os.environ.get('HOME', '')!r}, "
                          "not a home directory; give the directory (`--install DIR`)")
    directory = os.path.expanduser(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise OSError(f"cannot install the skill into {directory}: a file, not a directory")
    path = os.path.join(directory, FILE)
    content = text()
    try:
        with open(path, encoding="utf-8") as fh:
            before = fh.read()
    except (FileNotFoundError, NotADirectoryError):  # the directory's own trouble is said below
        before = None
    except (OSError, UnicodeError) as exc:
        raise OSError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if before == content:
        return path, "unchanged", None
    try:
        os.makedirs(directory, exist_ok=True)
        what, backup = ("installed" if before is None else "updated"), None
        if before is not None:
            try:
                with open(os.path.join(directory, STAMP), encoding="utf-8") as fh:
                    ours = fh.read().strip() == _digest(before)
            except OSError:
                ours = False
            if not ours:  # written or edited by someone else: kept, beside any kept before
                backup = _free_backup(path)
                _write(backup, before)
        _write(path, content)
        _write(os.path.join(directory, STAMP), _digest(content) + "\n")
    except OSError as exc:
        raise OSError(f"cannot install the skill into {directory}: {exc.strerror or exc}") from None
    return path, what, backup
