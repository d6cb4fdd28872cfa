"""The resolver: a request → exact cohorts (ranked), other protocols, compatible cohorts with their
mismatches, the nearest measured cases of an unmeasured shape, and coverage gaps.

Ranks are computed once per cohort over every eligible run (ranking-v1, the same function the pages
use); filters on trust, usability, license, language, implementation and source only hide rows afterwards.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from kernelindex import registry, urls
from kernelindex.domain.expressions import ExpressionError, evaluate
from kernelindex.policy.evidence import LEVEL_ORDER
from kernelindex.policy.nearest_gpu import by_nearness, measured_gpu
from kernelindex.policy.reasons import Reason
from kernelindex.policy.staleness import is_stale
from kernelindex.readmodel.requests import ask_url
from kernelindex.resolve.chooser import choose, narrow_candidates
from kernelindex.resolve.cohorts import CohortSource, RankedCohort, order_key, ranks_verified
from kernelindex.resolve.interpret import canonical_query, interpretation
from kernelindex.resolve.messages import filter_notes, status_of, variant_notes, without_cohorts
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.results import (
    CohortResult,
    Gap,
    Hidden,
    Mismatch,
    Nearest,
    Neighbour,
    Resolution,
    Row,
    told_apart,
)
from kernelindex.resolve.run_facts import RunFacts
from kernelindex.resolve.vocabulary import OperationEntry, Vocabulary
from kernelindex.resolve.words import dtype_matches, names_implementation, spelled_for

MAX_COMPATIBLE = 12
CHALLENGES_URL = urls.challenges("unmeasured")
MAX_LISTED = 24  # exact and other-protocol cohorts listed in full; the totals are always reported


# ---- matching -------------------------------------------------------------------------------


def observed_axis(run: RunFacts, name: str, op: OperationEntry | None) -> int | None:
    if name in run.axes:
        return run.axes[name]
    if op and name in op.constants:
        return op.constants[name]
    if op and name in op.derived:
        try:
            return evaluate(op.derived[name], run.axes)
        except (ExpressionError, ZeroDivisionError):
            return None
    return None


def _mismatches(req: ResolveRequest, run: RunFacts, op: OperationEntry | None) -> tuple[list[Mismatch], list[Mismatch]]:
    """(workload/environment mismatches, protocol mismatches)."""
    found: list[Mismatch] = []
    for name, wanted in req.axes.items():
        seen = observed_axis(run, name, op)
        if seen != wanted:
            found.append(Mismatch(name, wanted, seen))
    if req.dtype and not dtype_matches(req.dtype, run.dtype_values):
        found.append(Mismatch("dtype", req.dtype, ", ".join(sorted(run.dtype_values)) or None))
    if req.gpu and not registry.gpu_may_be(req.gpu, run.gpu):
        found.append(Mismatch("gpu", req.gpu, run.gpu or run.gpu_label))
    if req.arch and req.arch != run.arch:
        found.append(Mismatch("arch", req.arch, run.arch))
    protocol = [Mismatch("mode", req.mode, run.mode)] if req.mode and req.mode != run.mode else []
    return found, protocol


def _distance(mismatches: Sequence[Mismatch]) -> float:
    total = 0.0
    for m in mismatches:
        if isinstance(m.requested, int) and isinstance(m.observed, int) and m.observed > 0 and m.requested > 0:
            total += abs(math.log2(m.observed / m.requested))
        else:
            total += 1.0
    return total


# ---- filters --------------------------------------------------------------------------------


def _hidden_reason(req: ResolveRequest, run: RunFacts) -> Reason | None:
    impl = run.implementation
    if req.language and impl.language != req.language:
        return Reason("HIDDEN_BY_LANGUAGE", f"Written in {impl.language}; the query asks for {req.language}.")
    if req.implementation and not names_implementation(req.implementation, impl.title, impl.slug, impl.project):
        return Reason("HIDDEN_BY_IMPLEMENTATION",
                      f"{impl.title} is not a '{req.implementation}' implementation, which the query asks for.")
    if req.trust and LEVEL_ORDER.get(run.evidence, 99) > LEVEL_ORDER[req.trust]:
        return Reason("HIDDEN_BY_TRUST", f"Evidence is {run.evidence}; the query asks for {req.trust} or better.")
    if req.usable is not None and impl.usable != req.usable:
        words = "usable as-is" if impl.usable else impl.availability or "not usable as-is"
        return Reason("HIDDEN_BY_USABLE", f"The implementation reads '{words}'; the query asks for the opposite.")
    if req.license and (impl.license or "").lower() != req.license.lower():
        return Reason("HIDDEN_BY_LICENSE", f"License is {impl.license or 'unknown'}; the query asks for {req.license}.")
    if req.source and not run.source.lower().startswith(req.source.lower()):
        return Reason("HIDDEN_BY_SOURCE", f"Source is {run.source}; the query asks for {req.source}.")
    return None


def _superseded(run: RunFacts) -> bool:
    """A newer run replaces it: a search answer never shows it (its own page and the operation's still do)."""
    return any(r.code == "SUPERSEDED" for r in run.ineligible_reasons)


def _cohort_result(c: RankedCohort, req: ResolveRequest, now: datetime, mismatches: Sequence[Mismatch] = (),
                   query: str = "") -> CohortResult:
    rows: list[Row] = []
    hidden: list[Hidden] = []
    for run, position, label, noisy, vs_first in c.ranked:
        reason = _hidden_reason(req, run)
        if reason:
            hidden.append(Hidden(run.run_id, run.implementation.title, reason))
        else:
            rows.append(Row(run, position, label, noisy, vs_first, is_stale(run.observed_at, now)))
    excluded = tuple(
        Hidden(r.run_id, r.implementation.title, r.ineligible_reasons[0] if r.ineligible_reasons
               else Reason("NOT_ELIGIBLE", "The run is not eligible for ranking."))
        for r in c.excluded if not _superseded(r)
    )
    return CohortResult(
        **c.sample.identity(), key=c.key, eligible_runs=c.eligible_runs, rows=tuple(rows),
        hidden=tuple(hidden), excluded=excluded, mismatches=tuple(mismatches), query=query, statistic=c.statistic,
    )


# ---- the resolver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    req: ResolveRequest
    source: CohortSource
    vocab: Vocabulary
    now: datetime
    # The GPUs in the order cohorts list by: the priority GPUs, or for a request naming a GPU, that GPU and then
    # the others by the nearest-GPU rule (``gpu_order``)
    gpus: tuple[str, ...] | None = None

    def cohort_order(self, c: RankedCohort) -> tuple:
        if self.gpus is None:
            return c.order or order_key(c.sample, c.key, self.source.priority_gpus(), ranks_a_run=bool(c.ranked),
                                        verified=ranks_verified(c.ranked))
        return order_key(c.sample, c.key, self.gpus, ranks_a_run=bool(c.ranked), verified=ranks_verified(c.ranked))


def resolve(req: ResolveRequest, source: CohortSource, *, parsed: dict[str, object] | None = None,
            candidates: Sequence[str] = (), suggested: Sequence[str] = (), now: datetime) -> Resolution:
    """Resolve a normalised request (see :func:`kernelindex.resolve.request.normalise_request`).

    ``suggested``: close spellings of a word that named no operation, offered as choices (never picked)."""
    vocab = source.vocabulary()
    ctx = _Context(req, source, vocab, now)
    base = {
        "request": req.model_dump(mode="json"),
        "interpretation": interpretation(req, vocab),
        "canonical_query": canonical_query(req, vocab),
        "parsed": parsed,
        "catalog_version": source.version(),
    }
    picked_notes: tuple[Reason, ...] = ()
    if not req.operation and suggested and not candidates:
        return choose(req, source, vocab, suggested, base, suggested=True)
    if not req.operation:
        narrowed = narrow_candidates(req, source, vocab, candidates)
        if narrowed is None:
            return choose(req, source, vocab, candidates, base)
        picked = vocab.operations.get(narrowed[0])
        axes = {(spelled_for(k, picked.axes) or k) if picked else k: v for k, v in req.axes.items()}
        req = req.model_copy(update={"operation": narrowed[0], "axes": axes})
        ctx = _Context(req, source, vocab, ctx.now)
        base = {**base, "request": req.model_dump(mode="json"), "interpretation": interpretation(req, vocab),
                "canonical_query": canonical_query(req, vocab)}
        picked_notes = (narrowed[1],)
    operation = str(req.operation)
    op = vocab.operations.get(operation)
    op_json: dict[str, object] = {"slug": operation, "title": op.title if op else operation,
               "family": op.family if op else None, "url": urls.operation(operation)}
    cohorts = list(source.cohorts(operation))
    if not cohorts:
        status, message = without_cohorts(req, source.leaderboard_scores(operation))
        return Resolution(status=status, message=message, operation=op_json, notes=picked_notes,
                          **base)  # type: ignore[arg-type]  # base holds Resolution's fields
    resolution = _resolve_operation(ctx, op, op_json, cohorts, base)
    return replace(resolution, notes=picked_notes + resolution.notes) if picked_notes else resolution


def _resolve_operation(ctx: _Context, op: OperationEntry | None, op_json: dict[str, object],
                       cohorts: list[RankedCohort], base: dict) -> Resolution:
    req = ctx.req
    cohorts = [c for c in cohorts if c.ranked or not all(_superseded(r) for r in c.excluded)]
    exact: list[RankedCohort] = []
    other: list[tuple[RankedCohort, list[Mismatch]]] = []
    compatible: list[tuple[RankedCohort, list[Mismatch]]] = []
    for c in cohorts:
        workload_env, protocol = _mismatches(req, c.sample, op)
        if workload_env:
            compatible.append((c, workload_env + protocol))
        elif protocol:
            other.append((c, protocol))
        else:
            exact.append(c)
    ctx = replace(ctx, gpus=gpu_order(req, [c for c, m in compatible if _elsewhere_only(m)]
                                      or [c for c, _ in compatible]))
    exact.sort(key=ctx.cohort_order)
    other.sort(key=lambda p: ctx.cohort_order(p[0]))
    closest = heapq.nsmallest(MAX_COMPATIBLE, compatible, key=lambda p: (
        len(p[1]), _distance(p[1]), not _elsewhere_only(p[1]), ctx.cohort_order(p[0])))
    nearest = None if exact or other else _nearest(ctx, op, compatible)
    query = canonical_query(req, ctx.vocab)
    exact_results = told_apart(tuple(_cohort_result(c, req, ctx.now, query=query) for c in exact[:MAX_LISTED]))
    other_results = told_apart(tuple(_cohort_result(c, req, ctx.now, m, _query_for(ctx, c))
                                     for c, m in other[:MAX_LISTED]))
    compat_results = told_apart(tuple(_cohort_result(c, req, ctx.now, m, _query_for(ctx, c)) for c, m in closest))
    gaps = _gaps(ctx, cohorts, exact)
    notes = filter_notes(req) + variant_notes(req, exact)
    status, message = status_of(req, ctx.vocab, exact, exact_results, other_results, closest, len(compatible), nearest)
    return Resolution(
        status=status, message=message, operation=op_json, exact=exact_results, exact_total=len(exact),
        other_protocols=other_results, other_protocols_total=len(other), compatible=compat_results,
        compatible_total=len(compatible), nearest=nearest, gaps=gaps, notes=notes, **base,
    )


def gpu_order(req: ResolveRequest, others: Sequence[RankedCohort]) -> tuple[str, ...] | None:
    """For a request naming a GPU: that GPU, then the GPUs of ``others`` (cohorts on other GPUs) by the
    nearest-GPU rule (``policy.nearest_gpu``, the operation page's and ``ki use``'s), then the rest. None when
    the request names no GPU of the datasheet table (cohorts list by the priority GPUs)."""
    table = registry.gpus()
    asked = table.get(req.gpu or "")
    if asked is None:
        return None
    runs: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
    for c in others:
        if c.sample.gpu is not None:
            runs[c.sample.gpu].extend((run.evidence, run.observed_at) for run, *_ in c.ranked)
    measured = [m for slug, found in runs.items() if (m := measured_gpu(slug, found))]
    nearest = (m.slug for m in by_nearness(asked, measured, table))
    return tuple(dict.fromkeys((asked.slug, *registry.gpus_answering(asked.slug), *nearest)))


def _elsewhere_only(mismatches: Sequence[Mismatch]) -> bool:
    """Whether a cohort measured the asked workload and region, only on another GPU: at the same distance it lists
    before the asked GPU's other dtypes and shapes (what wins in bf16 says little of what wins in fp32), as the
    operation page's nearest-GPU panel offers the same workload on another GPU."""
    return all(m.field in ("gpu", "arch") for m in mismatches)


def _query_for(ctx: _Context, c: RankedCohort) -> str:
    """A query that resolves this cohort exactly: the request with its mismatched fields replaced."""
    s = c.sample
    req = ctx.req
    op = ctx.vocab.operations.get(req.operation or "")
    axes = {name: observed_axis(s, name, op) or value for name, value in req.axes.items()}
    update: dict[str, object] = {"axes": axes}
    if req.dtype and not dtype_matches(req.dtype, s.dtype_values) and len(s.dtype_values) == 1:
        update["dtype"] = next(iter(s.dtype_values))
    if req.gpu and not registry.gpu_may_be(req.gpu, s.gpu):
        update["gpu"] = s.gpu
    if req.arch and req.arch != s.arch:
        update["arch"] = s.arch
    update["mode"] = s.mode
    return canonical_query(req.model_copy(update=update), ctx.vocab)


def _nearest(ctx: _Context, op: OperationEntry | None, compatible: list[tuple[RankedCohort, list[Mismatch]]]
             ) -> Nearest | None:
    """Along the one differing axis: the closest measured value below and above (never interpolated)."""
    req = ctx.req
    by_axis: dict[str, dict[int, list[RankedCohort]]] = defaultdict(lambda: defaultdict(list))
    for c, mismatches in compatible:
        if len(mismatches) == 1 and mismatches[0].field in req.axes and isinstance(mismatches[0].observed, int):
            by_axis[mismatches[0].field][mismatches[0].observed].append(c)
    axis_order = list(op.axes) if op else sorted(req.axes)
    for axis in [a for a in axis_order if a in by_axis]:
        wanted = req.axes[axis]
        values = sorted(by_axis[axis])
        below = max((v for v in values if v < wanted), default=None)
        above = min((v for v in values if v > wanted), default=None)
        return Nearest(axis, wanted, _neighbour(ctx, axis, below, by_axis[axis]),
                       _neighbour(ctx, axis, above, by_axis[axis]))
    return None


def _neighbour(ctx: _Context, axis: str, value: int | None, cohorts: dict[int, list[RankedCohort]]) -> Neighbour | None:
    if value is None:
        return None
    req = ctx.req.model_copy(update={"axes": {**ctx.req.axes, axis: value}})
    query = canonical_query(req, ctx.vocab)
    members = sorted(cohorts[value], key=ctx.cohort_order)[:MAX_LISTED]
    return Neighbour(value, query, told_apart(tuple(_cohort_result(c, ctx.req, ctx.now, query=query)
                                                    for c in members)))


def _gaps(ctx: _Context, cohorts: list[RankedCohort], exact: list[RankedCohort]) -> tuple[Gap, ...]:
    req = ctx.req
    gaps: list[Gap] = []
    op = req.operation or ""
    if req.gpu and not any(c.eligible_runs for c in exact if c.sample.gpu == req.gpu):
        gpu = ctx.vocab.gpus.get(req.gpu)
        label = gpu.short if gpu else req.gpu
        what = interpretation(req.model_copy(update={"gpu": None}), ctx.vocab).split(" · ", 1)
        scope = what[1] if len(what) > 1 else "this operation"
        workload = _request_workload(req, cohorts)
        ask = ask_url(op, workload, str(req.gpu)) if gpu and workload else None
        page = urls.operation(op, ("workload", workload), ("gpu", req.gpu)) if gpu and op else None
        only = sorted({c.sample.gpu_label for c in exact if c.eligible_runs})
        only_text = f" (only on {', '.join(only)})" if only else ""
        gaps.append(Gap(req.gpu, label, "request", f"Not measured on {label} for {op} · {scope}{only_text}",
                        CHALLENGES_URL, ask, page))
    workloads = {c.sample.workload_key: c.sample for c in exact}
    if not workloads:
        return tuple(gaps)
    measured: dict[str, set[str | None]] = defaultdict(set)
    for c in cohorts:
        if c.sample.workload_key in workloads and c.eligible_runs:
            measured[c.sample.workload_key].add(c.sample.gpu)
    for slug in ctx.source.priority_gpus():
        missing = [w for w in workloads if slug not in measured[w]]
        if not missing or slug == req.gpu:
            continue
        gpu = ctx.vocab.gpus.get(slug)
        label = gpu.short if gpu else slug
        ask = page = None
        if len(workloads) == 1:
            scope = _shape(workloads[missing[0]], ctx.vocab.operations.get(op))
            ask = ask_url(op, workloads[missing[0]].workload_ref, slug)
            page = urls.operation(op, ("workload", workloads[missing[0]].workload_ref), ("gpu", slug))
        else:
            scope = f"{len(missing)} of the {len(workloads)} matching workloads"
        gaps.append(Gap(slug, label, "workload", f"Not measured on {label} for {op} · {scope}",
                        CHALLENGES_URL, ask, page))
    return tuple(gaps)


def _request_workload(req: ResolveRequest, cohorts: list[RankedCohort]) -> str | None:
    """The one measured workload the request's axes name exactly (its ref), if they name one."""
    matching = {c.sample.workload_ref for c in cohorts
                if req.axes and all(c.sample.axes.get(k) == v for k, v in req.axes.items())}
    return matching.pop() if len(matching) == 1 else None


def _shape(run: RunFacts, op: OperationEntry | None) -> str:
    declared = op.axes if op else ()
    order = [a for a in declared if a in run.axes] + sorted(a for a in run.axes if a not in declared)
    dtypes = sorted(set(run.dtypes.values()))
    return " · ".join([f"{a} {run.axes[a]}" for a in order] + dtypes)
