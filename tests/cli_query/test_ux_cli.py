"""What a newcomer meets in the terminal: partial answers exit 1, one GPU alias table, ``show``
shortcuts and suggestions, records paging, quiet closed pipes, help without ``<bool>`` labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.loading import load_operation

runner = CliRunner()


def _ki(catalog: Catalog, *args: str) -> Any:
    return runner.invoke(ki, [*args, "--database", catalog.url], env={"COLUMNS": "160"})


def test_ignored_term_is_partial_prints_the_answer_and_exits_1(catalog: Catalog) -> None:
    result = _ki(catalog, "search", "rope seq=2048 hidden=8192 a100 zzqx", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["status"] == "partial" and data["answer_status"] == "exact"
    assert data["exact"][0]["rows"][0]["time_ns"] == 59184  # Liger's two replicates summarised
    human = _ki(catalog, "resolve", "rope seq=2048 hidden=8192 a100 zzqx")
    assert human.exit_code == 1 and "59.18 µs" in human.stdout and "zzqx" in human.stdout
    assert "ignored" in human.output


def test_unknown_operation_and_unreadable_shorthand_exit_1(catalog: Catalog) -> None:
    assert _ki(catalog, "search", "notanoperationatall").exit_code == 1
    assert _ki(catalog, "resolve", "rope", "seq=3k").exit_code == 1


def test_whole_query_understood_exits_0_with_status_exact(catalog: Catalog) -> None:
    result = _ki(catalog, "search", "RoPE, seq 2048, hidden 8192, on A100", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "exact"


def test_empty_resolve_is_a_usage_error_like_no_argument(catalog: Catalog) -> None:
    assert _ki(catalog, "resolve", "").exit_code == _ki(catalog, "resolve").exit_code == 2


def test_help_says_what_exit_1_means() -> None:
    result = runner.invoke(ki, ["resolve", "--help"], env={"COLUMNS": "160"})
    assert "partial" in result.stdout and "1" in result.stdout


def test_records_and_show_gpu_accept_what_search_accepts(catalog: Catalog) -> None:
    records = _ki(catalog, "records", "--gpu", "a100", "--json")
    assert records.exit_code == 0, records.output
    assert {c["gpu"] for c in json.loads(records.stdout)["cohorts"]} == {"a100-80gb"}
    shown = _ki(catalog, "show", "gpu", "a100", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["gpu"]["slug"] == "a100-80gb"


def test_show_operation_is_assumed_and_implementation_suggests(catalog: Catalog) -> None:
    assert _ki(catalog, "show", "rope").stdout == _ki(catalog, "show", "operation", "rope").stdout
    liger = _ki(catalog, "show", "implementation", "liger")
    assert liger.exit_code == 1 and "did you mean" in liger.output and "liger-kernel-rope" in liger.output


def test_records_prints_a_page_with_a_more_hint(catalog: Catalog) -> None:
    out = _ki(catalog, "records", "--limit", "5").stdout
    assert "more; narrow with --operation/--gpu" in out
    assert out.count(" µs") + out.count(" ms") <= 5 + 1
    everything = _ki(catalog, "records", "--limit", "0").stdout
    assert "more; narrow" not in everything


def test_help_has_no_bool_labels() -> None:
    for command in ([], ["search"], ["records"], ["show"], ["import"]):
        out = runner.invoke(ki, [*command, "--help"], env={"COLUMNS": "160"}).stdout
        assert "<bool>" not in out and "BOOLEAN" not in out, command


@pytest.mark.parametrize("args", [["records", "--json"], ["search", "rope", "seq", "2048"]])
def test_closed_pipe_ends_quietly_with_0(catalog: Catalog, args: list[str]) -> None:
    """`ki … | head -1`: the reader is gone before ki writes (JSON via typer, tables via rich)."""
    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", *args, "--database", catalog.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and stderr == ""


def _replicate_of(catalog: Catalog, run_id: str) -> str:
    """The other measurement of the same implementation that a ranked row stands for (Liger's second sweep)."""
    data = load_operation(catalog, "rope")
    for cohort in cohorts_of(data).values():
        for lead, others in cohort.replicates.items():
            if cohort.run(lead).run_id == run_id:
                return cohort.run(others[0]).run_id
    raise AssertionError(f"run {run_id} stands for no replicate")


def test_compare_two_runs_of_one_revision_says_so_once(catalog: Catalog) -> None:
    found = json.loads(_ki(catalog, "search", "rope seq=2048 hidden=8192 a100 mode:forward", "--json").stdout)
    rows = found["exact"][0]["rows"]
    assert [r["implementation"]["title"] for r in rows[:2]] == ["Liger", "Transformers"]  # one row per implementation
    out = _ki(catalog, "compare", rows[0]["run_id"], _replicate_of(catalog, rows[0]["run_id"])).stdout
    assert "Two runs of the same revision of Liger: 58.9 µs vs 59.5 µs, within noise." in out
    assert "Liger is faster" not in out and "(" + rows[0]["run_id"] + ") is faster" not in out
    backward = json.loads(_ki(catalog, "search", "rope seq=2048 hidden=8192 a100 mode:backward", "--json").stdout)
    other = _ki(catalog, "compare", rows[0]["run_id"], backward["exact"][0]["rows"][0]["run_id"]).stdout
    sentences = [line for line in other.splitlines() if "no winner is declared" in line]
    assert len(sentences) == 1, other


def test_record_margin_is_against_a_different_implementation(catalog: Catalog) -> None:
    records = json.loads(_ki(catalog, "records", "--operation", "rope", "--json").stdout)
    # The rows' figures are the medians of Liger's two sweeps and of the baseline's (issue 43 item 6).
    cohort = next(c for c in records["cohorts"] if c["leader"]["median_ns"] == 59184)
    assert cohort["second"]["implementation"] == "Transformers" and cohort["leader"]["statistic"] == "median"
    assert round(cohort["margin_vs_second"], 2) == 8.73


def test_usage_errors_through_the_real_entry_point_exit_2_without_a_traceback() -> None:
    result = subprocess.run([sys.executable, "-m", "kernelindex.cli", "show"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "Missing argument" in result.stderr


def test_ranking_words_are_understood_and_change_nothing(catalog: Catalog) -> None:
    """Issue 22 item 4: "fastest rmsnorm backward h200" is an exact query, not a partial one."""
    plain = _ki(catalog, "search", "rmsnorm backward h200", "--json")
    for word in ("fastest", "best", "quickest"):
        ranked = _ki(catalog, "search", f"{word} rmsnorm backward h200", "--json")
        assert ranked.exit_code == 0, ranked.output
        data = json.loads(ranked.stdout)
        assert data.get("status") != "partial" and data["query"]["issues"] == []
        assert [t["kind"] for t in data["query"]["tokens"]][0] == "ranking"
        assert data["exact"] == json.loads(plain.stdout)["exact"]


def test_a_partial_answer_says_what_was_ignored_and_why(catalog: Catalog) -> None:
    data = json.loads(_ki(catalog, "search", "fastest rmsnorm h200 zzqx", "--json").stdout)
    assert data["status"] == "partial"
    assert data["message"].startswith("Partly understood, ignored: 'zzqx' is not an operation")
    assert "note beside" not in data["message"] and "fastest" not in data["message"].split(".")[0]


def test_a_malformed_run_id_is_a_usage_error_everywhere_and_an_unknown_one_is_not_found(catalog: Catalog) -> None:
    """Issue 22 item 7: `show` and `compare` agree — 2 for an id that cannot be one, 1 for one that names no run."""
    assert _ki(catalog, "show", "run", "zzz").exit_code == 2
    assert _ki(catalog, "compare", "zzz", "yyy").exit_code == 2
    assert _ki(catalog, "show", "run", "0123456789abcdef").exit_code == 1
    assert _ki(catalog, "compare", "0123456789abcdef", "0123456789abcdee").exit_code == 1


def test_show_run_says_the_source_recorded_no_time_zone(catalog: Catalog) -> None:
    found = json.loads(_ki(catalog, "search", "rope seq=2048 hidden=8192 a100", "--json").stdout)
    run_id = found["exact"][0]["rows"][0]["run_id"]
    shown = _ki(catalog, "show", "run", run_id).stdout
    assert "time zone not recorded by the source" in shown and "UTC" not in shown.split("observed")[1][:40]
