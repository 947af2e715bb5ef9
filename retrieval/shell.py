"""Shell manners for the command group: a closed stdout (`| head -1`) ends the command quietly with
exit 0, as ripgrep does, and Ctrl-C exits 130 without a traceback or click's "Aborted!"."""
from __future__ import annotations

import errno
import sys

import click

from .streams import discard_stdout

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class ShellGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            value = super().invoke(ctx)
            if sys.stdout is not None:  # None: started with stdout closed (`>&-`); nothing was printed
                sys.stdout.flush()  # a closed pipe shows here, not at exit
            return value
        except OSError as exc:
            discard_stdout()
            if exc.errno == errno.EPIPE:
                ctx.exit(0)
            # What a command does not report itself is the output failing: a full disk (> /dev/full).
            click.echo(f"error: cannot write the output: {exc.strerror or exc}", err=True)
            ctx.exit(1)
        except MemoryError:  # a memory limit (ulimit -v, a container's): one line, not a traceback
            click.echo("error: out of memory", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            if sys.stderr.isatty():
                sys.stderr.write("\r\x1b[K")  # no half-drawn progress line left behind
            ctx.exit(EXIT_INTERRUPTED)
