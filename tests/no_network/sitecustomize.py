"""Sockets disabled for the test suite: the core promises never to open a network connection.

tests/conftest.py installs the guard in the pytest process (an attempt raises and fails the test);
subprocesses the tests start import this file as `sitecustomize` (its directory is put on
PYTHONPATH), where an attempt prints a message and exits with status 97 so nothing can swallow it.
Unix-domain sockets stay allowed: they never leave the machine.
"""
from __future__ import annotations

import os
import socket
import sys

ENV_FLAG = "RETRIEVAL_TESTS_NO_NETWORK"
EXIT_STATUS = 97
ATTEMPTS: list[str] = []


class NetworkAccessError(RuntimeError):
    pass


def _blocked(what: str, hard: bool):
    ATTEMPTS.append(what)
    if hard:
        sys.stderr.write(f"network access attempted while sockets are disabled: {what}\n")
        sys.stderr.flush()
        os._exit(EXIT_STATUS)
    raise NetworkAccessError(f"network access attempted while sockets are disabled: {what}")


def install(hard: bool) -> None:
    if getattr(socket, "_retrieval_guard", False):
        return
    local = {getattr(socket, "AF_UNIX", None)}
    cls = socket.socket

    def guard_method(name):
        original = getattr(cls, name)

        def method(self, *args, **kwargs):
            if self.family not in local:
                _blocked(f"socket.{name}{args!r}", hard)
            return original(self, *args, **kwargs)

        setattr(cls, name, method)

    # Methods of socket.socket catch every socket however it was imported; the resolver functions
    # catch name lookups, which open sockets inside the C library.
    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        guard_method(name)

    def guard_function(name):
        def function(*args, **kwargs):
            _blocked(f"socket.{name}{args!r}", hard)

        setattr(socket, name, function)

    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "create_connection"):
        guard_function(name)
    socket._retrieval_guard = True


if __name__ == "sitecustomize" and os.environ.get(ENV_FLAG) == "1":
    install(hard=True)
