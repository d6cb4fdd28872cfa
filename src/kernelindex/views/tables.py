"""The rows of a view's CSV download (``?format=csv`` on its JSON twin): a rendering of the view's
data, one row per run, units in the column names (``median_ns``, ``vs_first_ratio``,
``observed_at_utc``). ``web/view_routes.py`` writes them out with each row's source notice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelindex import urls


@dataclass(frozen=True)
class CsvTable:
    """A view's CSV: its columns, its rows from the view's data, and the file's name (``{slug}`` is the
    view's subject)."""

    columns: list[str]
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]]
    filename: str


RUN_COLUMNS = ["run_id", "rank", "rank_label", "within_noise", "implementation", "implementation_slug", "project",
               "language", "license", "usable", "install_command", "time_ns", "statistic", "median_ns",
               "p20_ns", "p80_ns",
               "vs_first_ratio", "evidence", "observed_at_utc", "stale", "run_url"]
COHORT_COLUMNS = ["operation", "workload_key", "workload", "cohort_key", "cohort", "gpu", "timed_region"]


def _run_columns(row: dict[str, Any]) -> dict[str, Any]:
    impl = row["implementation"]
    return {
        "run_id": row["run_id"], "rank": row.get("rank"), "rank_label": row.get("rank_label"),
        "within_noise": row.get("within_noise"), "implementation": impl["title"], "implementation_slug": impl["slug"],
        "project": impl.get("project"), "language": impl["language"], "license": impl.get("license"),
        "usable": impl["usable"], "install_command": impl.get("install_command"),
        "time_ns": row.get("time_ns", row["median_ns"]), "statistic": row.get("statistic", ""),
        "median_ns": row["median_ns"],
        "p20_ns": row.get("p20_ns"), "p80_ns": row.get("p80_ns"), "vs_first_ratio": row.get("vs_first"),
        "evidence": row["evidence"], "observed_at_utc": row["observed_at"], "stale": row.get("stale"),
        "run_url": urls.run(row["run_id"]), "source": row.get("source", ""),
    }


def operation_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The operation page's ranked table (the selected cohort)."""
    line = page.get("cohort_line") or {}
    selected: dict[str, Any] = next((c for c in page["cohorts"] if c["selected"]), {})
    workload: dict[str, Any] = next((w for w in page["workloads"] if w["selected"]), {})
    cohort = {"operation": page["slug"], "workload_key": page.get("selected_workload"),
              "workload": workload.get("label"), "cohort_key": page.get("selected_cohort"),
              "cohort": selected.get("label"), "gpu": line.get("gpu"), "timed_region": selected.get("mode")}
    return [{**cohort, **_run_columns(row)} for row in page["ranked"]]


