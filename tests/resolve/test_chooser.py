"""Several operations for the words of a query: later words narrow them, bound constants or the GPU
evidence pick one (saying why), otherwise the chooser orders them by evidence on the GPU asked for
and names the constants that tell them apart (issue 10: "gqa paged decode b200")."""

from __future__ import annotations

from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.service import search


def test_gqa_paged_decode_b200_offers_only_gqa_decode_operations_by_b200_evidence(catalog: Catalog,
                                                                                  now: datetime) -> None:
    r = search(catalog, "gqa paged decode b200", now=now)
    assert r.status == "choose_operation"
    slugs = [c.slug for c in r.choices]
    assert len(slugs) == 11 and all(s.startswith("gqa-paged-decode-") for s in slugs)  # no MLA operation
    on_b200 = [c.on_gpu_runs for c in r.choices]
    assert on_b200 == sorted(on_b200, reverse=True) and on_b200[0] > 0
    assert "num_qo_heads" in r.message and "page_size" in r.message and "on B200 (listed first)" in r.message
    assert r.choices[0].constants and set(r.choices[0].constants) == {"num_qo_heads", "num_kv_heads", "head_dim",
                                                                      "page_size"}
    assert r.to_json()["choices"][0]["on_gpu_runs"] == on_b200[0]


def test_binding_the_constants_picks_the_operation(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "gqa paged decode b200 num_qo_heads=32 num_kv_heads=8 head_dim=128 page_size=1", now=now)
    assert r.status == "exact"
    assert r.operation is not None and r.operation["slug"] == "gqa-paged-decode-h32-kv8-d128-ps1"
    assert r.notes[0].code == "OPERATION_PICKED_BY_AXES"
    assert all(c.gpu == "b200" for c in r.exact)
    wrong = search(catalog, "gqa paged decode b200 num_qo_heads=33", now=now)
    assert wrong.status == "choose_operation"  # no operation fixes 33 heads: every candidate is offered


def test_the_only_operation_with_evidence_on_the_gpu_is_picked(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "gqa paged decode gb200", now=now)
    assert r.status == "exact" and r.operation is not None
    assert r.operation["slug"] == "gqa-paged-decode-h5-kv1-d128-ps1"
    assert r.notes[0].code == "OPERATION_PICKED_BY_GPU_EVIDENCE" and "GB200" in r.notes[0].sentence
