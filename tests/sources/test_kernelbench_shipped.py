"""The shipped KernelBench data, as a fresh install imports it (issue 24 acceptance): every timing
entry accounted for, ≥ 10,000 timed runs on ≥ 14 GPU products of the datasheet table, the 250
problems of the newest set reachable from search, and a problem's page showing its file under the
license notice."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

import pytest
from fastapi.testclient import TestClient

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.rows import run_floors
from kernelindex.resolve.service import search
from kernelindex.resolve.source import CatalogCohortSource
from kernelindex.sources.kernelbench import map_kernelbench, read_kernelbench, shipped_path
from kernelindex.sources.kernelbench.importer import UNDER_FLOOR
from kernelindex.sources.kernelbench.mapping import MappedKernelBench
from kernelindex.sources.kernelbench.operations import slug_of
from kernelindex.sources.kernelbench.problem_file import problem_of
from kernelindex.web.app import create_app

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def catalog(every_source_catalog: Catalog) -> Catalog:
    """KernelBench as a fresh install imports it, beside every other bundled source (the session's catalog of every
    source; this module imported Liger and KernelBench on its own before). Read-only."""
    return every_source_catalog


@cache
def _shipped() -> tuple[object, MappedKernelBench]:
    data = read_kernelbench(shipped_path().read_bytes(), "shipped")
    return data, map_kernelbench(data)


def test_every_entry_is_accounted_for_on_14_gpu_products() -> None:
    _, mapped = _shipped()
    assert mapped.entries == 15_857
    assert mapped.timed + mapped.failed + sum(mapped.refused.values()) == mapped.entries
    assert mapped.timed >= 10_000
    products = {registry.gpu_for_product(hardware).slug for hardware in mapped.gpus}  # type: ignore[union-attr]
    assert len(products) >= 14
    assert mapped.refused["no hardware recorded in the entry (the GPU is never guessed from the folder)"] == 198
    assert not mapped.problems_not_mapped


def test_no_kept_entry_is_under_its_physical_floor(every_source_operations: dict[str, OperationData]) -> None:
    """A physical floor is never beaten by what it bounds: an entry under it (in a level whose pairing holds)
    is refused on its own. Shipped: 6, all on the L40S — max-pooling 2d (a 32 MB input) and minGPT's GELU
    (16 MB in, 16 MB out), working sets its 96 MB L2 holds between KernelBench's unflushed trials."""
    _, mapped = _shipped()
    assert mapped.refused[UNDER_FLOOR] == 6
    under = [f"{data.slug} {run.run_id} {run.median_ns} < {floors[0].floor_ns:.0f}"
             for data in every_source_operations.values() if data.slug.startswith("kernelbench-")
             for run in data.runs if run.median_ns and (floors := run_floors(data, run))
             and run.median_ns < floors[0].floor_ns]
    assert under == []


def test_newest_problems_are_reachable_from_search(catalog: Catalog) -> None:
    data, _ = _shipped()
    newest = max(data.timings, key=lambda t: t.commit_date).problems  # type: ignore[attr-defined]
    source = CatalogCohortSource(catalog)
    unreachable = []
    for file, digest in data.sets[newest].files.items():  # type: ignore[attr-defined]
        problem = problem_of(file, data.problems[digest])  # type: ignore[attr-defined]
        answer = search(catalog, f"kernelbench {problem.ref}", now=NOW, source=source).to_json()
        found = {(answer.get("operation") or {}).get("slug"), *answer["query"]["operation_candidates"]}
        if slug_of(problem) not in found:
            unreachable.append(file)
    assert len(data.sets[newest].files) == 250 and unreachable == []  # type: ignore[attr-defined]


def test_search_by_name_and_level(catalog: Catalog) -> None:
    source = CatalogCohortSource(catalog)
    relu = search(catalog, "relu", now=NOW, source=source).to_json()
    assert "kernelbench-1-19-relu" in relu["query"]["operation_candidates"]
    transposed = search(catalog, "level 2 conv transpose", now=NOW, source=source).to_json()
    candidates = transposed["query"]["operation_candidates"]
    assert len(candidates) > 5 and all(c.startswith("kernelbench-2-") and "convtranspose" in c for c in candidates)
    assert search(catalog, "softmax", now=NOW, source=source).to_json()["operation"]["slug"] == "softmax"


def test_problem_page_shows_its_file_under_the_license_notice(catalog: Catalog) -> None:
    with TestClient(create_app(catalog)) as client:
        page = client.get("/operations/kernelbench-1-1-square-matrix-multiplication")
        softmax = client.get("/operations/kernelbench-1-23-softmax")
    assert page.status_code == 200
    assert '<pre class="source"><code>import torch' in page.text
    assert "KernelBench (ScalingIntelligence/KernelBench)" in page.text and "MIT License" in page.text
    assert 'href="/operations/softmax"' in softmax.text  # the reviewed link; the runs stay apart
