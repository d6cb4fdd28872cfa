"""Turn checked Liger rows into manifests, through the curated mapping in registry/sources/liger/."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Any

from kernelindex import registry
from kernelindex.domain.dtypes import canonical_dtype
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
    digest_of,
)
from kernelindex.domain.specs import contiguous_strides
from kernelindex.domain.units import ms_to_ns
from kernelindex.policy.cohorts import PEAK_MEMORY_LABEL
from kernelindex.policy.traffic import resolved_axes
from kernelindex.sources.base import SharedManifests, shipped, source_manifest
from kernelindex.sources.liger.parse import LigerRow
from kernelindex.sources.liger.protocols import latency_protocol, memory_protocol

SOURCE = "liger-kernel-benchmarks"


class RowProblem(ValueError):
    """A row the curated mapping does not cover; the message is the skip reason."""


@dataclass
class Normalizer(SharedManifests):
    """Builds manifests, reusing shared objects (operations, projects, protocols, ...) by key."""

    mapping: dict[str, Any]
    file_name: str = "all_benchmark_data.csv"

    def __post_init__(self) -> None:
        self.shared: dict[tuple[Any, ...], Manifest] = {}

    # --- shared objects ---------------------------------------------------------------------

    def source_manifest(self) -> Source:
        return self._once(("source",), lambda: source_manifest(self.mapping["source"]["name"], self._notice()))

    def _notice(self) -> str:
        return _notice_text(self.mapping["source"]["notice_file"])

    def operation(self, slug: str) -> OperationSpec:
        return self._once(("op", slug), lambda: registry.load_operation(slug))

    def project(self, slug: str) -> SoftwareProject:
        return self._once(("project", slug), lambda: registry.project_manifest(slug))

    def implementation(self, line: str, operation_slug: str, liger_version: str) -> ImplementationRevision:
        entry = self.mapping["implementations"][line]
        version = liger_version if entry["install"].startswith("liger_version") else None
        return self._once(
            ("impl", line, version), lambda: self._build_implementation(line, entry, operation_slug, version)
        )

    def _build_implementation(
        self, line: str, entry: dict, operation_slug: str, version: str | None
    ) -> ImplementationRevision:
        project = self.project(entry["project"])
        license_ = registry.project_licenses().get(entry["project"], {})
        spec = {
            "project": digest_of(project),
            "operation": digest_of(self.operation(operation_slug)),
            "version": version,
            "callable": entry["callable"],
            "role": entry.get("role", "candidate"),
            "in_place": entry.get("in_place", False),
            "install": _install(entry, project, version),
            "license": license_,
        }
        if version and project.spec.repository:
            spec["source_url"] = f"{project.spec.repository}/tree/v{version}"
        return build("ImplementationRevision", spec, {"name": line, "title": entry["title"]})

    def protocol(self, mode: str, variant: str | None = None) -> BenchmarkProtocol:
        """``variant``: what the script's call also does beyond the region (a labelled variant, its own cohort)."""
        src = self.mapping["source"]
        return self._once(
            ("protocol", mode, variant),
            lambda: latency_protocol(src["harness"], mode, variant),
        )

    def memory_protocol(self, mode: str, variant: str | None = None) -> BenchmarkProtocol:
        src = self.mapping["source"]
        return self._once(("memory-protocol", mode, variant), lambda: memory_protocol(src["harness"], mode, variant))

    def environment(self, gpu_name: str) -> ExecutionEnvironment:
        gpu = registry.gpu_for_product(gpu_name)
        if gpu is None:
            raise RowProblem(f"unknown GPU {gpu_name!r} (no datasheet entry)")
        return self._once(
            ("env", gpu_name),
            lambda: build(
                "ExecutionEnvironment",
                {
                    "hardware": {
                        "vendor": gpu.vendor,
                        "product": gpu_name,
                        "architecture": gpu.architecture,
                        "memory_bytes": int(gpu.memory_gb * 1e9),
                        "form_factor": gpu.form_factor,
                    },
                },
                {"name": f"liger-{gpu.slug}", "title": f"{gpu.name} (software versions not recorded by the source)"},
            ),
        )

    # --- per row ----------------------------------------------------------------------------

    def workload(self, row: LigerRow, kernel: dict) -> WorkloadCase:
        operation = self.operation(kernel["operation"])
        axes, dtypes, params = _bind(row, kernel, operation)
        key = (
            "workload",
            kernel["operation"],
            tuple(sorted(axes.items())),
            tuple(sorted(dtypes.items())),
            tuple(sorted(params.items())),
            kernel["operation"] + repr(sorted((kernel.get("storage_order") or {}).items())),
        )
        return self._once(key, lambda: _workload_manifest(operation, axes, dtypes, params, kernel))

    def kernel(self, row: LigerRow) -> dict:
        """The curated mapping of the row's kernel: per file for the sibling files, where a key
        ``kernel@x_name`` (a sweep of another kind) wins over the kernel's own key."""
        if self.file_name in self.mapping["file_kernels"]:
            table = self.mapping["file_kernels"][self.file_name]
            kernel = table.get(f"{row.kernel}@{row.x_name}") or table.get(row.kernel)
            if kernel is None:
                raise RowProblem(
                    f"kernel {row.kernel!r} of {self.file_name} is not curated: the shapes of its 2026 "
                    "benchmark script were not read, so they are not guessed"
                )
            if "skip" in kernel:  # read, and found not attributable: the mapping says why
                raise RowProblem(f"kernel {row.kernel!r} of {self.file_name} is not curated: {kernel['skip']}")
            return kernel
        kernel = self.mapping["kernels"].get(row.kernel)
        if kernel is None:
            raise RowProblem(f"unknown kernel {row.kernel!r} (no curated operation spec)")
        return kernel

    def _file_prefix(self) -> str:
        """Rows of the sibling files name their file (the attribution names its commit); the main
        file's rows keep the external ids they always had."""
        return "" if self.file_name == "all_benchmark_data.csv" else f"{self.file_name}:"

    def run(self, row: LigerRow) -> list[Manifest]:
        kernel = self.kernel(row)
        line = kernel["providers"].get(row.provider)
        if line is None:
            raise RowProblem(f"unknown provider {row.provider!r} for kernel {row.kernel!r}")
        environment = self.environment(row.gpu_name)
        workload = self.workload(row, kernel)
        implementation = self.implementation(line, kernel["operation"], row.liger_version)
        mode = (kernel.get("modes") or {}).get(row.mode, row.mode)
        memory = row.metric == "peak_memory"
        variant = (kernel.get("variants") or {}).get(row.mode)
        protocol = self.memory_protocol(mode, variant) if memory else self.protocol(mode, variant)
        run = build(
            "BenchmarkRun",
            {
                "implementation": digest_of(implementation),
                "workload": digest_of(workload),
                "protocol": digest_of(protocol),
                "environment": digest_of(environment),
                "status": "passed",
                **(_memory_figures(row) if memory else _latency_figures(row)),
                "correctness": {"checked": False, "detail": "The Liger-Kernel benchmark scripts do not check outputs."},
                "observed_at": row.timestamp.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z"),
                "source": {"name": SOURCE, "external_id": self._file_prefix() + _external_id(row),
                           "time_zone_recorded": False},
            },
        )
        project = self.project(self.mapping["implementations"][line]["project"])
        return [
            self.source_manifest(),
            self.operation(kernel["operation"]),
            project,
            implementation,
            workload,
            protocol,
            environment,
            run,
        ]


