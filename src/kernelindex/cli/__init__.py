"""The ``ki`` command (also ``kernelindex``). Exit codes: 0 ok, 1 error, 2 usage."""

from __future__ import annotations

import importlib
import sys

import typer

from kernelindex.cli import catalog_cmds

app = typer.Typer(
    name="ki",
    help="KernelIndex: the fastest known implementation of an exact GPU workload, with its evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
catalog_cmds.register(app)

# Command groups owned by other parts of the package; each registers itself when present.
for module in ("serve_cmd", "query_cmds", "runner_cmds", "use_cmd"):
    try:
        importlib.import_module(f"kernelindex.cli.{module}").register(app)
    except ModuleNotFoundError as exc:
        if exc.name != f"kernelindex.cli.{module}":
            raise


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
