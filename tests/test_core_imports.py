"""The core (discover, index, search) runs on the standard library alone: no click, nothing else."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import retrieval

PACKAGE_PARENT = str(Path(retrieval.__file__).resolve().parent.parent)

BLOCKER = textwrap.dedent(
    """
    import importlib.abc
    import sys

    ALLOWED = set(sys.stdlib_module_names) | {"retrieval", "__main__"}

    class BlockThirdParty(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] not in ALLOWED:
                raise ImportError(f"blocked non-stdlib import: {name}")
            return None

    sys.meta_path.insert(0, BlockThirdParty())
    for name in [m for m in sys.modules if m.partition(".")[0] not in ALLOWED and not m.startswith("__editable__")]:
        del sys.modules[name]
    try:
        import click  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("the import blocker does not work")
    """
)

CORE = textwrap.dedent(
    """
    import atexit
    import os
    import shutil
    import sys
    import tempfile

    import retrieval
    import retrieval.service as service
    from retrieval import build_retriever, load_chunk_documents

    root = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, root, True)  # every run left a tree (and its index) in the temp directory
    with open(os.path.join(root, "greet.py"), "w") as fh:
        fh.write("def greet_visitor(name):\\n    return 'hello ' + name\\n")
    with open(os.path.join(root, "notes.md"), "w") as fh:
        fh.write("# Notes\\n\\nNothing about greetings here.\\n")

    report = service.refresh(root)
    assert report.status == "indexed", report
    hits = service.search(root, "greet visitor").hits
    assert [h.source_path for h in hits][:1] == ["greet.py"], hits

    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(root))
    assert retriever.search("greet_visitor")[:1] == ["greet.py:1-2"]
    assert service.status(root)[0]["state"] == "ready"

    third_party = sorted(
        m for m in sys.modules
        if m.partition(".")[0] not in set(sys.stdlib_module_names) | {"retrieval", "__main__"}
        and not m.startswith("__editable__")
    )
    assert not third_party, third_party
    print("core ok")
    """
)


def run_python(args, code, extra_env=None):
    env = {k: v for k, v in os.environ.items() if k not in ("RETRIEVAL_INDEX_DIR", "PYTHONPATH")}
    env.update(extra_env or {})
    return subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def run_blocked(code):
    """`code` in a fresh interpreter that finds this package but no third-party one."""
    return run_python([], f"import sys; sys.path.insert(0, {PACKAGE_PARENT!r})\n" + BLOCKER + code)


def test_the_core_imports_indexes_and_searches_with_every_third_party_import_blocked():
    proc = run_blocked(CORE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "core ok"


def test_the_core_runs_without_site_packages_at_all():
    proc = run_python(["-S"], CORE, {"PYTHONPATH": PACKAGE_PARENT})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "core ok"


def test_the_blocker_really_blocks_what_the_cli_needs():
    # The other two tests are only meaningful if click is unavailable to them.
    proc = run_blocked("import retrieval.cli\n")
    assert proc.returncode != 0
    assert "blocked non-stdlib import: click" in proc.stderr


# The only modules that may import a third-party package when imported: the command line (click,
# the one required dependency) and the Anthropic client of the `remote` extra. Every other module,
# each extra's retriever included, imports its package only when that retriever is used.
NEEDS_AT_IMPORT = {
    "retrieval.cli": "click",
    "retrieval.evaluation.cli": "click",
    "retrieval.options": "click",
    "retrieval.server.commands": "click",
    "retrieval.shell": "click",
    "retrieval.contextual.anthropic": "anthropic",
}

EVERY_MODULE = textwrap.dedent(
    """
    import importlib
    import pkgutil

    import retrieval

    for info in pkgutil.walk_packages(retrieval.__path__, "retrieval."):
        if info.name.endswith(".__main__"):
            continue  # `python -m retrieval` itself: importing it runs the command
        try:
            importlib.import_module(info.name)
        except ImportError as exc:
            print(info.name, str(exc).rpartition(": ")[2])
    """
)


def test_every_module_but_the_command_line_and_the_anthropic_client_imports_on_the_standard_library():
    # Meaningful with every extra installed too: the blocker hides what is installed.
    proc = run_blocked(EVERY_MODULE)
    assert proc.returncode == 0, proc.stderr
    failed = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert failed == NEEDS_AT_IMPORT


@pytest.mark.parametrize("name", ["Chunk", "Document", "SearchHit", "SourceFile", "ChunkingPolicy", "chunk_lines",
                                  "discover_files", "load_documents", "load_chunks", "load_chunk_documents",
                                  "REGISTRY", "Retriever", "build_retriever"])
def test_the_public_api_is_exported_from_the_package(name):
    assert getattr(retrieval, name) is not None
    assert name in retrieval.__all__


def test_a_query_in_process_does_not_import_the_server():
    """The server module (sockets, selectors, traceback) serves `serve`; a cold query paid for
    importing it because the CLI showed its idle timeout's default in `serve --help`."""
    script = textwrap.dedent(
        """
        import sys
        import retrieval.cli
        assert "retrieval.server.serve" not in sys.modules, "the CLI imported the server"
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PACKAGE_PARENT})
    assert done.returncode == 0, done.stderr
