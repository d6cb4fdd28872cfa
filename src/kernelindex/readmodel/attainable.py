"""The attainable bandwidth of each GPU (docs/design.md §5): the best it has been seen to sustain — the highest
of the ceilings a KernelIndex runner measured on it (copy, read-only, write-only) and of the rate every
verified run on it moved its compulsory bytes at. The attainable floor divides by it, so no verified
run is ever under that floor; the physical floor (the datasheet's) stands beside it.

The figures are kept per version of their inputs (``Versions.attainable``); each verified operation's
best rate per GPU is derived once per loaded operation, so a publication that adds a verified run to
one operation recomputes that operation's rates and a maximum over the others' kept ones. A GPU's figure
reads only ceilings and runs on that GPU, so an answer that shows a few GPUs asks for theirs alone
(``gpus``): the operations with no verified run on them are not loaded at all.

Each verified operation's rates are part of its stored summary (``readmodel/summaries.py``: stored after an
import and whenever the site-wide pages gather the summaries, kept per version of the operation's data and
code fingerprint), so a fresh worker reads them in one query instead of loading every verified operation's
runs; an operation whose summary at its current version is not stored yet is loaded and its rates derived
as before — the same function computes both."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import orjson
from sqlalchemy import select

from kernelindex import registry
from kernelindex.catalog.changes import MAY_MOVE_ATTAINABLE
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow, ObjectRow, OperationSummaryRow, RunRow
from kernelindex.domain.expressions import evaluate
from kernelindex.domain.gpus import GpuSpec
from kernelindex.policy.ceilings import CeilingFigure, best_seen
from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.policy.floor import Attainable, attainable_compute
from kernelindex.policy.gathers import recorded_distinct_ids
from kernelindex.policy.traffic import compulsory_traffic, resolved_axes
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.region_work import forward_work_note, skips_floor_traffic
from kernelindex.readmodel.summary_form import stored_column
from kernelindex.readmodel.versions import Versions

CEILINGS = (("copy_bandwidth_bytes_per_s", "copy"), ("read_bandwidth_bytes_per_s", "read-only"),
            ("write_bandwidth_bytes_per_s", "write-only"))
Rates = dict[str, tuple[float, str, str]]  # per GPU slug: the best rate, what reached it, its run ("": none)
# An operation's verified rates: "bandwidth" (bytes/s of compulsory traffic), "gemm" (FLOP/s of a 16-bit GEMM)
AttainableRates = dict[str, Rates]


def attainable_bandwidths(catalog: Catalog, versions: Versions, load: Callable[[str], OperationData],
                          gpus: frozenset[str] | None = None) -> dict[str, Attainable]:
    """Per GPU slug, the best bandwidth seen sustained on it and what sustained it (GPUs no runner
    measured and no verified run ran on are absent: they have the physical floor only). ``versions``:
    the catalog's (the figures are kept by ``versions.attainable``, each operation's stored rates read at
    its own version); ``load``: an operation by slug, with at least its attested runs
    (``readmodel.loading``), for those whose rates are not stored; ``gpus``: only these GPUs' figures
    (None: every GPU's), each the same as in the whole table."""
    if gpus is not None and not gpus:  # an operation with no GPU: nothing to ask (and not the whole table's key)
        return {}
    key = ("attainable-bandwidths",) if gpus is None else ("attainable-bandwidths", "of", *sorted(gpus))
    return READ_CACHE.get(catalog, key, lambda: _compute(catalog, versions, load, gpus),
                          version=versions.attainable, scope=MAY_MOVE_ATTAINABLE)


def attainable_rates(data: OperationData) -> AttainableRates:
    """Per GPU, the best rates this operation's verified runs reached: what it adds to the attainable
    figures (kept in its stored summary)."""
    return {"bandwidth": data.derived("verified-rates", partial(_verified_rates, data)),
            "gemm": data.derived("verified-gemm-flops", partial(_gemm_flops, data))}


@dataclass(frozen=True)
class _Inputs:
    """What every GPU's figure reads of the catalog besides the operations' rates, once per version of them."""

    environments: list[tuple[str, dict]]  # (digest, spec) of every runner environment
    verified: list[tuple[str, str]]  # (environment digest, operation slug) of every attested run
    rates: dict[tuple[str, int], AttainableRates] = field(default_factory=dict)  # by (slug, its version), as read


def _inputs(catalog: Catalog, versions: Versions) -> _Inputs:
    """Kept by ``versions.attainable``: each publication that may move a figure makes the figures of many GPU
    sets out of date (one per set the operations' pages ask for), and each set read these again (issue 50)."""
    return READ_CACHE.get(catalog, ("attainable-inputs",), lambda: _read_inputs(catalog),
                          version=versions.attainable, scope=MAY_MOVE_ATTAINABLE)


def _read_inputs(catalog: Catalog) -> _Inputs:
    with catalog.engine.connect() as conn:
        environments = [(digest, orjson.loads(body)["spec"]) for digest, body in conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.kind == "ExecutionEnvironment"))]
        # The attested runs (thousands) looked up by digest: as a join, SQLite's planner scanned every run
        # (85k on the full catalog, 0.13 s of every read command's CPU; the IN form 0.03 s).
        verified = conn.execute(
            select(RunRow.environment, ObjectRow.name).join(ObjectRow, RunRow.operation == ObjectRow.digest)
            .where(RunRow.digest.in_(select(AttestationRow.run))).distinct()).tuples().all()
    return _Inputs(environments, [(environment, slug) for environment, slug in verified if slug])


