"""Type checkers read the package's own annotations (PEP 561), and they say what the code takes."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import retrieval
from retrieval import discover, loader, multi, service

PACKAGE = Path(retrieval.__file__).parent
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_package_is_marked_typed_and_ships_the_marker():
    """Without py.typed, mypy skipped the package ("missing library stubs or py.typed marker")."""
    assert (PACKAGE / "py.typed").is_file()
    assert '"retrieval" = ["py.typed"]' in PYPROJECT.read_text(encoding="utf-8")


def test_type_checkers_see_every_lazy_export_as_what_it_is():
    """The exports load on first use (module __getattr__): to a type checker each was `Any`."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    imported = {alias.name: node.module for node in guarded.body for alias in node.names}  # name -> .module
    assert imported == retrieval._EXPORTS


def test_every_function_taking_a_root_says_it_takes_a_path_object_too():
    """A root may be a str or an os.PathLike, as the README says and the code accepts; annotated
    `str`, `service.search(Path(...), ...)` failed type checking."""
    functions = [service.refresh, service.open_index, service.search, service.status, service.clean,
                 multi.search_all, discover.discover_files, discover.root_path, loader.load_documents,
                 loader.load_chunks, loader.load_chunk_documents, loader.load_ast_chunk_documents]
    assert {f.__qualname__: inspect.signature(f).parameters["root"].annotation for f in functions} == \
           {f.__qualname__: "str | os.PathLike[str]" for f in functions}
