"""Search rows carry the operation page's row note when a run's region does another region's work
(issue 22): a backward of an implementation whose forward computes the gradient only scales it, and
the row says so (and to compare forward+backward) on the search page, in its JSON and in ``ki search``."""

from __future__ import annotations

from fastapi.testclient import TestClient
from typer.testing import CliRunner
from web_helpers import make_app

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.readmodel.region_work import BACKWARD_WORK_NOTE


def test_search_rows_say_a_backward_only_scales_the_gradient_as_the_operation_page_does(
        liger_catalog: Catalog) -> None:
    with TestClient(make_app(liger_catalog)) as client:
        answer = client.get("/api/v1/search", params={"q": "jsd backward"}).json()
        # Issue 43 item 5: Liger's backward is shown beside the ranking, never in it, on every door.
        rows = [(c, r) for c in answer["exact"] for r in c["rows"]]
        assert rows and not any(r["implementation"]["slug"].startswith("liger-kernel-") for _, r in rows)
        assert all(r["region_note"] is None for _, r in rows)  # the ranked rows do only their own work
        cohort = next(c for c in answer["exact"] if any(h["code"] == "OTHER_REGIONS_WORK" for h in c["not_ranked"]))
        aside = {h["run_id"] for h in cohort["not_ranked"] if h["code"] == "OTHER_REGIONS_WORK"}
        page = client.get("/api/v1" + cohort["url"]).json()
        shown = {r["run_id"]: r for r in page["ranked"]}
        assert all(shown[run]["rank_label"] == "—" and shown[run]["region_note"] == BACKWARD_WORK_NOTE for run in aside)
        assert {r["run_id"] for r in cohort["rows"]} == {d for d, r in shown.items() if r["rank"]}  # one policy
        html = client.get("/search", params={"q": "jsd backward"}).text
        assert "Shown beside the ranking, not in it: this backward only scales" in html
    out = CliRunner().invoke(ki, ["search", "jsd", "backward", "--database", liger_catalog.url],
                             env={"COLUMNS": "200"}).stdout
    assert "Shown beside the ranking, not in it" in " ".join(out.split())
