"""Issue 43 item 4: the "Use this" box, the "Not measured on GPU" panel and the scaling chart's floor line show
the floor of the region the page shows (a backward page: the backward's compulsory traffic), never the forward's."""

from __future__ import annotations

from datetime import UTC, datetime

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.policy.floor import floor_estimate
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.operations import build_operation_page

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_backward_and_full_pages_show_their_own_region_floor(catalog: Catalog) -> None:
    """Embedding's backward writes the whole weight gradient: its floor is not the forward's."""
    data = load_operation(catalog, "embedding")
    page = build_operation_page(data, workload=None, cohort=None, gpu="a100", now=NOW)
    options = [c for c in page.cohorts if c.mode != "forward" and c.gpu == "NVIDIA A100 80GB"]
    assert options  # forward+backward at the reference workload
    for option in options:
        region = option.mode
        shown = build_operation_page(data, workload=page.selected_workload, cohort=option.key, now=NOW)
        digest = next(w.digest for w in shown.workloads if w.selected)
        specs = data.specs_json(digest)
        gpus = registry.gpus()
        assert shown.not_measured, region
        for gap in shown.not_measured:
            own = floor_estimate(*specs, gpus[gap.gpu], region=region, operation="embedding").floor_ns
            forward = floor_estimate(*specs, gpus[gap.gpu], operation="embedding").floor_ns
            assert gap.region == region and gap.floor_ns == own and own != forward, (region, gap.gpu)
        answer = operation_model(data, NOW).recommendation(digest, gpus["b200"], region)
        assert answer.mode == region and answer.floor is not None
        b200 = floor_estimate(*specs, gpus["b200"], region=region, operation="embedding")
        assert answer.floor["floor_ns"] == b200.floor_ns
        if shown.scaling and shown.scaling.floor:
            at = data.workloads[digest].spec.axes[shown.scaling.axis]
            point = next(p for p in shown.scaling.floor if p["x"] == at)
            a100 = gpus["a100-80gb"]
            assert point["floor_ns"] == floor_estimate(*specs, a100, region=region, operation="embedding").floor_ns
