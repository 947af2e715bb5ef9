"""The `serve` and `mcp` commands (click); the work is in serve.py and retrieval/mcp.py."""
from __future__ import annotations

import os
import signal
import sys

import click

from ..options import RootPath
from ..output import shown_path
from ..roots import too_broad
from ..shell import RootCommand
from .client import DEFAULT_IDLE_TIMEOUT, NOT_HERE, serves_here

_root = click.option("--root", type=RootPath(), default=None, metavar="DIR",
                     help="Repository root to serve (default: found as for `query`).")


def _fail(message: str):
    from ..cli import UserError

    return UserError(message.splitlines()[0] if message else "failed")


class _Seconds(click.FloatRange):
    """A finite number of seconds, 0 or more: `nan` passed the range (no comparison is true of it),
    the server never idled out, and its info file held NaN, which no JSON reader takes."""

    def __init__(self):
        super().__init__(min=0)

    def convert(self, value, param, ctx):
        import math

        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a number of seconds (0: never)", param, ctx)
        return seconds


@click.command("serve", cls=RootCommand, short_help="Keep indexes warm for fast queries.")
@_root
@click.option("--stop", is_flag=True, help="Stop the root's running server.")
@click.option("--detach", is_flag=True, help="Run in the background; return once the server answers.")
@click.option("--idle-timeout", type=_Seconds(), default=int(DEFAULT_IDLE_TIMEOUT), show_default=True,
              metavar="SECONDS", help="Exit after this long without a request (0: never).")
def serve_command(root, stop, detach, idle_timeout):
    """Keep the root's indexes (--root DIR) open and answer `query` and `status` from a warm process (a Unix socket
    in the store, this user only). `query` and `status` use it automatically."""
    from ..cli import _expected_errors, found_root
    from . import serve

    timeout_given = click.get_current_context().get_parameter_source("idle_timeout") != click.core.ParameterSource.DEFAULT
    if stop:
        # Silently ignored, they made `serve --stop --detach` (a restart?) stop the server and start none.
        extra = [flag for flag, used in (("--detach", detach), ("--idle-timeout", timeout_given)) if used]
        if extra:
            raise click.UsageError(f"--stop takes no {' or '.join(extra)}: it only stops the running server")
    found = found_root(root)
    root = found.path
    reason = ""
    import socket

    # Windows' Python has no Unix sockets (nor fcntl): said in one line, not a traceback from the bind.
    if not stop and not hasattr(socket, "AF_UNIX"):
        raise _fail("`retrieval serve` needs Unix domain sockets, which this system lacks; "
                    "`query` and `status` work without a server")
    refusal = None if stop else too_broad(found)
    if refusal:
        raise _fail(refusal)
    if stop:
        from ..discover import root_problem

        problem = root_problem(root, shown_path(root))  # "no server is running" for a typo'd root
        if problem:
            raise _fail(problem)
    try:
        if stop:
            pid = serve.stop(root)
            click.echo(f"stopped the server of {shown_path(root)} (pid {pid})" if pid
                       else f"no server is running for {shown_path(root)}",
                       err=True)
        elif detach:
            info = serve.start_detached(root, idle_timeout, waiting=lambda log: click.echo(
                f"starting the server of {shown_path(root)}: it opens the indexes built there first, "
                f"refreshing them (and building lexical's if missing; its log: {shown_path(log)})", err=True))
            said = "already serving" if info.get("already") else "serving"
            busy = ", busy with another command" if info.get("busy") else ""
            click.echo(f"{said} {shown_path(root)} (pid {info['pid']}{busy})", err=True)
            known = info.get("already") and not busy  # (a busy one's code and settings are not known)
            if known and not serves_here(info, asked=False):
                # It looked ready, and every query from here quietly ran without it.
                click.echo(f"note: {NOT_HERE}; `retrieval serve --stop` first to serve this shell", err=True)
            elif known and timeout_given and info.get("idle_timeout") != idle_timeout:
                # (the timeout asked for was dropped without a word: a server kept for ever, or not)
                running = info.get("idle_timeout")
                click.echo(f"note: that server's --idle-timeout is {_said_timeout(running)}, not "
                           f"{_said_timeout(idle_timeout)}; `retrieval serve --stop` first to change it", err=True)
        else:
            reason = serve.run(root, idle_timeout)
    except serve.AlreadyRunning as exc:
        raise _fail(str(exc))
    except _expected_errors() as exc:
        raise _fail(str(exc) or exc.__class__.__name__)
    # Stopped by a signal, it exits as a command killed by it would (README, shell manners): 143
    # for SIGTERM, 129 for SIGHUP; an idle timeout is a normal end.
    for name in ("SIGTERM", "SIGHUP"):
        if reason == f"stopped by {name}":
            click.get_current_context().exit(128 + getattr(signal, name))


@click.command("mcp", cls=RootCommand, short_help="Serve search to coding agents over MCP.")
@_root
def mcp_command(root):
    """A Model Context Protocol server on stdio (tools: search, status) for coding agents."""
    from ..extras import install_hint, missing_modules

    missing = missing_modules("mcp")
    if missing:
        raise _fail(f"`retrieval mcp` needs the mcp extra ({', '.join(missing)} missing): {install_hint('mcp')}")
    from .. import mcp
    from ..cli import found_root
    from ..discover import root_problem

    given = root
    found = found_root(root)
    root = found.path
    if given is not None and not os.path.isabs(given) and found.reason == "given":
        # `--root .` in an agent's config is where the host starts it, not a choice: a config from
        # before it was dropped indexed the home directory a per-user host runs in.
        found = found._replace(reason="cwd")
    refusal = too_broad(found, advice='the server searches the repository it is started in: give it one in the '
                                      'MCP config ("args": ["mcp", "--root", "/path/to/project"])')
    if refusal:
        # Said on stderr, and served as every call's answer: a host shows a server that exits at
        # start as "Connection closed", and the agent never learns why (a per-user config starts it
        # in the home directory).
        click.echo(f"error: {refusal} (every call answers this)", err=True)
    problem = None if refusal else root_problem(root, shown_path(root))
    if problem:
        # Served as every call's answer until it is fixed (a mistyped path, an unexpanded
        # `${workspaceFolder}`): exiting at start, the agent saw only "Connection closed".
        click.echo(f"error: {problem} (every call answers this until it exists)", err=True)
    # The protocol runs over both (started `>&-`, the SDK failed with a traceback).
    closed = [name for name in ("stdin", "stdout") if getattr(sys, name) is None]
    if closed:
        raise _fail(f"`retrieval mcp` talks over stdin and stdout: {' and '.join(closed)} closed")
    # A host stops its MCP server with SIGTERM, between calls: that ends it at once, not after stdin
    # closes. So does Ctrl-C where it was started by hand: raised, it waited for the SDK's reader of
    # stdin, a thread nothing interrupts. (The store is safe from a kill at any point.)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    mcp.run(root, refusal, found.reason)


def _said_timeout(seconds) -> str:
    if not isinstance(seconds, (int, float)):
        return "unknown"
    return "0 (never)" if not seconds else f"{seconds:g} s"
