"""A service's finished answer is kept under the service's name and the arguments it declares
(services/reads.py's ``kept``), at the catalog version: a repeated question is not computed again,
and a publication that changes the catalog computes it afresh."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.services import reads

NOW = datetime(2030, 1, 15, 12, tzinfo=UTC)


def test_use_and_the_gpu_index_are_kept_until_a_publication(liger_catalog: Catalog,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[str] = []
    real_use, real_gpus = reads.use_text, reads.gpus_index
    monkeypatch.setattr(reads, "use_text", lambda *a, **k: computed.append("use") or real_use(*a, **k))
    monkeypatch.setattr(reads, "gpus_index", lambda *a, **k: computed.append("gpus") or real_gpus(*a, **k))
    text = "rope seq=2048 hidden=4096 q_heads=32 kv_heads=8 bf16 h100"
    first_use, first_gpus = reads.use(liger_catalog, NOW, text), reads.gpus(liger_catalog)
    assert reads.use(liger_catalog, NOW, text) == first_use and reads.gpus(liger_catalog) == first_gpus
    assert sorted(computed) == ["gpus", "use"]  # kept
    held = [key[-1] for key in list(READ_CACHE._items) if key[0] == liger_catalog.url]  # (url, scope, version, key)
    assert ("service", "use", NOW.date().isoformat(), text) in held and ("service", "gpus") in held
    run = reads.page(liger_catalog, NOW, "operation", "rope")["ranked"][0]["run_id"]
    retract(liger_catalog, run, reason="timer bug", actor="tests", at=NOW)
    reads.use(liger_catalog, NOW, text)
    reads.gpus(liger_catalog)
    assert sorted(computed) == ["gpus", "gpus", "use", "use"]  # the publication moved the catalog version
