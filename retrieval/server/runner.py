"""Run a CLI command line inside this process and capture what it prints, byte for byte.

The server and the MCP adapter answer with the very code a cold `retrieval` runs, so their output
cannot drift from it. Process-global state (the standard streams, the working directory) is swapped
for the call: callers run one command at a time.
"""
from __future__ import annotations

import io
import os
import sys


class _Capture(io.BytesIO):
    """A captured stream that is a terminal when the caller's is (the command colours for it).
    With `order`, each write is logged there as [fd, bytes], a run of writes to one stream as one
    entry: the order of the two streams' writes, which `2>&1` shows."""

    def __init__(self, data: bytes = b"", tty: bool = False, order: list | None = None, fd: int = 0):
        super().__init__(data)
        self.tty = tty
        self._order = order
        self._fd = fd

    def isatty(self) -> bool:
        return self.tty

    def write(self, data) -> int:
        n = super().write(data)
        if self._order is not None and n:
            if self._order and self._order[-1][0] == self._fd:
                self._order[-1][1] += n
            else:
                self._order.append([self._fd, n])
        return n


def _stream(buffer, encoding: str | None, errors: str | None):
    return io.TextIOWrapper(buffer, encoding=encoding or "utf-8", errors=errors or "strict",
                            write_through=True)


def run_cli(argv: list[str], cwd: str | None = None, stdin: bytes = b"", encodings: dict | None = None,
            caller_env: dict | None = None, order: list | None = None):
    """(exit status, stdout bytes, stderr bytes) of `retrieval ARGV` run here. With `caller_env` (a
    server answering another process), the variables a command reads for itself alone
    (client.ENV_PER_CALL) take the caller's values for this call, unset when the caller has none.
    With `order`, the order of its writes (_Capture) is added there, for a caller to replay."""
    from .. import settings
    from ..cli import main
    from .client import ENV_PER_CALL

    encodings = encodings or {}
    out = _Capture(tty=bool(encodings.get("stdout_tty")), order=order, fd=1)
    err = _Capture(tty=bool(encodings.get("stderr_tty")), order=order, fd=2)
    saved = sys.stdin, sys.stdout, sys.stderr
    # Returned to by descriptor: the caller's directory may have been removed (getcwd() then fails).
    here = os.open(".", os.O_RDONLY) if cwd else None
    # Held here as well as in sys: dropping a wrapper would close the buffer under it.
    streams = (_stream(_Capture(stdin, bool(encodings.get("stdin_tty"))), encodings.get("stdin"), encodings.get("stdin_errors")),
               _stream(out, encodings.get("stdout"), encodings.get("stdout_errors")),
               _stream(err, encodings.get("stderr"), encodings.get("stderr_errors") or "backslashreplace"))
    sys.stdin, sys.stdout, sys.stderr = streams
    # A command may set environment variables for itself (`--embed-model`): not for the next one.
    environ = dict(os.environ)
    # A bad RETRIEVAL_* value is named once per process: a cold command names it every time, so
    # each command run here does too (else only the server's first one, or its log, said it).
    settings._warned.clear()
    try:
        for key in ENV_PER_CALL if caller_env is not None else ():
            if key in caller_env:
                os.environ[key] = caller_env[key]
            else:
                os.environ.pop(key, None)
        try:
            if cwd:
                try:
                    os.chdir(cwd)
                except OSError as exc:  # a root removed under a long-lived server
                    print(f"error: cannot work in {cwd}: {exc.strerror}", file=sys.stderr)
                    raise SystemExit(1) from None
            main.main(args=list(argv), prog_name="retrieval", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"): Python prints it and exits with 1
                print(exc.code, file=sys.stderr)
                code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        if os.environ != environ:
            os.environ.clear()
            os.environ.update(environ)
        if here is not None:
            os.fchdir(here)
            os.close(here)
    result = code, out.getvalue(), err.getvalue()
    for stream in streams:
        stream.detach()
    return result
