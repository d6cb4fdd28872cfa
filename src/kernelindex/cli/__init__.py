"""The ``ki`` command (also ``kernelindex``). Exit codes: 0 ok, 1 error, 2 usage.

Commands are loaded when they are run, not when ``ki`` starts: the command modules pull in SQLAlchemy,
Alembic and every manifest model (about a second of imports), which ``ki --help`` and ``ki --version``
never need. ``commands.COMMANDS`` names each command's module and its one-line help; the typer application
is ``cli/application.py``'s, imported by ``main`` only when the fast path of a lookup (``cli/fast_lookup.py``) did not
answer, so that path imports neither typer nor a command.
"""

from __future__ import annotations

import sys
from typing import Any


def __getattr__(name: str) -> Any:
    """``kernelindex.cli.app``, the typer application, loaded when first asked for."""
    if name == "app":
        from kernelindex.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """``ki``: a local ``ki search`` or ``ki show operation`` whose answer the catalog already holds is printed by
    the fast path (``cli/fast_lookup.py``) without loading the catalog's modules; every other command, and
    those when it holds none, by the command table."""
    try:
        code = None
        if sys.argv[1:2] in (["search"], ["show"]):  # other commands do not import the fast path
            from kernelindex.cli.fast_lookup import answered

            try:
                code = answered(sys.argv[1:])
            except BrokenPipeError:
                from kernelindex.cli.console import end_quietly

                end_quietly()
        if code is None:
            from kernelindex.cli.application import app

            app()
        else:
            sys.exit(code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
