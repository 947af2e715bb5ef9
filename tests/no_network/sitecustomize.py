"""Sockets disabled for the test suite: the core promises never to open a network connection.

tests/conftest.py installs the guard in the pytest process (an attempt raises and fails the test);
subprocesses the tests start import this file as `sitecustomize` (its directory is put on
PYTHONPATH), where an attempt prints a message and exits with status 97 so nothing can swallow it.
Unix-domain sockets stay allowed: they never leave the machine. A test that runs a server of its
own on the loopback address (the Anthropic SDK against a local stand-in) may open TCP to 127.0.0.1,
::1 or localhost inside `with loopback_allowed():`, and to nothing else.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys

ENV_FLAG = "RETRIEVAL_TESTS_NO_NETWORK"
EXIT_STATUS = 97
ATTEMPTS: list[str] = []
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_loopback = [0]  # > 0 inside loopback_allowed()


@contextlib.contextmanager
def loopback_allowed():
    _loopback[0] += 1
    try:
        yield
    finally:
        _loopback[0] -= 1


def _is_loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) and address else address
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return _loopback[0] > 0 and host in LOOPBACK_HOSTS


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
            if self.family not in local and not (args and _is_loopback(args[-1] if name == "sendto" else args[0])):
                _blocked(f"socket.{name}{args!r}", hard)
            return original(self, *args, **kwargs)

        setattr(cls, name, method)

    # Methods of socket.socket catch every socket however it was imported; the resolver functions
    # catch name lookups, which open sockets inside the C library.
    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        guard_method(name)

    def guard_function(name):
        original = getattr(socket, name)

        def function(*args, **kwargs):
            if args and _is_loopback(args[0]):
                return original(*args, **kwargs)
            _blocked(f"socket.{name}{args!r}", hard)

        setattr(socket, name, function)

    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "create_connection"):
        guard_function(name)
    socket._retrieval_guard = True


if __name__ == "sitecustomize" and os.environ.get(ENV_FLAG) == "1":
    install(hard=True)
