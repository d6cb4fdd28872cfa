"""A KernelBench timing entry → a BenchmarkRun of PyTorch's own implementation of the problem.

The statistic is upstream's: the mean of ``num_trials`` wall-clock trials (CUDA events) after 3
warm-ups, in milliseconds; KernelIndex stores it as latency:mean:ns (never ranked with medians) and
keeps min, max and std beside it, the values as written in ``raw``. The GPU is the entry's own
``hardware`` field (folders name providers). A ``null`` entry is upstream's failed run: a failed
run here, shown and never ranked. The implementation is the configuration the file's name states.
"""

from __future__ import annotations

from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import Manifest, build, digest_of
from kernelindex.domain.numbers import NumberError, json_number
from kernelindex.sources.kernelbench.read import TimingFile

SOURCE = "kernelbench"
NO_HARDWARE = "no hardware recorded in the entry (the GPU is never guessed from the folder)"
CONFIGURATIONS: dict[str, tuple[str, str]] = {  # configuration → (title, the call it times)
    "eager": ("PyTorch eager", "model(*inputs)"),
    "inductor-default": ("torch.compile (inductor, default)", "torch.compile(model, backend='inductor')"),
    "inductor-reduce-overhead": ("torch.compile (inductor, reduce-overhead)",
                                 "torch.compile(model, backend='inductor', mode='reduce-overhead')"),
    "inductor-max-autotune": ("torch.compile (inductor, max-autotune)",
                              "torch.compile(model, backend='inductor', mode='max-autotune')"),
    "inductor-max-autotune-no-cudagraphs": ("torch.compile (inductor, max-autotune-no-cudagraphs)",
                                            "torch.compile(model, backend='inductor', "
                                            "mode='max-autotune-no-cudagraphs')"),
    "cudagraphs": ("torch.compile (cudagraphs backend)", "torch.compile(model, backend='cudagraphs')"),
}
NO_VERSION = ("KernelBench's timing files do not record the PyTorch version (upstream states 2.5.0+cu124 for its "
              "early files only); none is inferred")


class EntryRefused(ValueError):
    """A timing entry that cannot become a run; the message is the reason counted in the report."""


def implementation_manifest(operation: Manifest, configuration: str, project: Manifest, slug: str) -> Manifest:
    title, call = CONFIGURATIONS[configuration]
    spec = {
        "project": digest_of(project),
        "operation": digest_of(operation),
        "callable": {"language": "python", "module": "KernelBench problem module (the operation's semantics)",
                     "symbol": call},
        "role": "baseline",
        "install": {"method": "pip", "packages": [{"name": "torch"}], "why_missing": NO_VERSION},
        "license": registry.project_licenses().get("pytorch", {}),
    }
    return build("ImplementationRevision", spec, {"name": f"{slug}-{configuration}"[:120], "title": title})


def protocol_manifest(trials: int) -> Manifest:
    body = {
        "harness": {"name": "KernelBench timing (scripts/generate_baseline_time.py)"},
        "timer": "CUDA events around each call (wall-clock per trial, as KernelBench's harness reports it)",
        "timed_region": "forward",
        "setup_excluded": True,
        "warmup": {"count": 3},
        "repetitions": {"count": trials},
        "l2_policy": "not recorded by the source",
        "input_regeneration": "none recorded: one set of inputs from get_inputs() for every trial",
        "statistic": "mean",
        "correctness": {"policy": "not_asserted"},
        "native": True,
    }
    return build("BenchmarkProtocol", body, {"name": f"kernelbench-baseline-timing-{trials}-trials",
                                             "title": f"KernelBench baseline timing · mean of {trials} trials"})


def environment_manifest(hardware: str) -> Manifest:
    gpu = registry.gpu_for_product(hardware)
    if gpu is None:
        raise EntryRefused(f"GPU {hardware!r} has no datasheet entry in registry/gpus.yaml")
    spec = {"hardware": {"vendor": gpu.vendor, "product": hardware, "architecture": gpu.architecture,
                         "form_factor": gpu.form_factor}, "software": {}}
    return build("ExecutionEnvironment", spec, {"title": f"{gpu.name} (software versions not recorded by the source)"})


def _ns(value: Any, field: str) -> int:
    try:
        return int(round(float(json_number(value, field)) * 1e6))
    except NumberError as exc:
        raise EntryRefused(f"{field}: {exc}") from None


def timing_of(entry: dict[str, Any]) -> dict[str, Any]:
    trials = entry.get("num_trials")
    raw = {f"{k}_ms" if k in ("mean", "std", "min", "max") else k: repr(v) for k, v in sorted(entry.items())
           if k != "hardware"}
    return {"mean_ns": _ns(entry["mean"], "mean"), "std_ns": _ns(entry.get("std", 0), "std"),
            "min_ns": _ns(entry["min"], "min"), "max_ns": _ns(entry["max"], "max"),
            "samples": trials if isinstance(trials, int) else None, "raw": raw,
            "method": "harness-reported mean of per-trial CUDA-event times"}


def run_manifest(refs: dict[str, Manifest], timing: TimingFile, level: str, problem_file: str,
                 entry: dict[str, Any] | None) -> Manifest:
    where = f"{timing.upstream_path}@{timing.commit[:12]} {level}/{problem_file}"
    observed = f"{timing.commit_date}T00:00:00Z"
    if entry is None:
        body: dict[str, Any] = {
            "status": "runtime_error", "timing": {"raw": {"entry": "null"}},
            "correctness": {"checked": False, "detail": "upstream recorded null for this problem: the run failed "
                                                          "(its cause is not recorded)"}}
    else:
        timing_body = {k: v for k, v in timing_of(entry).items() if v is not None}
        body = {"status": "passed", "timing": timing_body,
                "correctness": {"checked": False, "detail": "KernelBench times its PyTorch reference; no output "
                                                              "check is part of the timing"}}
    body.update({k: digest_of(refs[k]) for k in ("implementation", "workload", "protocol", "environment")})
    body["observed_at"] = observed
    body["source"] = {"name": SOURCE, "external_id": where, "time_zone_recorded": False}
    return build("BenchmarkRun", body)