def resolution_rows(resolution: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ranked row of the exact cohorts, then of the other-protocol cohorts (each in its own cohort)."""
    rows = []
    for match, cohorts in (("exact", resolution["exact"]), ("other_protocol", resolution["other_protocols"])):
        for c in cohorts:
            axes = " · ".join([f"{k} = {v}" for k, v in c["workload"]["axes"].items()]
                              + sorted(set(c["workload"]["dtypes"].values())))
            cohort = {"match": match, "operation": (resolution.get("operation") or {}).get("slug"),
                      "workload_key": c["workload"]["ref"], "workload": axes, "cohort_key": c["cohort_key"],
                      "cohort": c["label"], "gpu": c["gpu"]["label"], "timed_region": c["mode"],
                      "ranked_statistic": c["ranked_statistic"]}
            rows += [{**cohort, **_run_columns(r)} for r in c.get("rows", [])]
    return rows


# ranked_statistic: what median_ns holds in that cohort (a source's own statistic may be a mean)
RESOLUTION_COLUMNS = ["match", *COHORT_COLUMNS, "ranked_statistic", *RUN_COLUMNS]
OPERATION_COLUMNS = [*COHORT_COLUMNS, *RUN_COLUMNS]
RECORD_COLUMNS = ["operation", "workload_key", "workload", "cohort_key", "cohort", "gpu", "timed_region",
                  "eligible_runs", "event", "event_at_utc", "margin_ratio", "run_id", "implementation",
                  "implementation_slug", "project", "language", "usable", "median_ns", "evidence", "observed_at_utc",
                  "stale", "run_url"]


def _holder(ref: dict[str, Any] | None) -> dict[str, Any]:
    if not ref:
        return {}
    return {"run_id": ref["run_id"], "implementation": ref["implementation"],
            "implementation_slug": ref["implementation_slug"], "project": ref["project"],
            "language": ref["language"], "usable": ref["usable"], "median_ns": ref["median_ns"],
            "evidence": ref["evidence"], "observed_at_utc": ref["observed_at"], "stale": ref["stale"],
            "run_url": urls.run(ref["run_id"]), "source": ref.get("source", "")}


def records_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger: one row per cohort and its current holder, or (history) one row per record event."""
    if page.get("view") == "history":
        return [{"operation": e["operation"], "workload": e["workload_label"], "cohort_key": e["cohort"],
                 "cohort": e["cohort_label"], "event": e["event"]["kind"], "event_at_utc": e["event"]["at"],
                 "margin_ratio": e["event"]["margin"], **_holder(e["event"]["holder"])}
                for e in page["events"] if e["event"]["holder"]]
    return [_holding(c) for c in page["cohorts"] if c["leader"]]


def _holding(c: dict[str, Any]) -> dict[str, Any]:
    """A cohort summary (records, GPU and challenges pages) and its current holder."""
    return {"operation": c["operation"], "workload_key": c["workload"], "workload": c["workload_label"],
            "cohort_key": c["key"], "cohort": c["label"], "gpu": c["gpu_name"], "timed_region": c["mode"],
            "eligible_runs": c["eligible_runs"], "event": "current", "margin_ratio": c["margin_vs_second"],
            **_holder(c["leader"])}


def gpu_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The GPU page's records: the cohorts measured on it (this page of them) and their holders."""
    return [_holding(c) for c in page["records"]]


CHALLENGE_COLUMNS = ["section", *RECORD_COLUMNS[:7], "missing_gpus", "measured_on", "ask_urls", *RECORD_COLUMNS[7:]]


def challenge_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """This page of the challenges, in the page's order: an unmeasured workload (the GPUs it lacks, where
    it was measured, the links that ask for it), then the cohorts of each cohort section and their holders."""
    rows = [{"section": "unmeasured", "operation": gaps["operation"], "workload_key": cell["workload"],
             "workload": cell["workload_label"], "missing_gpus": " ".join(cell["missing_gpus"]),
             "measured_on": " ".join(cell["measured_on"]), "ask_urls": " ".join(a["url"] for a in cell["asks"])}
            for gaps in page["unmeasured"] for cell in gaps["cells"]]
    for section in page["sections"][1:]:
        rows += [{"section": section["name"], **_holding(c)} for c in page[section["name"]]]
    return rows


IMPLEMENTATION_COLUMNS = ["implementation_slug", "implementation", "run_id", "version", "workload_key", "workload",
                          "cohort_key", "cohort", "status", "eligible", "rank", "cohort_size", "median_ns",
                          "score_s", "evidence", "run_url"]


def implementation_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The implementation's runs, per workload and cohort (a leaderboard score in ``score_s``)."""
    return [{"implementation_slug": page["slug"], "implementation": page["title"], "run_id": r["run_id"],
             "version": r["version"], "workload_key": r["workload"], "workload": r["workload_label"],
             "cohort_key": r["cohort"], "cohort": r["cohort_label"], "status": r["status"], "eligible": r["eligible"],
             "rank": r["rank"], "cohort_size": r["cohort_size"], "median_ns": r["median_ns"], "score_s": r["score_s"],
             "evidence": r["evidence"], "run_url": r["url"], "source": r["source"]} for r in page["runs"]]


COMPARE_COLUMNS = ["run_id", "operation", "workload_key", "workload", "cohort_key", "cohort", "gpu", "timed_region",
                   "harness", "status", "eligible", "rank", "within_noise", "implementation", "implementation_slug",
                   "project", "language", "license", "install_command", "time_ns", "statistic", "median_ns", "p20_ns",
                   "p80_ns", "vs_fastest_ratio", "floor_ns", "floor_ratio", "attainable_floor_ns",
                   "attainable_floor_ratio", "evidence", "observed_at_utc", "stale", "run_url",
                   # a sweep's rows (compare by implementation) add these
                   "series", "version", "timer", "protocol", "note"]


def sweep_rows(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per workload and series of a sweep: its cell's figure, what timed it, its multiple of the row's
    fastest when the row was timed alike, and why there is no figure when there is none."""
    rows = []
    for row in sweep["rows"]:
        for cell in row["cells"]:
            series, ref = sweep["series"][cell["series"]], cell.get("run") or {}
            rows.append({"operation": sweep["operation"], "workload_key": row["workload"],
                         "workload": row["workload_label"], "timed_region": sweep["region"],
                         "series": series["label"], "implementation": series["implementation"],
                         "implementation_slug": series["implementation_slug"], "gpu": series["gpu_name"],
                         "version": cell["version"], "run_id": ref.get("run_id"), "cohort_key": cell["cohort"],
                         "cohort": cell["cohort_label"], "rank": cell["rank"], "time_ns": cell["time_ns"],
                         "statistic": cell["statistic"], "median_ns": cell["time_ns"], "timer": cell["timer"],
                         "protocol": cell["protocol"], "evidence": cell["evidence"],
                         "vs_fastest_ratio": cell["multiple"], "observed_at_utc": ref.get("observed_at"),
                         "stale": ref.get("stale"), "run_url": cell["url"], "note": cell["note"],
                         "source": ref.get("source", "")})
    return rows


def compare_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The compared runs side by side, one row each, with its multiple of the fastest; a sweep: one row per
    workload and series (implementation on a GPU), with what timed it."""
    if page.get("sweep"):
        return sweep_rows(page["sweep"])
    rows = []
    for r in page["runs"]:
        ref = r["run"]
        rows.append({"run_id": ref["run_id"], "operation": r["operation"], "workload_key": r["workload"],
                     "workload": r["workload_label"], "cohort_key": r["cohort"], "cohort": r["cohort_label"],
                     "gpu": r["gpu_name"], "timed_region": r["timed_region"], "harness": r["harness"],
                     "status": r["status"], "eligible": r["eligible"], "rank": r["rank"],
                     "within_noise": r["within_noise"], "implementation": ref["implementation"],
                     "implementation_slug": ref["implementation_slug"], "project": ref["project"],
                     "language": ref["language"], "license": r["license"], "install_command": r["install_command"],
                     "median_ns": ref["median_ns"], "p20_ns": r["p20_ns"], "p80_ns": r["p80_ns"],
                     "time_ns": ref.get("time_ns"), "statistic": ref.get("statistic"),
                     "vs_fastest_ratio": page["multiples"].get(ref["run_id"]), "floor_ns": r["floor_ns"],
                     "floor_ratio": r["floor_ratio"], "attainable_floor_ns": r["attainable_floor_ns"],
                     "attainable_floor_ratio": r["attainable_floor_ratio"], "evidence": ref["evidence"],
                     "observed_at_utc": ref["observed_at"], "stale": ref["stale"], "run_url": r["url"],
                     "source": ref["source"]})
    return rows


OPERATION_CSV = CsvTable(OPERATION_COLUMNS, operation_rows, "{slug}-ranked.csv")
RECORDS_CSV = CsvTable(RECORD_COLUMNS, records_rows, "kernelindex-records.csv")  # the whole ledger: not paginated
SEARCH_CSV = CsvTable(RESOLUTION_COLUMNS, resolution_rows, "kernelindex-search.csv")
IMPLEMENTATION_CSV = CsvTable(IMPLEMENTATION_COLUMNS, implementation_rows, "{slug}-runs.csv")
MODEL_COLUMNS = ["model", "gpu", "phase", "batch", "seq", "tp", "call", "kind", "count", "shape", "status", "operation",
                 "workload_key", "workload", "implementation", "implementation_slug", "usable", "install_command",
                 "evidence", "statistic", "figure_ns", "floor_ns", "ratio", "in_estimate", "step_ns", "step_floor_ns",
                 "gap_ns", "run_id", "run_url", "ask_url"]


def model_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """A model's step: one row per kernel call, with its figure on the GPU, its floor and where it came from."""
    step = page["step"]
    head = {"model": page["model"]["slug"], "gpu": page["gpu"]["slug"], "phase": step["phase"],
            "batch": step["batch"], "seq": step["seq"], "tp": step["tp"]}
    rows = []
    for c in page["calls"]:
        answer, workload = c.get("answer") or {}, c.get("workload") or {}
        impl = answer.get("implementation") or {}
        rows.append({**head, "call": c["name"], "kind": c["kind"], "count": c["count"], "shape": c["shape_label"],
                     "status": c["status"], "operation": (c.get("operation") or {}).get("slug"),
                     "workload_key": workload.get("key"), "workload": workload.get("label"),
                     "implementation": impl.get("title"), "implementation_slug": impl.get("slug"),
                     "usable": impl.get("usable"), "install_command": answer.get("install"),
                     "evidence": answer.get("evidence"), "statistic": c.get("statistic"),
                     "figure_ns": c.get("figure_ns"), "floor_ns": c.get("floor_ns"), "ratio": c.get("ratio"),
                     "in_estimate": c.get("in_estimate"), "step_ns": c.get("step_ns"),
                     "step_floor_ns": c.get("step_floor_ns"), "gap_ns": c.get("gap_ns"),
                     "run_id": answer.get("run_id"), "run_url": answer.get("run_url"), "ask_url": c.get("ask_url"),
                     "source": c.get("source", "")})
    return rows


MODEL_CSV = CsvTable(MODEL_COLUMNS, model_rows, "{slug}-step.csv")
MODELS_COLUMNS = ["model", "title", "model_type", "layers", "hidden_size", "heads", "kv_heads", "experts", "top_k",
                  "license", "config_url", "url"]


def models_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The models list: one row per model with the numbers its page maps from, and where they come from."""
    return [{"model": m["slug"], "title": m["title"], "model_type": m["config"]["model_type"],
             "layers": m["config"]["num_hidden_layers"], "hidden_size": m["config"]["hidden_size"],
             "heads": m["config"]["num_attention_heads"], "kv_heads": m["config"]["num_key_value_heads"],
             "experts": m.get("experts"), "top_k": m.get("top_k"), "license": m["license"]["name"],
             "config_url": m["source"]["url"], "url": m["url"]} for m in page["models"]]


MODELS_CSV = CsvTable(MODELS_COLUMNS, models_rows, "kernelindex-models.csv")
REPRODUCTION_COLUMNS = ["row", "gpu", "reported_figures", "remeasured", "median_ratio", "within_10", "within_2x",
                        "not_reproduced", "run_id", "operation", "implementation", "reported_ns", "reproduced_ns",
                        "ratio", "verdict", "version", "twins", "differences", "explanation", "run_url"]


def reproduction_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The page's two tables: one ``gpu`` row per GPU product (its counts), then one ``pair`` row per re-measured
    figure (reported, reproduced, Y/X, the verdict and the differences)."""
    gpus = [{"row": "gpu", "gpu": g["gpu"], "reported_figures": g["reported"], "remeasured": g["remeasured"],
             "median_ratio": g["median_ratio"], "within_10": g["within_10"], "within_2x": g["within_2x"],
             "not_reproduced": g["not_reproduced"], "source": page["source"]} for g in page["gpus"]]
    return gpus + [{"row": "pair", "run_id": r["run_id"], "operation": r["operation"],
                    "implementation": r["implementation"], "gpu": r["gpu"], "reported_ns": r["reported_ns"],
                    "reproduced_ns": r["reproduced_ns"], "ratio": r["ratio"], "verdict": r["verdict"],
                    "version": r["version"], "twins": " ".join(r["twins"]), "differences": "; ".join(r["differences"]),
                    "explanation": r["explanation"], "run_url": r["url"], "source": page["source"]}
                   for r in page["pairs"]]


GPU_CSV = CsvTable(RECORD_COLUMNS, gpu_rows, "{slug}-records.csv")  # this page of the records (?page=)
CHALLENGES_CSV = CsvTable(CHALLENGE_COLUMNS, challenge_rows, "kernelindex-challenges.csv")  # this page (?page=)
COMPARE_CSV = CsvTable(COMPARE_COLUMNS, compare_rows, "kernelindex-compare.csv")
REPRODUCTION_CSV = CsvTable(REPRODUCTION_COLUMNS, reproduction_rows, "{slug}-reproduction.csv")
