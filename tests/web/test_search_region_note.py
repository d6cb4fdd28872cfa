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
        rows = [(c, r) for c in answer["exact"] for r in c["rows"]]
        liger = [r for _, r in rows if r["implementation"]["slug"].startswith("liger-kernel-")]
        assert liger and all(r["region_note"] == BACKWARD_WORK_NOTE for r in liger)
        assert any(r["region_note"] is None for _, r in rows)  # the others do only their own work
        cohort = next(c for c, r in rows if r in liger)
        page = client.get("/api/v1" + cohort["url"]).json()
        on_page = {r["run_id"]: r["region_note"] for r in page["ranked"]}
        assert {r["run_id"]: r["region_note"] for r in cohort["rows"]} == on_page  # one policy, one note
        html = client.get("/search", params={"q": "jsd backward"}).text
        assert f'<p class="small row-note">{BACKWARD_WORK_NOTE}</p>' in html
    out = CliRunner().invoke(ki, ["search", "jsd", "backward", "--database", liger_catalog.url],
                             env={"COLUMNS": "200"}).stdout
    words = " ".join(out.split())  # the table's footnote wraps at the table's width, which the data decides
    assert f"† {BACKWARD_WORK_NOTE}" in words and "Liger †" in words
