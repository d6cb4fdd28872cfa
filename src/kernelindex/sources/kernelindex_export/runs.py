"""Their benchmark runs (with protocol, environment and measurements) → ours.

Means stay means (metric latency:mean:ns, never ranked with medians); a leaderboard score over a
suite is a score (suite-scoped); failed runs are kept as failed evidence, never ranked."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.domain.manifests import Manifest, ManifestError, build, digest_of
from kernelindex.domain.numbers import NumberError, json_number
from kernelindex.sources.kernelindex_export.operations import RowSkipped

STATUSES = {"passed", "runtime_error", "compile_error"}
SCORE_SCOPE = ("the leaderboard's own score over the problem's benchmark suite, as the source computed it "
               "(seconds); comparable only within one problem, GPU and statistic")


def map_protocol(manifest: dict | None, statistic: str, source_title: str) -> Manifest:
    spec = (manifest or {}).get("spec", {})
    harness = spec.get("harness") or {}
    measurement = spec.get("measurement") or {}
    correctness = spec.get("correctness") or {}
    meta = (manifest or {}).get("metadata", {})
    body = {
        "harness": {"name": harness.get("name") or source_title},
        "timer": f"{measurement.get('timer') or 'not recorded'} (as {source_title}'s harness reports it)",
        "timed_region": "forward",
        "warmup": {},
        "repetitions": {},
        "l2_policy": "not recorded by the source",
        "input_regeneration": "not recorded by the source",
        "statistic": statistic,
        "correctness": {"policy": "asserted", "comparator": correctness.get("comparator")}
        if correctness.get("comparator") else {"policy": "not_asserted"},
        "native": True,
    }
    name = f"{meta.get('name') or harness.get('name') or 'harness'}-{statistic}"
    try:
        title = f"{meta.get('title') or source_title} · {statistic}"
        return build("BenchmarkProtocol", body, {"name": name[:120], "title": title})
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None


def map_environment(manifest: dict | None, product: str) -> Manifest:
    gpu = registry.gpu_for_product(product)
    if gpu is None:
        raise RowSkipped(f"unknown GPU {product!r} (no datasheet entry)")
    software_in = ((manifest or {}).get("spec") or {}).get("software") or {}
    software = {}
    framework = software_in.get("framework") or {}
    if framework.get("name") and framework.get("version"):
        software[framework["name"]] = str(framework["version"])
    software.update({k: str(v) for k, v in (software_in.get("libraries") or {}).items()})
    if software_in.get("cudaToolkit"):
        software["cuda"] = str(software_in["cudaToolkit"])
    hardware = {"vendor": gpu.vendor, "product": product, "architecture": gpu.architecture,
                "form_factor": gpu.form_factor}
    title = f"{gpu.name}" + (" · " + " · ".join(f"{k} {v}" for k, v in sorted(software.items())) if software
                             else " (software versions not recorded by the source)")
    return build("ExecutionEnvironment", {"hardware": hardware, "software": software}, {"title": title})


def _number(value: object, field: str) -> int | float:
    try:
        return json_number(value, field)
    except NumberError as exc:
        raise RowSkipped(str(exc)) from None


def _ns(value: object) -> int | None:
    return None if value is None else int(round(_number(value, "measurement value")))


def run_figures(status: str, measurements: list[dict], statistic: str | None) -> dict:
    """timing (and score) of a run from its measurement rows, raw values kept as the source wrote them."""
    latency = {m["statistic"]: m for m in measurements if m["metric"] == "latency" and m["unit"] == "ns"}
    scores = [m for m in measurements if m["metric"] == "score"]
    raw = {f"{m['metric']}_{m['statistic']}_{m['unit']}": repr(m["value"]) for m in measurements}
    if status != "passed":
        return {"timing": {"raw": raw}}
    if latency.get("mean"):
        timing = {"mean_ns": _ns(latency["mean"]["value"]), "std_ns": _ns((latency.get("std") or {}).get("value")),
                  "min_ns": _ns((latency.get("min") or {}).get("value")),
                  "max_ns": _ns((latency.get("max") or {}).get("value")),
                  "samples": latency["mean"].get("sampleCount"), "raw": raw, "method": "harness-reported mean"}
        return {"timing": {k: v for k, v in timing.items() if v is not None}}
    if len(scores) == 1 and scores[0]["unit"] == "s":
        score = scores[0]
        value = float(_number(score["value"], "score value"))
        return {"timing": {"raw": raw}, "score": {"metric": "score", "statistic": score["statistic"], "unit": "s",
                                                  "value": value, "scope": SCORE_SCOPE}}
    raise RowSkipped(f"a passed run with neither a latency mean nor one score (statistic {statistic!r})")


def map_run(row: dict, refs: dict[str, Manifest], measurements: list[dict], source: str) -> Manifest:
    status = row["status"]
    if status not in STATUSES:
        raise RowSkipped(f"run status {status!r} is not one KernelIndex records")
    run_spec = row["manifest"]["run"]["spec"]
    figures = run_figures(status, measurements, row.get("primaryStatistic"))
    comparator = ((row["manifest"].get("protocol") or {}).get("spec", {}).get("correctness") or {}).get("comparator")
    if status == "passed":
        correctness = {"checked": bool(comparator), "passed": True if comparator else None,
                       "detail": f"checked by the source's harness ({comparator}); not re-checked by KernelIndex"
                       if comparator else "the source records no correctness check"}
    else:
        correctness = {"checked": False, "detail": f"the run failed ({status.replace('_', ' ')}) before its output "
                       "could be checked"}
    logs = ((run_spec.get("evidence") or {}).get("logs") or {}).get("digest")
    body = {
        **{k: digest_of(refs[k]) for k in ("implementation", "workload", "protocol", "environment")},
        "status": status,
        **figures,
        "correctness": {k: v for k, v in correctness.items() if v is not None},
        "observed_at": row["observedAt"],
        "source": {"name": source, "external_id": f"{(run_spec.get('sourceNative') or {}).get('externalId') or 'run'}"
                   f" · {row['runDigest']}"},
    }
    if logs:
        body["artifacts"] = {"logs": logs}
    try:
        return build("BenchmarkRun", body)
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None
