#!/usr/bin/env python3
"""Build dist/retrieval.pyz: the stdlib core and click in one file, run by any Python >= 3.10.

    python scripts/build_pyz.py [--output dist/retrieval.pyz]

For a machine with no package index: copy the one file and run `python3 retrieval.pyz query ...`.
The archive holds the `retrieval` package (the extras' modules come along but need their own
packages, which are not bundled: those retrievers report what is missing) and the click package
installed in the building interpreter (pure Python). Nothing is downloaded. Byte code compiled by
the building interpreter goes in beside the sources: that interpreter's version starts faster, any
other version compiles the sources instead.
"""
from __future__ import annotations

import argparse
import compileall
import os
import py_compile
import shutil
import sys
import tempfile
import zipapp

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "retrieval")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "*.so", "*.tmp-*")

# Guarded: a worker process started by spawn or forkserver (the default from Python 3.14) runs the
# main module again under another name, and must not run the command a second time.
# The console command's entry (a running server answers `query` and `status`), behind a version
# check an old interpreter can still parse: click's own code fails there with a page of traceback.
MAIN = """import sys

if __name__ == "__main__":
    if sys.version_info < (3, 10):
        sys.exit("error: retrieval.pyz needs Python 3.10 or newer (this is %d.%d)" % sys.version_info[:2])
    from retrieval.entry import main

    main()
"""


def _click_dir() -> str:
    try:
        import click
    except ImportError:
        sys.exit("build_pyz: click is not installed in this interpreter (run `make install-core` first)")
    return os.path.dirname(os.path.abspath(click.__file__))


def build(output: str, compile_bytecode: bool = True) -> str:
    output = os.path.abspath(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="retrieval-pyz-") as stage:
        shutil.copytree(PACKAGE, os.path.join(stage, "retrieval"), ignore=SKIP)
        shutil.copytree(_click_dir(), os.path.join(stage, "click"), ignore=SKIP)
        with open(os.path.join(stage, "__main__.py"), "w", encoding="utf-8") as fh:
            fh.write(MAIN)
        if compile_bytecode:
            # Legacy layout (module.pyc beside module.py) is what zipimport looks for; unchecked
            # hashes, because a zip entry's timestamp is not the source's.
            compileall.compile_dir(stage, quiet=2, legacy=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        tmp = f"{output}.tmp-{os.getpid()}"
        zipapp.create_archive(stage, tmp, interpreter="/usr/bin/env python3", compressed=True)
        os.replace(tmp, output)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(os.path.dirname(HERE), "dist", "retrieval.pyz"))
    parser.add_argument("--no-bytecode", action="store_true", help="Sources only (a smaller file).")
    args = parser.parse_args(argv)
    path = build(args.output, compile_bytecode=not args.no_bytecode)
    print(f"{path} ({os.path.getsize(path) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