def _compute(catalog: Catalog, versions: Versions, load: Callable[[str], OperationData],
             gpus: frozenset[str] | None) -> dict[str, Attainable]:
    inputs = _inputs(catalog, versions)
    environments = inputs.environments
    # Verified GEMM rates count once a runner measured the ceiling GEMM on any GPU (as in the whole table).
    gemm_ceilings: dict[str, Attainable] = {}
    for _, spec in environments:
        _offer_gemm_ceiling(gemm_ceilings, spec)
    if gpus is not None:
        environments = [(d, spec) for d, spec in environments if _gpu_slug(spec) in gpus]
    on_these = {digest for digest, _ in environments}
    verified_operations = {slug for environment, slug in inputs.verified if gpus is None or environment in on_these}
    best: dict[str, Attainable] = {}
    for _, spec in environments:
        _offer_ceilings(best, spec)
    compute: dict[str, Attainable] = {}
    for _, spec in environments:
        _offer_gemm_ceiling(compute, spec)
    slugs = sorted(s for s in verified_operations if s)
    rates_of = _rates(catalog, inputs, {slug: versions.of(slug) for slug in slugs}, load)
    for slug in slugs:
        rates = rates_of[slug]
        for gpu, (rate, source, run_id) in rates["bandwidth"].items():
            _offer(best, gpu, Attainable(rate, source, run_id=run_id))
        if gemm_ceilings:
            for gpu, (rate, source, run_id) in rates["gemm"].items():
                _offer(compute, gpu, Attainable(rate, source, run_id=run_id))
    tables = ceiling_tables(spec for _, spec in environments)
    return {gpu: replace(_with_compute(a, compute.get(gpu)), table=tables.get(gpu, ())) for gpu, a in best.items()
            if gpus is None or gpu in gpus}


def _rates(catalog: Catalog, inputs: _Inputs, wanted: dict[str, int],
           load: Callable[[str], OperationData]) -> dict[str, AttainableRates]:
    """These operations' rates at these versions: each read (or derived) once per version of the inputs, however
    many GPU sets ask for it."""
    missing = {slug: version for slug, version in wanted.items() if (slug, version) not in inputs.rates}
    stored = _stored_rates(catalog, missing) if missing else {}
    for slug, version in missing.items():
        inputs.rates[(slug, version)] = stored[slug] if slug in stored else attainable_rates(load(slug))
    return {slug: inputs.rates[(slug, version)] for slug, version in wanted.items()}


def _with_compute(bandwidth: Attainable, compute: Attainable | None) -> Attainable:
    if compute is None:
        return bandwidth
    return replace(bandwidth, compute_flops_per_s=compute.bandwidth_bytes_per_s, compute_source=compute.source,
                   compute_run_id=compute.run_id)


def ceiling_tables(environments: Iterable[dict]) -> dict[str, tuple[CeilingFigure, ...]]:
    """Per GPU slug, its v4 ceiling table: each kernel at each size, the best any runner environment on that GPU
    recorded (two probes of one GPU differ by a percent or two; the higher keeps the floor a lower bound); a GPU
    whose environments carry none takes the table shipped in ``registry/measured_ceilings.yaml``."""
    best: dict[str, dict[tuple[str, int], float]] = {}
    for spec in environments:
        gpu = registry.gpu_for_product(spec["hardware"]["product"])
        if gpu is None or not spec.get("ceiling_table"):
            continue
        cell = best.setdefault(gpu.slug, {})
        for point in spec["ceiling_table"]:
            key = (point["kernel"], int(point["bytes"]))
            cell[key] = max(cell.get(key, 0.0), float(point["bandwidth_bytes_per_s"]))
    for product, measured in registry.measured_ceilings().items():
        gpu = registry.gpu_for_product(product)
        if gpu is not None and gpu.slug not in best:
            best[gpu.slug] = {(kernel, int(size)): float(rate) for kernel, size, rate in measured.table}
    return {gpu: tuple(CeilingFigure(kernel, size, rate) for (kernel, size), rate in sorted(cells.items()))
            for gpu, cells in best.items()}