def _external_id(row: LigerRow) -> str:
    mode = {"forward+backward": "full", "forward-no-grad": "no-grad-forward"}.get(row.mode, row.mode)
    case = f"{row.x_name}={row.x_value} {row.config_text}"
    metric = "" if row.metric == "latency" else f"/{row.metric}"
    return f"{row.kernel}/{mode}{metric}/{row.provider}/{row.gpu_name}/{case}/{row.timestamp:%Y-%m-%d %H:%M:%S}"


def _latency_figures(row: LigerRow) -> dict:
    return {
        "timing": {
            "median_ns": ms_to_ns(row.y50),
            "p20_ns": ms_to_ns(row.y20),
            "p80_ns": ms_to_ns(row.y80),
            "raw": row.raw,
            "method": "triton.testing.do_bench",
        }
    }


def _memory_figures(row: LigerRow) -> dict:
    return {
        "timing": {"raw": row.raw},
        "memory": {
            "metric": "peak_memory",
            "unit": "MiB",
            "median": row.y50,
            "p20": row.y20,
            "p80": row.y80,
            "scope": PEAK_MEMORY_LABEL,
        },
    }


def _install(entry: dict, project: SoftwareProject, version: str | None) -> dict:
    install = entry["install"]
    if install == "liger_version":
        return {"method": "pip", "packages": [{"name": "liger-kernel", "version": version}]}
    if install.startswith("liger_version_with:"):
        backend = install.split(":", 1)[1]
        return {
            "method": "pip",
            "packages": [{"name": "liger-kernel", "version": version}, {"name": backend}],
            "why_missing": f"the source did not record the {backend} version the backend ran with.",
        }
    if install == "script":
        return {
            "method": "none",
            "why_missing": "the implementation is defined inside the benchmark script, not in a package.",
        }
    if install.startswith("unrecorded:"):
        title = install.split(":", 1)[1]
        packages = [{"name": p} for p in project.spec.packages]
        return {"method": "pip", "packages": packages, "why_missing": f"the source did not record the {title} version."}
    raise RowProblem(f"implementation mapping has unknown install kind {install!r}")


