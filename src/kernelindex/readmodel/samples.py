"""Raw timing samples of verified runs: the JSON download and the run page's histogram.

The catalog stores each run's ``timing.samples_digest``; the sample files themselves travel in the
signed bundles shipped with the package (``kernelindex/data/verified/*/samples/<hex>.json``, named by
their own SHA-256). A file is served only when its bytes hash to the digest the run names.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

HISTOGRAM_BINS = 24
UNRELIABLE_ZERO = ("not measured: this runner recorded 0 bytes before it counted the result tensors a call returns "
                   "from memory allocated earlier (a gradient its forward computed), so 0 is not a fact here")

# Secondary figures a runner records beside the median: a human name and what to keep in mind.
SECONDARY_NAMES: dict[str, tuple[str, str]] = {
    "do_bench_median_ns": ("triton do_bench median",
                           "the figure most published benchmarks report; on fast kernels it includes launch "
                           "overhead, so it sits above the CUDA-graph median"),
    "compile_ns": ("torch.compile time", "the first call after a clean dynamo state for this case and region; "
                   "excluded from the timed figure"),
    "first_call_ns": ("first call", "wall time of the first call of this region, before any timing; excluded"),
    "plan_ns": ("plan time (host)", "the implementation's planning step for this batch layout (FlashInfer's plan()), "
                "made once per layout outside the timed call, as a serving engine plans once per batch; excluded"),
    "peak_memory_bytes": ("peak memory of the call (KernelIndex runner)",
                          "bytes allocated above what was allocated before one call; not a process-wide peak, "
                          "never compared with a source's peak memory"),
}

AHEAD_OF_TIME_COMPILE = "compile time (ahead of time)"
CHECKS_COMPILE_NOTE = ("the first call of the correctness checks, from a clean dynamo state: tracing, Inductor's "
                       "compilation and (max-autotune) its autotuning, up to the launch; excluded from the timed "
                       "figure")
WARM_FIRST_CALL_NOTE = ("the timed region's first call after another clean dynamo state, with Inductor's in-process "
                        "caches warm from the checks (a recompile, not the compile time); excluded")
WARM_RECOMPILE = "torch.compile time (recompile, caches warm)"
WARM_RECOMPILE_NOTE = ("the first call after a clean dynamo state, timed after this process's correctness checks had "
                       "already compiled (and, in max-autotune, autotuned) the same case, so Inductor's caches were "
                       "warm: it understates the cold compile time, which this runner did not record then (its "
                       "checks' first call is recorded since 2026-12-03); excluded from the timed figure")


def run_secondary(timing: dict[str, Any], checked_before_timing: bool = False) -> list[dict[str, Any]]:
    """A run's secondary figures, with the call's peak memory the runner records beside them.
    ``checked_before_timing``: the run comes from the runner's operation path, whose checks compile a case
    in the same process before its timed region does (a problem module's first call is its compilation)."""
    secondary = dict(timing.get("secondary", {}))
    raw = timing.get("raw", {})
    peak = raw.get("call_peak_memory_bytes")
    if peak is not None and peak.isdigit():
        secondary["peak_memory_bytes"] = int(peak)
    figures = secondary_figures(secondary)
    if raw.get("compile_method"):  # compiled ahead of time when binding (XLA), not by a first call
        for figure in figures:
            if figure["key"] == "compile_ns":
                figure["name"] = AHEAD_OF_TIME_COMPILE
                figure["note"] = f"{raw['compile_method']}; excluded from the timed figure"
    elif raw.get("compile_measured"):  # the checks' first call (runner since 2026-12-03)
        notes = {"compile_ns": CHECKS_COMPILE_NOTE, "first_call_ns": WARM_FIRST_CALL_NOTE}
        for figure in figures:
            figure["note"] = notes.get(figure["key"], figure["note"])
    elif checked_before_timing:
        for figure in figures:
            if figure["key"] == "compile_ns":
                figure["name"], figure["note"] = WARM_RECOMPILE, WARM_RECOMPILE_NOTE
    if raw.get("plan_method"):
        for figure in figures:
            if figure["key"] == "plan_ns":
                figure["note"] = f"{raw['plan_method']}; outside the timed call, excluded from the figure"
    if peak == "0" and "call_peak_memory_method" not in raw:
        # Measured before the runner counted results kept from before the call (issue 20 item 8):
        # a 0 there may be a gradient the forward computed and the call returned, so it is no fact.
        for figure in figures:
            if figure["key"] == "peak_memory_bytes":
                figure["value"] = None
                figure["note"] = f"{UNRELIABLE_ZERO}. The figure: {figure['note']}"  # what it would mean stays said
    elif raw.get("call_peak_memory_note"):
        for figure in figures:
            if figure["key"] == "peak_memory_bytes":
                figure["note"] = raw["call_peak_memory_note"]
    return figures


@cache
def _bundled_sample_files() -> dict[str, Any]:
    root = resources.files("kernelindex").joinpath("data", "verified")
    found: dict[str, Any] = {}
    if not root.is_dir():
        return found
    for bundle in root.iterdir():
        samples = bundle.joinpath("samples")
        if samples.is_dir():
            for file in samples.iterdir():
                found[file.name.removesuffix(".json")] = file
    return found


def load_samples(samples_digest: str | None) -> dict[str, Any] | None:
    """The raw samples file a run's ``samples_digest`` names, when it is stored here and intact."""
    if not samples_digest:
        return None
    hexdigest = samples_digest.removeprefix("sha256:")
    file = _bundled_sample_files().get(hexdigest)
    if file is None:
        return None
    data = file.read_bytes()
    if hashlib.sha256(data).hexdigest() != hexdigest:
        return None
    return json.loads(data)


def histogram(values: list[int], bins: int = HISTOGRAM_BINS) -> list[dict[str, int]]:
    """Equal-width bins from the fastest to the slowest sample: [{lo_ns, hi_ns, count}]."""
    if not values:
        return []
    low, high = min(values), max(values)
    width = max((high - low) / bins, 1)
    counts = [0] * bins
    for v in values:
        counts[min(int((v - low) / width), bins - 1)] += 1
    return [{"lo_ns": round(low + i * width), "hi_ns": round(low + (i + 1) * width), "count": c}
            for i, c in enumerate(counts)]


def secondary_figures(secondary: dict[str, int]) -> list[dict[str, Any]]:
    """Secondary measurements with human names: never a raw field name on the page."""
    out = []
    for key, value in secondary.items():
        name, note = SECONDARY_NAMES.get(key, (key.removesuffix("_ns").replace("_", " "), ""))
        out.append({"key": key, "name": name, "value": value, "note": note,
                    "unit": "ns" if key.endswith("_ns") else "bytes" if key.endswith("_bytes") else ""})
    return out
