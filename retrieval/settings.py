"""Numbers and choices read from `RETRIEVAL_*` environment variables.

A value that cannot be used (`RETRIEVAL_JOBS=four`, `RETRIEVAL_TURBOVEC_BITS=8`) is not an error
that stops a query, but it must not pass silently either: the user set it to change something.
Each bad value is named once per process on stderr, with the default used instead.
"""
from __future__ import annotations

import os
import sys

_warned: set[tuple[str, str]] = set()


def _warn(name: str, raw: str, wanted: str, default) -> None:
    if (name, raw) in _warned:
        return
    _warned.add((name, raw))
    print(f"retrieval: ignoring {name}={raw!r}: not {wanted}; using {default}", file=sys.stderr)


def env_int(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    """$name as a whole number >= minimum; unset or empty: `default`; over `maximum`, that (said)."""
    raw = os.environ.get(name, "")
    value = raw.strip()
    if not value:
        return default
    if value.isdigit() and int(value) >= minimum:
        if maximum is not None and int(value) > maximum:
            _warn(name, raw, f"at most {maximum}", maximum)
            return maximum
        return int(value)
    _warn(name, raw, f"a whole number >= {minimum}", default)
    return default


def env_float(name: str, default: float, minimum: float = 0.0) -> float:
    """$name as a number >= minimum; unset or empty: `default`."""
    raw = os.environ.get(name, "")
    value = raw.strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None and number == number and number >= minimum and number != float("inf"):
        return number
    _warn(name, raw, f"a number >= {minimum:g}", default)
    return default


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """$name as one of `choices`; unset or empty: `default`."""
    raw = os.environ.get(name, "")
    value = raw.strip()
    if not value:
        return default
    if value in choices:
        return value
    _warn(name, raw, "one of " + ", ".join(choices), default)
    return default


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def env_flag(name: str, default: bool) -> bool:
    """$name as a yes/no setting (1/true/yes/on, 0/false/no/off, any case); unset or empty: `default`."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _warn(name, raw, "1/true/yes/on or 0/false/no/off", "on" if default else "off")
    return default
