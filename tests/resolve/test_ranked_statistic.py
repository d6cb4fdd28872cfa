"""A search answer says what each cohort ranks: our runner's cohorts rank the median stream time (v4) or device
time (v3), a source's own cohorts the statistic its harness reported (a mean for KernelBench, FlashInfer-Bench's …).
Side by side in the compatible table, "1.47 ms" of upstream CUDA-event time and "370 µs" of our device time must not
read as one statistic."""

from __future__ import annotations

from datetime import datetime

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app
from kernelindex.resolve.service import search
from kernelindex.views.tables import resolution_rows
from kernelindex.web.app import create_app

QUERY = "rope seq=2048 hidden=8192 bf16 h200"


def test_each_cohort_says_what_it_ranks(catalog: Catalog, now: datetime) -> None:
    answer = search(catalog, QUERY, now=now).to_json()
    exact = answer["exact"]
    assert exact and {c["ranked_statistic"] for c in exact} <= {"median stream time", "median device time",
                                                                 "median CUDA-event time"}
    assert any(c["ranked_statistic"] == "median stream time" for c in exact)  # rope's H200 runs are v4 now
    reported = [c for c in answer["compatible"]["shown"] if c["protocol"] == "source-native"]
    assert reported and all(c["ranked_statistic"].endswith(", as its source timed it") for c in reported)
    assert {r["ranked_statistic"] for r in resolution_rows(answer)} == {c["ranked_statistic"] for c in exact}


def test_pages_and_the_cli_say_it_too(catalog: Catalog) -> None:
    with TestClient(create_app(catalog)) as client:
        html = client.get("/search", params={"q": QUERY}).text
    assert "ranks the median stream time" in html and ", as its source timed it" in html
    result = CliRunner().invoke(app, ["search", QUERY, "--database", catalog.url], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "ranks the median stream time" in " ".join(result.stdout.split())
