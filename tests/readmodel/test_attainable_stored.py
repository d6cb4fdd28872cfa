"""The attainable ceilings read each verified operation's rates from its stored summary (readmodel/attainable.py):
the figures must be exactly those computed by loading every verified operation's runs, a fresh worker's first
operation must load that operation alone, and an operation whose summary is not stored must still count
(loaded and derived as before)."""

from __future__ import annotations

import pytest

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel import attainable, loading
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.summaries import _slugs, ensure_summaries
from kernelindex.readmodel.versions import VERSIONS

SUBSETS = (None, frozenset({"h200"}), frozenset({"h100"}), frozenset({"h100", "b200", "mi300x"}))


def _fresh(catalog: Catalog) -> None:
    """As a new worker: nothing kept in memory."""
    READ_CACHE.forget(catalog, lambda key: True)


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The operations whose runs are loaded from here on."""
    loaded: list[str] = []
    real = loading._load

    def recorded(catalog: Catalog, slug: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        loaded.append(slug)
        return real(catalog, slug, *args, **kwargs)

    monkeypatch.setattr(loading, "_load", recorded)
    return loaded


@pytest.fixture(scope="module")
def from_runs(catalog: Catalog) -> dict[frozenset[str] | None, dict]:
    """Per subset of GPUs, the figures computed the old way: every verified operation loaded (once, for all the
    subsets: the catalog is read-only), nothing read from its summary."""
    ensure_summaries(catalog)
    _fresh(catalog)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(attainable, "_stored_rates", lambda *_: {}, raising=False)  # the old code has none
        figures = {gpus: loading.attainable_now(catalog, gpus) for gpus in SUBSETS}
    _fresh(catalog)
    return figures


def test_the_stored_rates_give_exactly_the_ceilings_the_runs_give(catalog: Catalog, from_runs: dict,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for gpus in SUBSETS:
        _fresh(catalog)
        loaded = _loads(monkeypatch)
        assert loading.attainable_now(catalog, gpus) == from_runs[gpus], gpus
        assert loaded == [], f"{gpus}: {loaded} loaded although their summaries are stored"
        monkeypatch.undo()
    whole = from_runs[None]
    assert "h200" in whole
    assert whole["h200"].compute_source.startswith("verified run")  # a run's rate, not only the ceiling GEMM's


def test_each_operations_stored_rates_are_those_its_runs_give(catalog: Catalog) -> None:
    ensure_summaries(catalog)
    versions = VERSIONS.current(catalog)
    stored = attainable._stored_rates(catalog, {slug: versions.of(slug) for slug in _slugs(catalog)})
    verified = {slug: rates for slug, rates in stored.items() if rates["bandwidth"] or rates["gemm"]}
    assert len(verified) > 20
    for slug, rates in verified.items():
        assert rates == attainable.attainable_rates(loading.attested_runs_of(catalog, slug, versions.of(slug))), slug


def test_a_fresh_workers_first_operation_loads_that_operation_alone(catalog: Catalog, from_runs: dict,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    slug = "rope"
    expected = from_runs[None]
    _fresh(catalog)
    loaded = _loads(monkeypatch)
    data = loading.load_operation(catalog, slug)
    assert loaded == [slug]
    assert data.attainable and data.attainable == {g: expected[g] for g in sorted(data.gpu_slugs) if g in expected}


def test_an_operation_whose_summary_is_not_stored_is_loaded_as_before(catalog: Catalog, from_runs: dict,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    expected = from_runs[None]
    stored = attainable._stored_rates(catalog, {"jsd": VERSIONS.current(catalog).of("jsd")})
    assert "jsd" in stored and stored["jsd"]["bandwidth"]  # the run that set the H200's figure: see test_floors_hold
    real = attainable._stored_rates
    monkeypatch.setattr(attainable, "_stored_rates",
                        lambda *args: {k: v for k, v in real(*args).items() if k != "jsd"})
    _fresh(catalog)
    loaded = _loads(monkeypatch)
    assert loading.attainable_now(catalog) == expected
    assert loaded == ["jsd"]


def test_asking_for_no_gpu_leaves_the_whole_table_alone(catalog: Catalog) -> None:
    """An operation whose runs name no GPU the registry knows asks for the figures of no GPU: an empty answer,
    never kept as the whole table (a first start's import summarised such an operation first, and every GPU
    page of that process then showed no attainable floor)."""
    _fresh(catalog)
    assert loading.attainable_now(catalog, frozenset()) == {}
    whole = loading.attainable_now(catalog)
    assert "h200" in whole and whole["h200"].bandwidth_bytes_per_s > 0
    for figure in whole.values():  # the run that set a figure is named, for its link (a ceiling kernel: none)
        assert figure.source.startswith(f"verified run {figure.run_id} ") == bool(figure.run_id)
        assert figure.compute_source.startswith(f"verified run {figure.compute_run_id} ") == bool(figure.compute_run_id)
    assert whole["h200"].run_id and whole["h200"].compute_run_id
    _fresh(catalog)
    assert loading.attainable_now(catalog) == whole