def _bind(row: LigerRow, kernel: dict, operation: OperationSpec) -> tuple[dict, dict, dict]:
    axes: dict[str, int] = dict(kernel.get("fixed") or {})
    dtypes: dict[str, str] = dict(kernel.get("dtypes") or {})
    params: dict[str, Any] = {}
    for key, wanted in (kernel.get("require") or {}).items():
        if row.config.get(key) != wanted:
            found = row.config.get(key)
            raise RowProblem(f"config {key}={found!r}: the curated mapping holds for {key}={wanted!r} only")
    for key, value in row.config.items():
        target = (kernel.get("config") or {}).get(key)
        if target is None:
            raise RowProblem(f"config key {key!r} of kernel {row.kernel!r} is not in the curated mapping")
        if value is None or target.startswith("ignore:"):
            continue
        if target.startswith("dtype:"):
            dtype = canonical_dtype(str(value))
            if dtype is None:
                raise RowProblem(f"unknown dtype {value!r} in config key {key!r}")
            dtypes[target.split(":", 1)[1]] = dtype
        elif target.startswith("param:"):
            params[target.split(":", 1)[1]] = value
        else:
            if not isinstance(value, int) or isinstance(value, bool):
                raise RowProblem(f"config key {key!r} should be an integer axis value, got {value!r}")
            axes[target] = value
    x_axis = (kernel.get("x") or {}).get(row.x_name)
    if x_axis is None:
        raise RowProblem(f"x_name {row.x_name!r} of kernel {row.kernel!r} is not in the curated mapping")
    axes.update(_x_binding(row, kernel, x_axis))
    if bad := sorted(f"{name} = {value}" for name, value in axes.items() if value <= 0):
        raise RowProblem(f"non-positive size ({', '.join(bad)}): no tensor has that shape, so the row is implausible "
                         "data and is not imported")
    spec = operation.spec
    wanted = {n for n, a in spec.axes.items() if a.role != "derived"}
    if missing := sorted(wanted - set(axes)):
        raise RowProblem(f"axes {', '.join(missing)} of {operation.metadata.name} get no value from this row")
    if missing_dtypes := sorted(set(spec.dtype_variables) - set(dtypes)):
        raise RowProblem(f"dtype variable(s) {', '.join(missing_dtypes)} get no value from this row")
    return axes, dtypes, params


def _x_binding(row: LigerRow, kernel: dict, x_axis: str) -> dict[str, int]:
    if x_axis == "named":
        named = (kernel.get("named_x") or {}).get(str(row.x_value))
        if named is None:
            raise RowProblem(f"x_value {row.x_value!r} names a configuration the curated mapping does not list")
        return dict(named)
    if isinstance(row.x_value, str):
        raise RowProblem(f"x_value {row.x_value!r} of x_name {row.x_name!r} is not a positive integer")
    return {x_axis: row.x_value}


def _workload_manifest(operation: OperationSpec, axes: dict, dtypes: dict, params: dict, kernel: dict) -> WorkloadCase:
    spec = operation.model_dump(mode="json")["spec"]
    full_axes = resolved_axes(spec, {"axes": axes})
    orders = kernel.get("storage_order") or {}
    tensors = []
    for decl in spec["inputs"] + spec["outputs"]:
        try:
            shape = [evaluate(d, full_axes) for d in decl["shape"]]
        except ExpressionError as exc:
            raise RowProblem(str(exc)) from None
        dtype = dtypes.get(decl["dtype"], decl["dtype"])
        tensors.append(
            {"name": decl["name"], "dtype": dtype, "shape": shape,
             "strides": contiguous_strides(shape, orders.get(decl["name"]))}
        )
    label = " · ".join(f"{k} = {v}" for k, v in axes.items() if spec["axes"].get(k, {}).get("role") != "derived")
    return build(
        "WorkloadCase",
        {"operation": digest_of(operation), "axes": axes, "dtypes": dtypes, "tensors": tensors, "params": params},
        {"title": label},
    )


def _notice_text(name: str) -> str:
    return shipped("liger", name).read_text(encoding="utf-8")
