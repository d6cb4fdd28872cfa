"""``ki show operation X`` (local) loads only what its answer needs for the attainable floor — the stored rates
of the operations with a verified run on its GPUs, or the attested runs of those not summarised — and prints
the same floors as the page's JSON served by a worker that holds every operation whole (issue 22)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.readmodel import attainable
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.loading import load_all_operations
from kernelindex.readmodel.versions import VERSIONS
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys
from kernelindex.web.app import create_app

WORKLOAD = {"batch": 4, "seq": 2048, "vocab": 8192}  # a jsd case the H200 runner measured
H200 = "NVIDIA H200 SXM 141GB"


def _show(catalog: Catalog, *options: str) -> Any:
    result = CliRunner().invoke(ki, ["show", "operation", "jsd", *options, "--json", "--database", catalog.url])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _floors(data: Any, path: str = "") -> dict[str, Any]:
    """Every floor figure of an answer (physical and attainable, with their sources), by where it is."""
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if "floor" in key or "attainable" in key:
                found[f"{path}/{key}"] = value
            else:
                found.update(_floors(value, f"{path}/{key}"))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found.update(_floors(value, f"{path}/{i}"))
    return found


def test_ki_show_operation_floors_equal_the_page_loading_only_attested_runs(liger_catalog: Catalog) -> None:
    bundled_runner_keys(liger_catalog)
    for path in bundled_bundles():
        if path.name in ("h200-jsd-20261201", "h200-kl-div-20261130"):
            publish_bundle(liger_catalog, path)
    workload = next(w["key"] for w in _show(liger_catalog)["workloads"]
                    if w["axes"] == WORKLOAD and set(w["dtypes"].values()) == {"fp32"})
    cohort = next(c["key"] for c in _show(liger_catalog, "--workload", workload)["cohorts"]
                  if c["gpu"] == H200 and not c["native"] and c["mode"] == "forward")
    READ_CACHE.clear()  # as a fresh ki process
    cli = _show(liger_catalog, "--workload", workload, "--cohort", cohort)
    versions = VERSIONS.current(liger_catalog)
    other = versions.of("kl-div")
    # kl-div's rates come from its stored summary when there is one at its version, else from its attested runs
    summarised = "kl-div" in attainable._stored_rates(liger_catalog, {"kl-div": other})
    attested = READ_CACHE.peek(liger_catalog, ("operation-data-attested", "kl-div"), other, scope="kl-div")
    assert (attested is None) == summarised
    assert READ_CACHE.peek(liger_catalog, ("operation-data", "kl-div"), other, scope="kl-div") is None

    READ_CACHE.clear()
    load_all_operations(liger_catalog)  # a server's worker: every operation held whole
    with TestClient(create_app(liger_catalog)) as client:
        page = client.get("/api/v1/operations/jsd", params={"workload": workload, "cohort": cohort}).json()
    assert page["floor"]["attainable"] and page["floor"]["attainable_record_ratio"]  # the H200's, from verified runs
    assert _floors(cli) == _floors(page)


def test_one_curated_operation_parses_its_file_alone_and_equals_the_whole_registrys() -> None:
    """The operation page's axis order reads the curated spec of its operation only (not all 70 files)."""
    for slug, spec in registry.operations().items():
        one = registry.curated_operation(slug)
        assert one is not None and one.model_dump(mode="json") == spec.model_dump(mode="json"), slug
    assert registry.curated_operation("no-such-operation") is None
    assert registry.curated_operation("../operations/rope") is None and registry.curated_operation("") is None
