"""What the benchmark scripts (`scripts/`) share in reading their command lines: a bad value is a
usage error (exit 2) before any work, not a zero figure or a traceback after an hour's run."""
from __future__ import annotations

import argparse
import os


def positive_int(text: str) -> int:
    """An int of at least 1 (`-k 0` divided by zero; `--depth 0` scored every query 0)."""
    return _at_least(text, 1)


def count(text: str) -> int:
    """An int of at least 0 (a budget where 0 turns a figure off)."""
    return _at_least(text, 0)


def _at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
    return value


def names(text: str) -> list[str]:
    """A comma-separated list of names, each stripped (`--repos ' click , gin'` named `' click '`)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def check_output(parser: argparse.ArgumentParser, path: str | None, option: str = "--json") -> None:
    """A usage error now when `path` cannot be written (no such directory, or not writable): a run's
    report was lost to a traceback at its end."""
    if not path:
        return
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        parser.error(f"{option}: {path} is a directory")
    if not os.path.isdir(where):
        parser.error(f"{option}: no directory {where}")
    if not os.access(where, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        parser.error(f"{option}: {path} cannot be written")


def description(doc: str) -> str:
    """A script's description for --help: its docstring's first paragraph (the first line alone
    stopped mid-sentence)."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())
