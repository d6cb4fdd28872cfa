"""Pieces every source's ``ki import`` report prints (``ImportCommand.module``'s ``printout``)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.table import Table


def new_and_existing(new: Mapping[str, int], existing: Mapping[str, int]) -> Table:
    """How many catalog objects of each kind the import adds, and how many were there already."""
    table = Table("kind", "new", "existing", box=None)
    for kind in sorted(set(new) | set(existing)):
        table.add_row(kind, f"{new.get(kind, 0):,}", f"{existing.get(kind, 0):,}")
    return table
