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


def install(directory: str = DEFAULT_DIR) -> tuple[str, str]:
    """Write SKILL.md into `directory` (created if need be). Returns (path, what happened):
    'installed', 'updated' or 'unchanged'."""
    directory = os.path.expanduser(directory)
    path = os.path.join(directory, FILE)
    content = text()
    try:
        with open(path, encoding="utf-8") as fh:
            before = fh.read()
    except FileNotFoundError:
        before = None
    if before == content:
        return path, "unchanged"
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(content)
    os.replace(tmp, path)
    return path, "installed" if before is None else "updated"
