"""What a source declares about itself, once, in its own package (issue 48 item 5): the names its runs carry
(each with its policy and attribution in the package's ``policy.yaml``), how to import its shipped copy at
start-up, its document, and the ``ki import`` command that reads another copy. The importer (``bootstrap``),
the CLI and the documentation check find every source through ``sources.registry``, never by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

Say = Callable[[str], None]  # a progress line for the operator


@dataclass(frozen=True)
class SourceDeclaration:
    part: str  # its name as a bundled part ($KERNELINDEX_BUNDLED_PARTS) and its package's folder
    title: str  # how the start-up and the documents call it
    names: tuple[str, ...]  # the source names its runs carry (BenchmarkRun spec.source.name)
    docs: str  # the document that describes it, relative to the repository (docs/…)
    import_command: str  # ``ki import <import_command>``
    # Imports the shipped copy as ``actor``; returns what it added, one line each (``say`` reports progress).
    bundled: Callable[[Catalog, str, Say], list[str]]
    announce: str  # the line the start-up says before importing it
