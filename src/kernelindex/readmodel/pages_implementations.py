"""Implementation pages (/implementations/{slug}): one implementation line (project + callable)
with its revisions — "Can I use this?", license declared vs concluded, records held, runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import stored_json
from kernelindex.readmodel import labels
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.folding import page_of_lists
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import OperationData, load_operation, operation_slug_of
from kernelindex.readmodel.pages_common import CohortSummary, cohort_summaries
from kernelindex.readmodel.paging import Paging
from kernelindex.readmodel.source_notices import SourceNotice, source_notice


@dataclass
class Revision(JsonModel):
    digest: str
    version: str | None
    commit: str | None
    usable: bool
    install_command: str | None
    reasons: list[dict[str, str]]
    license_declared: str | None
    license_concluded: str | None
    license_concluded_from: str | None
    source_url: str | None
    eligible_runs: int
    artifacts: list[dict] = field(default_factory=list)  # mirrored files: digest, size, license, who holds them


@dataclass
class RunRow(JsonModel):
    run_id: str
    workload: str
    workload_label: str
    cohort: str
    cohort_label: str
    median_ns: int | None
    rank: str | None
    cohort_size: int
    version: str | None
    evidence: str
    eligible: bool
    url: str
    status: str = "passed"  # failed runs are listed as evidence, never ranked
    score_s: float | None = None  # a suite-scoped leaderboard score (seconds), instead of a latency
    source: str = ""  # the source that reported it (its license and attribution are in the page's sources)


@dataclass
class ImplementationPage(JsonModel):
    slug: str
    title: str
    project: dict[str, str | None]
    operation: dict[str, str]
    language: str
    invocation: str
    role: str
    in_place: bool
    revisions: list[Revision]
    records_held: list[CohortSummary] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    description: str | None = None  # who wrote it, where the title cannot say (KernelIndex's own baselines)
    sources: list[SourceNotice] = field(default_factory=list)  # license and attribution of the data shown
    # Where ``records_held`` and ``runs`` lie in their whole lists (one ?page= for both: readmodel.folding)
    records_paging: Paging | None = None
    runs_paging: Paging | None = None


def _operation_slug_for(catalog: Catalog, slug: str) -> str:
    with catalog.engine.connect() as conn:
        row = conn.execute(select(ObjectRow.operation).where(
            ObjectRow.kind == "ImplementationRevision",
            ObjectRow.name == (slug[:labels.NAME_LIMIT] if len(slug) > labels.NAME_LIMIT else slug)).limit(1)).first()
        if row is None:
            names = conn.execute(select(ObjectRow.name).where(ObjectRow.kind == "ImplementationRevision")
                                 .distinct()).scalars().all()
            raise NotFound(f"no implementation {slug!r} in the catalog" + _could_mean(slug, [n for n in names if n]))
        return operation_slug_of(conn, row.operation)


def _could_mean(slug: str, names: list[str]) -> str:
    """The implementation slugs a partial or misspelt name could mean (``liger`` → liger-kernel-…)."""
    from difflib import get_close_matches

    key = slug.lower()
    # Shortest first: "liger" lists liger-kernel-rope before liger-benchmarks-torch-lm-head-grpo-token.
    hits = sorted((n for n in names if key in n.lower()), key=lambda n: (len(n), n)) or \
        get_close_matches(key, names, n=5)
    if not hits:
        return ""
    more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
    return f"; did you mean {', '.join(hits[:8])}{more}?"


def implementation_page(catalog: Catalog, slug: str, *, page: str | None = None, now: datetime) -> ImplementationPage:
    """One implementation line's page; ``page``: which page of its records held and its runs (readmodel.folding)."""
    data = load_operation(catalog, _operation_slug_for(catalog, slug))
    digests = [d for d, impl in data.implementations.items() if labels.implementation_slug(impl) == slug]
    if not digests:
        raise NotFound(f"no implementation {slug!r} has runs for {data.slug}")
    first = data.implementations[digests[0]]
    spec = first.spec
    project = data.projects.get(spec.project)
    call = spec.callable
    model = ImplementationPage(
        slug=slug,
        title=labels.implementation_title(first),
        project={"title": labels.project_title(project) if project else None,
                 "repository": project.spec.repository if project else None,
                 "homepage": project.spec.homepage if project else None},
        operation={"slug": data.slug, "title": data.title},
        language=call.language,
        invocation=f"{call.module}:{call.symbol}",
        role=spec.role,
        in_place=spec.in_place,
        revisions=[_revision(data, d) for d in digests],
        description=first.metadata.description,
    )
    model.revisions.sort(key=lambda r: (r.version or "", r.digest), reverse=True)
    clock = now
    model.records_held = [s for s in cohort_summaries(data, clock)
                          if s.leader and s.leader.implementation_slug == slug]
    model.runs = _runs(data, set(digests))
    shown = {r.source for r in [*data.runs, *data.score_runs] if r.implementation in set(digests)}
    model.sources = [source_notice(name, data.sources.get(name)) for name in sorted(shown)]
    model.gpus = sorted({s.gpu_name for s in cohort_summaries(data, clock)
                         if any(r.cohort == s.key for r in model.runs)})
    (model.records_held, model.records_paging), (model.runs, model.runs_paging) = page_of_lists(
        page, model.records_held, model.runs)
    return model


def _revision(data: OperationData, digest: str) -> Revision:
    impl = data.implementations[digest]
    spec = impl.spec
    usable = data.usability[digest]
    lic = spec.license
    return Revision(
        digest=digest, version=spec.version, commit=spec.commit, usable=usable.usable,
        install_command=usable.install_command, reasons=[r.to_json() for r in usable.reasons],
        license_declared=lic.declared, license_concluded=lic.concluded,
        license_concluded_from=lic.concluded_from, source_url=usable.source_url,
        eligible_runs=sum(1 for r in data.runs if r.implementation == digest and r.eligible),
        artifacts=list(stored_json(impl)["spec"].get("artifacts") or []),  # as stored
    )


def _runs(data: OperationData, digests: set[str]) -> list[RunRow]:
    rows = []
    for cohort in cohorts_of(data).values():
        ranks = {r.item.id: r.label for r in cohort.ranked}
        env, protocol = data.environments[cohort.environment], data.protocols[cohort.protocol]
        for run in cohort.runs:
            if run.implementation not in digests:
                continue
            wl = data.workloads[run.workload]
            rows.append(RunRow(
                run.run_id, short_digest(run.workload), labels.workload_label(data.operation, wl),
                short_digest(cohort.key), labels.cohort_label(env, protocol), run.median_ns,
                ranks.get(run.digest), len(cohort.ranked),
                data.implementations[run.implementation].spec.version,
                run.evidence, run.eligible, urls.run(run.run_id), run.status, source=run.source))
    rows.extend(_score_rows(data, digests))
    return sorted(rows, key=lambda r: (labels.natural_key(r.workload_label), r.cohort_label, r.median_ns or 0,
                                       r.score_s or 0))


def _score_rows(data: OperationData, digests: set[str]) -> list[RunRow]:
    rows = []
    for run in data.score_runs:
        if run.implementation not in digests:
            continue
        suite = data.suites.get(run.workload)
        env, protocol = data.environments[run.environment], data.protocols[run.protocol]
        rows.append(RunRow(
            run.run_id, short_digest(run.workload), (suite.metadata.title if suite else None) or "benchmark suite",
            short_digest(run.cohort_key), f"leaderboard score · {labels.cohort_label(env, protocol)}", None, None, 0,
            data.implementations[run.implementation].spec.version, run.evidence, False,
            urls.run(run.run_id), run.status, run.score.value, run.source))
    return rows
