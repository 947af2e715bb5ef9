"""Option types the commands share (click): one rule for a value whatever command takes it."""
from __future__ import annotations

import click

# Hits a query returns unless told (`-k`; an MCP call without top_k).
DEFAULT_TOP_K = 10


class RootPath(click.Path):
    """A root directory's path; an empty one is refused: `--root "$UNSET"` was the current
    directory, and from a folder of repositories it indexed all of them."""

    def __init__(self):
        # Not click's readable check: an unreadable root was a usage error (exit 2), a missing one exit 1.
        super().__init__(file_okay=True, dir_okay=True, readable=False)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value:
            self.fail("is empty (an unset variable?): name a directory, or leave the option out", param, ctx)
        return super().convert(value, param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        # Directories: a shell's completion offered every file (click.Path completes both).
        return [CompletionItem(incomplete, type="dir")]
