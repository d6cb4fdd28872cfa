"""Reproduction pages (/reproduction/{source}): how many of a source's reported figures we re-measured,
per GPU product, how far they hold (median Y/X, within 10%, within 2×) and the outliers, each with its
explanation or "unexplained" (the court of ``readmodel.court``, whose pairs are derived per operation at load)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import orjson
from sqlalchemy import distinct, func, select

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.readmodel.court import CourtRow, GpuCourt, gpu_court
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import implementation_slug
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.source_notices import SourceNotice, source_notice


@dataclass
class ReproductionPage(JsonModel):
    source: str
    title: str
    notice: SourceNotice
    gpus: list[GpuCourt]
    pairs: list[CourtRow]  # every re-measured figure, by GPU then operation
    others: list[str] = field(default_factory=list)  # "A100 80GB (1,234)": other GPUs it reported on, none re-measured


def _slug(product: str) -> str:
    gpu = registry.gpu_for_product(product)
    return gpu.slug if gpu else ""


def _reported_products(catalog: Catalog, source: str) -> dict[str, int]:
    """The source's passed figures per exact GPU product."""
    with catalog.engine.connect() as conn:
        counts = conn.execute(select(RunRow.environment, func.count()).where(
            RunRow.source == source, RunRow.status == "passed", RunRow.median_ns.is_not(None),
            RunRow.runner_key_id.is_(None))
            .group_by(RunRow.environment)).all()
        bodies: dict[str, str] = {digest: body for digest, body in conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.digest.in_([env for env, _ in counts])))}
    products: dict[str, int] = defaultdict(int)
    for env, n in counts:
        products[orjson.loads(bodies[env])["spec"]["hardware"]["product"]] += n
    return dict(products)


def _heard_operations(catalog: Catalog, source: str) -> list[str]:
    """Slugs of the operations where the source reported and a runner measured: where the court sits."""
    with catalog.engine.connect() as conn:
        theirs = select(distinct(RunRow.operation)).where(RunRow.source == source)
        ours = select(distinct(RunRow.operation)).where(RunRow.runner_key_id.is_not(None))
        digests = set(conn.execute(theirs).scalars()) & set(conn.execute(ours).scalars())
        names = conn.execute(select(ObjectRow.name).where(ObjectRow.digest.in_(sorted(digests)))).scalars()
        return sorted(name for name in names if name)


def _row(data: OperationData, run: Run) -> CourtRow:
    court = run.reproduction
    assert court is not None
    by_digest = {r.digest: r.run_id for r in data.runs}
    return CourtRow(run.run_id, urls.run(run.run_id), data.slug, data.title,
                    implementation_slug(data.implementations[run.implementation]),
                    data.environments[run.environment].spec.hardware.product, court.reported_ns, court.reproduced_ns,
                    round(court.ratio, 4), court.verdict, court.version, [by_digest[t] for t in court.twins],
                    [d.sentence() for d in court.differences], "" if court.reproduced else court.explanation)


def reproduction_page(catalog: Catalog, source: str, *, now: datetime) -> ReproductionPage:
    notice = source_notice(source)
    reported = _reported_products(catalog, source)
    if not reported:
        raise NotFound(f"no source {source!r} with reported figures in the catalog")
    rows: dict[str, list[CourtRow]] = defaultdict(list)
    for slug in _heard_operations(catalog, source):
        data = load_operation(catalog, slug)
        for run in data.runs:
            if run.source == source and run.reproduction is not None:
                rows[data.environments[run.environment].spec.hardware.product].append(_row(data, run))
    priority = set(registry.priority_gpus())
    shown = sorted(p for p in reported if p in rows or _slug(p) in priority)
    gpus = [gpu_court(p, reported[p], sorted(rows[p], key=lambda r: (r.operation, r.implementation, r.run_id)))
            for p in shown]
    pairs = [row for gpu in gpus for row in sorted(rows[gpu.gpu], key=lambda r: (r.operation, r.implementation))]
    others = [f"{p} ({reported[p]:,})" for p in sorted(reported) if p not in shown]
    return ReproductionPage(source, notice.title, notice, gpus, pairs, others)
