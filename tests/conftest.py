"""Shared fixtures: small repositories built in tmp_path, and helpers to change them on disk.

The whole suite runs with sockets disabled, in this process and in every Python subprocess a test
starts (see tests/no_network/sitecustomize.py): the core must never touch the network.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

STORE_ENV = ("RETRIEVAL_INDEX_DIR", "RETRIEVAL_MAX_TOTAL_BYTES")

NO_NETWORK_DIR = Path(__file__).resolve().parent / "no_network"


def _install_network_guard():
    spec = importlib.util.spec_from_file_location("no_network_guard", NO_NETWORK_DIR / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install(hard=False)
    os.environ[module.ENV_FLAG] = "1"
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(NO_NETWORK_DIR) + (os.pathsep + inherited if inherited else "")
    return module


network_guard = _install_network_guard()

# Extras' tests carry @pytest.mark.extra("NAME"). Without the extra they are skipped (a core-only
# run), unless RETRIEVAL_REQUIRE_EXTRAS=1 (the full run of `make test`), where a missing extra is
# an error: a silent skip would hide a broken install.
REQUIRE_EXTRAS = os.environ.get("RETRIEVAL_REQUIRE_EXTRAS") == "1"


def pytest_runtest_setup(item):
    from retrieval.extras import install_hint, missing_modules

    for mark in item.iter_markers("extra"):
        for extra in mark.args:
            missing = missing_modules(extra)
            if missing:
                message = f"needs the {extra!r} extra ({', '.join(missing)} missing): {install_hint(extra)}"
                if REQUIRE_EXTRAS:
                    pytest.fail(message + " [RETRIEVAL_REQUIRE_EXTRAS=1]", pytrace=False)
                pytest.skip(message)


@pytest.fixture(autouse=True)
def _no_network_attempts():
    """Fail the test that tried to reach the network, even if the code swallowed the error."""
    network_guard.ATTEMPTS.clear()
    yield
    attempts = list(network_guard.ATTEMPTS)
    network_guard.ATTEMPTS.clear()
    assert not attempts, f"network access attempted: {attempts}"


@pytest.fixture(autouse=True)
def _no_mishandled_trees():
    """Fail the test during which the AST chunker mishandled a tree: the file falls back to line
    chunks, which would hide a chunker bug from every test not looking at labels."""
    yield
    ast = sys.modules.get("retrieval.chunking.ast")  # not imported here: the core runs without it
    if ast is not None and ast.MISHANDLED:
        mishandled = list(ast.MISHANDLED)
        ast.MISHANDLED.clear()
        raise AssertionError(f"the AST chunker mishandled: {mishandled}")


@pytest.fixture(autouse=True)
def _no_store_environment(monkeypatch, tmp_path_factory):
    """Every test starts with the store beside the root and no total-size override."""
    for name in STORE_ENV:
        monkeypatch.delenv(name, raising=False)
    # The user's own git excludes (~/.config/git/ignore) would decide what a test tree indexes.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    # The machine-wide embedding cache would carry vectors from one test to the next (and into the
    # user's home): off, except in the tests of that cache.
    monkeypatch.setenv("RETRIEVAL_EMBED_CACHE", "off")
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", "off")  # the same for model-written contexts
    # A CI runner's FORCE_COLOR would colour every piped output the tests read.
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def write_tree(root: Path, files: dict) -> Path:
    """Create files under root from {relative path: str | bytes}; str is written as UTF-8, verbatim."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    _backdate(root)
    return root


def _backdate(root: Path) -> None:
    """Stamp a new tree a minute old, as a checkout usually is: entries stamped within a tick of
    indexing get a content check at the next refresh (racy entries, retrieval/freshness.py)."""
    old = time.time_ns() - 60_000_000_000
    for dirpath, _dirs, names in sorted(os.walk(root), reverse=True):  # children before parents
        for name in names:
            if not os.path.islink(os.path.join(dirpath, name)):
                os.utime(os.path.join(dirpath, name), ns=(old, old))
        os.utime(dirpath, ns=(old, old))


@pytest.fixture
def make_tree(tmp_path):
    """make_tree({path: content}, name="repo") -> the root Path."""
    counter = iter(range(1_000_000))

    def make(files: dict, name: str | None = None) -> Path:
        return write_tree(tmp_path / (name or f"repo{next(counter)}"), files)

    return make


def _later_mtime(path: Path) -> None:
    # File timestamps are coarse (a kernel tick): move mtime forward explicitly so that a change
    # is always visible to the stat-based change detection. To the present, not into the future: a
    # future stamp the clock reaches between a refresh and a later check reads as racy there.
    st = path.stat()
    new = max(time.time_ns(), st.st_mtime_ns + 1_000)
    os.utime(path, ns=(new, new))


@pytest.fixture
def rewrite():
    """rewrite(path, text): replace a file's content and make sure its mtime moves forward."""

    def do(path: Path, text: str) -> None:
        path.write_text(text, encoding="utf-8")
        _later_mtime(path)

    return do


@pytest.fixture
def touch():
    """touch(path): change only the mtime."""
    return _later_mtime


@pytest.fixture
def copy_tree(tmp_path):
    """copy_tree(root) -> a fresh copy of root without its store (for clean-build comparisons)."""
    counter = iter(range(1_000_000))

    def copy(root: Path) -> Path:
        dest = tmp_path / f"clean-copy-{next(counter)}" / root.name
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".retrieval"), symlinks=True)
        return dest

    return copy


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


SAMPLE_FILES = {
    "src/app/__init__.py": "",
    "src/app/config.py": dedent(
        '''
        """Configuration loading for the app."""
        import json


        def parse_config(path):
            """Read a JSON config file and return a dict."""
            with open(path) as fh:
                return json.load(fh)


        class ConfigError(Exception):
            """Raised when the config file is invalid."""
        '''
    ),
    "src/app/http_client.py": dedent(
        '''
        import urllib.request


        def getHTTPResponse(url, retries=3):
            """Fetch a URL, retrying on failure."""
            for attempt in range(retries):
                try:
                    return urllib.request.urlopen(url)
                except OSError:
                    continue
            raise RuntimeError("gave up after retries")
        '''
    ),
    "src/app/cache.py": dedent(
        '''
        class LRUCache:
            def __init__(self, capacity):
                self.capacity = capacity
                self.items = {}

            def evict_oldest(self):
                oldest = next(iter(self.items))
                del self.items[oldest]
        '''
    ),
    "docs/guide.md": dedent(
        """
        # Guide

        The config file is parsed at startup. Keep the config small.

        ## Retries

        The HTTP client retries failed requests three times.
        """
    ),
    "config/settings.toml": dedent(
        """
        [server]
        port = 8080
        retries = 3
        """
    ),
    "README.md": "# Sample app\n\nA tiny app used by the tests.\n",
}


@pytest.fixture
def sample_repo(make_tree):
    """A small repository with code, docs and config (plus one blank file)."""
    return make_tree(SAMPLE_FILES, name="sample")


@pytest.fixture
def run():
    """The CLI in process: run("query", "--root", root, "text") -> click's Result."""
    from click.testing import CliRunner  # imported here: collecting the tests needs only the stdlib

    from retrieval.cli import main

    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(main, [str(a) for a in args], input=input)

    return invoke
