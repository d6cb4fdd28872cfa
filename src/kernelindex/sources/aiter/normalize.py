"""Turn parsed aiter rows into manifests: one run per row, shared objects built once by key."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import datetime
from math import prod
from typing import Any, cast

from kernelindex import registry
from kernelindex.domain.expressions import ExpressionError, evaluate
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    ExecutionEnvironment,
    ImplementationRevision,
    Manifest,
    OperationSpec,
    SoftwareProject,
    Source,
    WorkloadCase,
    build,
    build_assembled,
    digest_of,
    manifest_json,
)
from kernelindex.domain.specs import contiguous_strides
from kernelindex.policy.traffic import resolved_axes
from kernelindex.sources.aiter import kinds
from kernelindex.sources.aiter.archive import UPSTREAM, UPSTREAM_COMMIT, UPSTREAM_DATE, notice_text
from kernelindex.sources.aiter.moe_gdn import gdn_operation, moe_operation
from kernelindex.sources.aiter.operations import gemm_operation, gemm_slug
from kernelindex.sources.aiter.protocol import STATISTIC, tuner_protocol
from kernelindex.sources.aiter.rows import Row
from kernelindex.sources.base import SharedManifests, source_manifest

SOURCE = "aiter-tuned-configs"
PROJECT = "aiter"
OBSERVED = datetime.fromisoformat(UPSTREAM_DATE)


class Normalizer(SharedManifests):
    """Builds manifests, reusing shared objects (operations, implementations, workloads …) by key."""

    def __init__(self) -> None:
        self.shared: dict[tuple[Any, ...], Manifest] = {}

    def source(self) -> Source:
        return self._once(("source",), lambda: source_manifest(SOURCE, notice_text()))

    def project(self) -> SoftwareProject:
        return self._once(("project",), lambda: registry.project_manifest(PROJECT))

    def protocol(self) -> BenchmarkProtocol:
        return self._once(("protocol",), tuner_protocol)

    def environment(self, row: Row) -> ExecutionEnvironment:
        return self._once(("env", row.gfx, row.cu_num), lambda: _environment(row.gfx, row.cu_num))

    def implementation(self, operation: OperationSpec, entry: str, library: str, kernel: str) -> ImplementationRevision:
        key = ("impl", operation.metadata.name, entry, library, kernel)
        return self._once(key, lambda: self._implementation(operation, entry, library, kernel))

    def _implementation(self, operation: OperationSpec, entry: str, library: str,
                        kernel: str) -> ImplementationRevision:
        license_ = registry.project_licenses()[PROJECT]
        spec = {
            "project": digest_of(self.project()),
            "operation": digest_of(operation),
            "commit": UPSTREAM_COMMIT,
            "callable": {"language": kinds.LANGUAGES.get(library, "other"), "module": f"aiter.{entry}",
                         "symbol": f"{library}:{kernel}"},
            "install": {"method": "git", "git_url": UPSTREAM, "git_commit": UPSTREAM_COMMIT},
            "license": license_,
            "source_url": f"{UPSTREAM}/tree/{UPSTREAM_COMMIT}",
        }
        title = f"aiter {entry} · {library} · {kernel}"
        return build("ImplementationRevision", spec, {"name": implementation_slug(library, kernel), "title": title})

    def workload(self, operation: OperationSpec, axes: dict[str, int], dtypes: dict[str, str]) -> WorkloadCase:
        key = ("workload", operation.metadata.name, tuple(sorted(axes.items())), tuple(sorted(dtypes.items())))
        return self._once(key, lambda: _workload(operation, axes, dtypes))

    def operation(self, slug: str, make: Callable[[], OperationSpec]) -> OperationSpec:
        return self._once(("op", slug), make)

    # --- per row ----------------------------------------------------------------------------------

    def run(self, row: Row) -> list[Manifest]:
        if row.family == "gemm":
            operation, workload, entry, library, kernel, raw = self._gemm(row)
        elif row.family == "moe":
            operation, workload, entry, library, kernel, raw = self._moe(row)
        else:
            operation, workload, entry, library, kernel, raw = self._gdn(row)
        implementation = self.implementation(operation, entry, library, kernel)
        environment, protocol = self.environment(row), self.protocol()
        run = build_assembled("BenchmarkRun", {
            "implementation": digest_of(implementation), "workload": digest_of(workload),
            "protocol": digest_of(protocol), "environment": digest_of(environment), "status": "passed",
            "timing": {"mean_ns": round(row.us * 1000), "samples": 101, "method": STATISTIC,
                       "raw": {"us": row.values["us"], **raw}},
            "correctness": _correctness(raw),
            "observed_at": OBSERVED,
            "source": {"name": SOURCE, "external_id": f"{row.file}:{row.line}"},
        })
        return [self.source(), self.project(), operation, implementation, workload, protocol, environment, run]

    def _gemm(self, row: Row) -> tuple[OperationSpec, WorkloadCase, str, str, str, dict[str, str]]:
        kind = kinds.gemm_kind(row)
        m, n, k, batch = kinds.gemm_shape(row, kind)
        dtypes = kinds.gemm_dtypes(row, kind)
        operation = self.operation(gemm_slug(kind, n, k, batch), lambda: gemm_operation(kind, n, k, batch))
        axes = {"m": m, "n": n, "k": k, **({"b": batch} if batch else {})}
        kernel = row.get("kernelname") or ""
        library = kinds.library_of(row.get("libtype"), kernel)
        err = row.get("errratio") or row.get("err_ratio")
        raw = _present(row, "splitk", "kernelid", "solidx", "tflops", "bw") | ({"err_ratio": err} if err else {})
        return operation, self.workload(operation, axes, dtypes), kind.entry, library, kernel or "(unnamed)", raw

    def _moe(self, row: Row) -> tuple[OperationSpec, WorkloadCase, str, str, str, dict[str, str]]:
        key = kinds.moe_key(row)
        operation = self.operation(key.slug, lambda: moe_operation(key))
        dtypes = {"T": key.dtype, "QA": key.q_a, "QW": key.q_w}
        workload = self.workload(operation, {"token": kinds._number(row, "token"), "model_dim": key.model_dim,
                                             "inter_dim": key.inter_dim, "experts": key.experts,
                                             "topk": key.topk}, dtypes)
        first, second = row.get("kernelname1") or "", row.get("kernelname2") or ""
        one_stage = row.get("run_1stage") == "1" or not second
        libraries = [kinds.library_of("flydsl" if n.startswith("flydsl") else None, n) for n in (first, second) if n]
        library = libraries[0] if one_stage else "+".join(libraries)
        kernel = first if one_stage else f"{first} + {second}"
        raw = _present(row, "us1", "us2", "err1", "err2", "block_m", "ksplit", "run_1stage", "tflops", "bw", "_tag")
        return operation, workload, "fused_moe", library, kernel, raw

    def _gdn(self, row: Row) -> tuple[OperationSpec, WorkloadCase, str, str, str, dict[str, str]]:
        key = kinds.gdn_key(row)
        operation = self.operation(key.slug, lambda: gdn_operation(key))
        axes = {**kinds.gdn_axes(row), "dk": key.k, "dv": key.v, "bt": key.chunk, "h": key.heads, "hg": key.k_heads}
        raw = _present(row, "bv", "max_seq_chunks")
        block = f"BV={row.get('bv')}" if row.get("bv") else "(tuned block not recorded)"
        return operation, self.workload(operation, axes, {"T": "bf16"}), "chunk_gdn_h_opt", "aiter", block, raw


def _present(row: Row, *columns: str) -> dict[str, str]:
    return {c: v for c in columns if (v := row.get(c)) is not None}


def _correctness(raw: dict[str, str]) -> dict[str, object]:
    errors = [f"{name} {raw[name]}" for name in ("err_ratio", "err1", "err2") if name in raw]
    if not errors:
        return {"checked": False, "detail": "aiter's table records no error figure for this row."}
    return {"checked": False, "detail": f"aiter's tuner compared the kernel's output with its reference: "
            f"{', '.join(errors)} (the fraction of elements outside its tolerance, as the tuner wrote it). "
            "Not a pass/fail verdict, and not re-checked by KernelIndex."}


def implementation_slug(library: str, kernel: str) -> str:
    """A URL slug; a kernel name it cannot spell exactly (upper case, long, other characters) gets a
    digest of the name, so two kernels never share a slug."""
    plain = f"aiter-{library.lower()}-{kernel}"
    base = re.sub(r"[^a-z0-9._-]+", "-", plain.lower()).strip("-.")
    if len(base) <= 100 and base == plain:
        return base
    return f"{base[:90].rstrip('-.')}-{hashlib.sha256(kernel.encode()).hexdigest()[:8]}"


def _environment(gfx: str | None, cu: int | None) -> ExecutionEnvironment:
    product = registry.device_product(gfx, cu)
    gpu = registry.gpu_for_product(product)
    hardware = {"vendor": "AMD", "product": product, "architecture": gfx}
    title = f"{gpu.name if gpu else product} (aiter tuner; software versions not recorded)"
    return build("ExecutionEnvironment", {"hardware": {k: v for k, v in hardware.items() if v}},
                 {"name": f"aiter-{(gfx or 'isa-not-recorded')}-{cu if cu is not None else 'cu-not-recorded'}",
                  "title": title})


def _workload(operation: OperationSpec, axes: dict[str, int], dtypes: dict[str, str]) -> WorkloadCase:
    spec = manifest_json(operation)["spec"]
    bound = resolved_axes(spec, {"axes": axes})
    tensors = []
    for decl in spec["inputs"] + spec["outputs"]:
        try:
            shape = [evaluate(d, bound) for d in decl["shape"]]
        except ExpressionError as exc:
            raise kinds.RowProblem(str(exc)) from None
        if prod(shape) > 2**53:
            raise kinds.RowProblem(f"tensor {decl['name']} has {prod(shape):,} elements, beyond exact JSON integers")
        tensors.append({"name": decl["name"], "dtype": dtypes.get(decl["dtype"], decl["dtype"]), "shape": shape,
                        "strides": contiguous_strides(shape)})
    variables = [name for name, axis in spec["axes"].items() if axis["role"] == "variable"]
    label = " · ".join(f"{name} = {axes[name]}" for name in variables) + " · " + " · ".join(
        f"{v}" for v in sorted(set(dtypes.values())))
    return cast(WorkloadCase, build_assembled("WorkloadCase", {
        "operation": digest_of(operation), "axes": axes, "dtypes": dtypes, "tensors": tensors, "params": {}},
        {"title": label}))
