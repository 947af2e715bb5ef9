"""Shell manners for the command group: a closed stdout (`| head -1`) ends the command quietly with
exit 0, as ripgrep does, and Ctrl-C exits 130 without a traceback or click's "Aborted!"."""
from __future__ import annotations

import errno
import os
import sys

import click

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


def _silence_stdout() -> None:
    # What is still buffered would fail again when Python flushes at exit: send it nowhere.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class ShellGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            value = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return value
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _silence_stdout()
            ctx.exit(0)
        except KeyboardInterrupt:
            if sys.stderr.isatty():
                sys.stderr.write("\r\x1b[K")  # no half-drawn progress line left behind
            ctx.exit(EXIT_INTERRUPTED)
