"""Importer idempotency (docs/design.md §10): importing the same rows again adds nothing, and what the catalog
holds does not depend on the order the rows arrive in. Rows are drawn from the real bundled CSV."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.readmodel.objects import export_lines
from kernelindex.sources.base import FileTransport, ImportReport
from kernelindex.sources.liger import import_liger
from kernelindex.sources.liger.importer import bundled_csv_path

HEADER, *ROWS = bundled_csv_path().read_bytes().splitlines(keepends=True)


def _import(catalog: Catalog, rows: list[bytes], folder: Path, name: str) -> ImportReport:
    """Import ``rows`` as Liger's file (runs are attributed to the file they came from, issue 20 item 7, so
    every copy keeps the file's name, in its own folder)."""
    path = folder / name / bundled_csv_path().name
    path.parent.mkdir()
    path.write_bytes(HEADER + b"".join(rows))
    return import_liger(catalog, FileTransport(path), dry_run=False, actor="property-test")


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, len(ROWS) - 1), min_size=1, max_size=30, unique=True),
       seed=st.integers(0, 2**32 - 1))
def test_reimport_adds_nothing_and_row_order_does_not_matter(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int], seed: int
) -> None:
    folder = tmp_path_factory.mktemp("idempotency")
    rows = [ROWS[i] for i in picks]
    shuffled = random.Random(seed).sample(rows, len(rows))
    first, other = (open_catalog(f"sqlite:///{folder / name}.sqlite") for name in ("first", "other"))
    _import(first, rows, folder, "rows")
    again = _import(first, rows, folder, "rows-again")
    assert sum(again.new.values()) == 0
    _import(other, shuffled, folder, "shuffled")
    assert sorted(export_lines(first)) == sorted(export_lines(other))
    for catalog in (first, other):
        catalog.dispose()