def _stored_rates(catalog: Catalog, wanted: dict[str, int]) -> dict[str, AttainableRates]:
    """The rates kept in the stored summaries of these operations at these versions (those not stored: absent),
    read from the small counts column beside each summary."""
    return {slug: rates_from_json(orjson.loads(counts)["attainable"])
            for slug, counts in stored_column(catalog, wanted, OperationSummaryRow.counts).items()}


def rates_from_json(kept: dict[str, dict[str, list[Any]]]) -> AttainableRates:
    """Rates as a stored summary's JSON holds them (each triple a list)."""
    return {kind: {gpu: (float(rate), str(source), str(run_id)) for gpu, (rate, source, run_id) in figures.items()}
            for kind, figures in kept.items()}


def _gpu_slug(environment: dict) -> str | None:
    gpu = registry.gpu_for_product(environment["hardware"]["product"])
    return gpu.slug if gpu else None


def _offer_gemm_ceiling(compute: dict[str, Attainable], spec: dict) -> None:
    """The runner's ceiling GEMM (8192³ fp16 cuBLAS, runner/cuda.gemm_ceiling), kept in ``Attainable``'s
    rate field of a separate table: FLOP/s here, not bytes/s."""
    gpu = registry.gpu_for_product(spec["hardware"]["product"])
    if gpu is not None and (value := spec.get("fp16_gemm_flops_per_s")):
        _offer(compute, gpu.slug, Attainable(float(value), f"the 8192³ fp16 cuBLAS GEMM a KernelIndex runner measured "
                                                           f"on {gpu.short} (the best 16-bit GEMM rate seen there)"))


def _gemm_flops(data: OperationData) -> dict[str, tuple[float, str, str]]:
    """Per GPU, the best FLOP rate a verified run of this 16-bit GEMM reached (so none is under the floor)."""
    best: dict[str, Attainable] = {}
    for run, gpu, median_ns in _verified_runs_with_gpu(data):
        if data.protocols[run.protocol].spec.timed_region != "forward":
            continue
        op_spec, wl_spec = data.specs_json(run.workload)
        flops = op_spec.get("flops")
        probe = Attainable(1.0, "", compute_flops_per_s=1.0)
        if not flops or attainable_compute(op_spec, wl_spec, probe, None) is None:
            continue
        work = evaluate(flops, resolved_axes(op_spec, wl_spec))
        _offer(best, gpu.slug, Attainable(
            work / (median_ns * 1e-9),
            f"verified run {run.run_id} ({data.slug}) reached this GEMM rate on {gpu.short}, the best seen there",
            run_id=run.run_id))
    return _as_rates(best)


def _verified_runs_with_gpu(data: OperationData) -> Iterator[tuple[Run, GpuSpec, int]]:
    """The eligible verified runs with a median: each with its GPU (runs on a GPU the registry lacks skipped)
    and its median in ns."""
    for run in data.runs:
        gpu = data.gpu_of(run.environment)
        if gpu is not None and run.eligible and run.evidence in VERIFIED_LEVELS and run.median_ns:
            yield run, gpu, run.median_ns


def _offer(best: dict[str, Attainable], gpu: str, candidate: Attainable) -> None:
    """The policy's choice (``policy/ceilings.best_seen``) between the best so far and one more candidate."""
    current = [best[gpu]] if gpu in best else []
    if chosen := best_seen([*current, candidate]):
        best[gpu] = chosen


def _as_rates(best: dict[str, Attainable]) -> dict[str, tuple[float, str, str]]:
    return {gpu: (a.bandwidth_bytes_per_s, a.source, a.run_id) for gpu, a in best.items()}


def _offer_ceilings(best: dict[str, Attainable], spec: dict) -> None:
    gpu = registry.gpu_for_product(spec["hardware"]["product"])
    if gpu is None:
        return
    for name, kind in CEILINGS:
        if value := spec.get(name):
            _offer(best, gpu.slug, Attainable(
                float(value), f"the {kind} ceiling a KernelIndex runner measured on {gpu.short} (the best it has "
                              f"sustained)"))


def _verified_rates(data: OperationData) -> dict[str, tuple[float, str, str]]:
    """Per GPU, the best rate a verified run of this operation moved its compulsory bytes at."""
    best: dict[str, Attainable] = {}
    for run, gpu, median_ns in _verified_runs_with_gpu(data):
        if skips_floor_traffic(forward_work_note(data, run)):
            continue
        region = data.protocols[run.protocol].spec.timed_region
        counted = recorded_distinct_ids(run.spec.timing.raw) or None  # the rows its gather read, when recorded
        moved = sum(t.bytes for t in compulsory_traffic(*data.specs_json(run.workload), region, data.slug,
                                                        distinct_ids=counted))
        _offer(best, gpu.slug, Attainable(
            moved / (median_ns * 1e-9), f"verified run {run.run_id} ({data.slug}, {region}) moved its compulsory "
                                        f"bytes at this rate on {gpu.short}, the best seen sustained there",
            run_id=run.run_id))
    return _as_rates(best)
