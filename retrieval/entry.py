"""The `retrieval` console command: a running server answers `query` and `status` when it can
(standard library only on that path); everything else, and every fallback, is the click CLI."""
from __future__ import annotations

import sys


def main() -> None:
    try:
        _main()
    except KeyboardInterrupt:  # Ctrl-C before the command runs (importing it): quietly, as while it runs
        sys.exit(130)


def _main() -> None:
    from .streams import tolerant_output

    tolerant_output()  # before the server's client reads how our streams encode
    argv = sys.argv[1:]
    from .streams import refuse_closed_stdout

    refuse_closed_stdout(argv[0] if argv else None)
    if argv[:1] in (["query"], ["status"], ["search"]):  # (search: query's alias)
        from .server.client import try_run

        try:
            code = try_run(argv)
        except KeyboardInterrupt:  # Ctrl-C while the server answers: as the command itself, quietly
            sys.exit(130)
        if code is not None:
            sys.exit(code)
    from .cli import main as cli

    cli(prog_name="retrieval")


if __name__ == "__main__":  # pragma: no cover
    main()
