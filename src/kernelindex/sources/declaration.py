"""What a source declares about itself, once, in its own package (issue 48 item 5): the names its runs carry
(each with its policy and attribution in the package's ``policy.yaml``), how to import its shipped copy at
start-up, its document, and the ``ki import`` command that reads another copy (``ImportCommand``: the CLI builds
the command from it). The importer (``bootstrap``), the CLI and the documentation check find every source through
``sources.registry``, never by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

Say = Callable[[str], None]  # a progress line for the operator


@dataclass(frozen=True)
class ImportOption:
    """An input of a source's ``ki import`` command besides --dry-run, --publish, --json and --database."""

    name: str  # the keyword its module's ``run`` takes (file, path, source)
    help: str
    flag: str | None = None  # "--file"; None: a positional argument, required
    kind: str = "file"  # file: an existing file; path: an existing file or folder; text: a word


@dataclass(frozen=True)
class ImportCommand:
    """``ki import <name>``, which ``cli/import_cmds.py`` builds from this declaration. ``module`` (imported only
    when the command runs) holds ``run(catalog, *, dry_run, actor, progress, **options)`` returning the report,
    ``INPUT_ERRORS`` (what a bad input raises, printed as it is) and ``printout(report, safe)``: what the report
    prints (rich renderables; ``safe`` escapes text the input named)."""

    name: str
    help: str
    module: str
    options: tuple[ImportOption, ...] = ()
    counting: str = "runs"  # what the progress bar counts
    publish_help: str = "Publish in one transaction."


@dataclass(frozen=True)
class SourceDeclaration:
    part: str  # its name as a bundled part ($KERNELINDEX_BUNDLED_PARTS) and its package's folder
    title: str  # how the start-up and the documents call it
    names: tuple[str, ...]  # the source names its runs carry (BenchmarkRun spec.source.name)
    docs: str  # the document that describes it, relative to the repository (docs/…)
    command: ImportCommand  # ``ki import <command.name>``
    # Imports the shipped copy as ``actor``; returns what it added, one line each (``say`` reports progress).
    bundled: Callable[[Catalog, str, Say], list[str]]
    announce: str  # the line the start-up says before importing it

    @property
    def import_command(self) -> str:
        return self.command.name
