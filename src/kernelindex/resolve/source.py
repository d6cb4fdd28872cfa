"""The resolver's view of the catalog, built from the read model so that cohorts, eligibility,
evidence, usability and ranks are exactly the ones the operation pages show.

Everything is cached per catalog version (every write bumps it): the first query after a
publication loads an operation once; later queries only filter in memory.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Sequence
from functools import cached_property

from sqlalchemy import select

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow
from kernelindex.policy.reasons import Reason
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.labels import axis_order, cohort_key_short, workload_key
from kernelindex.readmodel.loading import OperationData
from kernelindex.readmodel.operations import implementation_ref, load_operation_runs
from kernelindex.resolve.resolver import Cohort, order_key
from kernelindex.resolve.views import ImplementationView, RunView
from kernelindex.resolve.vocabulary import OperationEntry, Vocabulary, build_vocabulary, registry_vocabulary


def _implementation(data: OperationData, digest: str) -> ImplementationView:
    ref = implementation_ref(data, digest)
    return ImplementationView(
        slug=ref.slug, title=ref.title, language=ref.language, license=ref.license, usable=ref.usable,
        baseline=ref.role == "baseline", project=ref.project, install_command=ref.install_command,
        unusable_reasons=tuple(Reason(r["code"], r["sentence"]) for r in ref.not_usable_reasons),
    )


def _run_views(data: OperationData) -> dict[str, RunView]:
    impls = {d: _implementation(data, d) for d in data.implementations}
    order = axis_order(data.operation)
    views = {}
    for run in data.runs:
        workload = data.workloads[run.workload]["spec"]
        environment = data.environments[run.environment]["spec"]["hardware"]
        protocol = data.protocols[run.protocol]["spec"]
        gpu = data.gpu_of(run.environment)
        views[run.digest] = RunView(
            run_id=run.run_id, operation=data.slug, cohort_key=run.cohort_key, workload_key=run.workload,
            axes=_ordered_axes(workload.get("axes", {}), order), dtypes=dict(workload.get("dtypes", {})),
            gpu=gpu.slug if gpu else None, gpu_label=gpu.short if gpu else environment["product"],
            arch=gpu.architecture if gpu else environment.get("architecture"),
            mode=protocol["timed_region"], protocol_key=run.protocol, native=protocol.get("native", True),
            implementation=impls[run.implementation], evidence=run.evidence, eligible=run.eligible,
            median_ns=run.median_ns, p20_ns=run.p20_ns, p80_ns=run.p80_ns, observed_at=run.observed_at,
            source=run.source,
            ineligible_reasons=tuple(run.eligibility.reasons) if run.eligibility else (),
            workload_ref=workload_key(run.workload), cohort_ref=cohort_key_short(run.cohort_key),
        )
    return views


def _ordered_axes(axes: dict[str, int], order: list[str]) -> dict[str, int]:
    """Axes in the operation's declared order (seq, hidden, … for rope), the rest after."""
    return {**{a: axes[a] for a in order if a in axes}, **{a: v for a, v in sorted(axes.items()) if a not in order}}


def cohorts_from(data: OperationData) -> list[Cohort]:
    """The read model's cohorts (ranked by its code) in the resolver's shape."""
    views = _run_views(data)
    out = []
    for key, cohort in cohorts_of(data).items():
        ranked = tuple((views[e.item.id], e.rank, e.label, e.within_noise, e.vs_first) for e in cohort.ranked)
        ranked_ids = {e.item.id for e in cohort.ranked}
        excluded = tuple(sorted((views[r.digest] for r in cohort.runs if r.digest not in ranked_ids),
                                key=lambda v: v.run_id))
        sample = views[cohort.runs[0].digest]
        out.append(Cohort(key, sample, ranked, excluded, order_key(sample, key, registry.priority_gpus())))
    return out


class _Snapshot:
    """Everything derived for one catalog version."""

    def __init__(self, catalog: Catalog, version: int) -> None:
        self.catalog = catalog
        self.version = version
        self._cohorts: dict[str, list[Cohort]] = {}
        self._lock = threading.Lock()

    @cached_property
    def operation_manifests(self) -> dict[str, dict]:
        with self.catalog.engine.connect() as conn:
            rows = conn.execute(select(ObjectRow.name, ObjectRow.body).where(ObjectRow.kind == "OperationSpec"))
            return {name: json.loads(body) for name, body in rows if name}

    @cached_property
    def vocabulary(self) -> Vocabulary:
        base = registry_vocabulary()
        extra = [_entry(slug, m) for slug, m in self.operation_manifests.items() if slug not in base.operations]
        if not extra:
            return base
        gpus = list(base.gpus.values())
        return build_vocabulary([*base.operations.values(), *extra], gpus)

    def cohorts(self, slug: str) -> list[Cohort]:
        with self._lock:
            if slug in self._cohorts:
                return self._cohorts[slug]
        if slug not in self.operation_manifests:
            found: list[Cohort] = []
        else:
            found = cohorts_from(load_operation_runs(self.catalog, slug))
            # The loaded runs live as long as this catalog version: keep the cyclic garbage collector
            # from re-scanning them on every later collection (on the 100× catalog a full scan of the
            # cache costs ~200 ms and would land inside some unlucky query).
            gc.freeze()
        with self._lock:
            self._cohorts[slug] = found
        return found

    def eligible_count(self, slug: str) -> int:
        return sum(c.eligible_runs for c in self.cohorts(slug))


def _entry(slug: str, manifest: dict) -> OperationEntry:
    spec, meta = manifest["spec"], manifest.get("metadata", {})
    axes = spec.get("axes", {})
    return OperationEntry(
        slug=slug, title=meta.get("title") or slug, family=spec.get("family", ""),
        aliases=tuple(meta.get("aliases") or ()), axes=tuple(axes),
        derived={n: a["expression"] for n, a in axes.items() if a.get("role") == "derived" and "expression" in a},
    )


class CatalogRunSource:
    """A :class:`~kernelindex.resolve.resolver.RunSource` over a catalog, cached per catalog version."""

    _snapshots: dict[str, _Snapshot] = {}
    _lock = threading.Lock()

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        current = catalog.version()
        with self._lock:
            snap = self._snapshots.get(catalog.url)
            if snap is None or snap.version != current or snap.catalog is not catalog:
                snap = _Snapshot(catalog, current)
                self._snapshots[catalog.url] = snap
        self.snapshot = snap

    def version(self) -> int:
        return self.snapshot.version

    def vocabulary(self) -> Vocabulary:
        return self.snapshot.vocabulary

    def priority_gpus(self) -> Sequence[str]:
        return registry.priority_gpus()

    def cohorts(self, operation: str) -> Sequence[Cohort]:
        return self.snapshot.cohorts(operation)

    def operations(self) -> list[str]:
        """Slugs of the operations stored in the catalog (no runs loaded)."""
        return sorted(self.snapshot.operation_manifests)

    def eligible_count(self, operation: str) -> int:
        return self.snapshot.eligible_count(operation)
