"""The OpenAPI schema is as strict as the server (issue 8, defect 14), and numbers in query and path
parameters are read by the domain's one rule.

Schemathesis generates schema-valid GET requests (boundary values from the coverage phase, then
random ones) against the app over the bundled catalog: none may be refused as malformed (400/422).
The one exception is a value whose *shape* is right but which names nothing the server issued: a
foreign cursor (``bad_cursor``) or a workload/cohort key of another page (``bad_selection``).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from kernelindex.web.api.openapi import _NoCatalog

NAMES_NOTHING = {"bad_cursor", "bad_selection"}  # well-formed, but not issued for this page
# Values checked against what the catalog holds, which no schema can list: a /records filter naming an
# operation or GPU with no record; an operation page's ?gpu=, which must name a GPU of the datasheet table
# (aliases are free text: "a100", "NVIDIA A100-SXM4-80GB"); /use's text, which must name one operation; a
# numbered page past the last of a page's list (how many pages there are depends on the catalog); compare's two
# forms (run=… twice or more, or operation= with impl=…), which a schema of independent parameters cannot state.
CATALOG_FILTERS = {"/api/v1/records": {"operation", "gpu"}, "/api/v1/operations/{slug}": {"gpu"},
                   "/api/v1/challenges": {"page"}, "/api/v1/gpus/{slug}": {"page"},
                   "/api/v1/compare": {"run", "impl", "gpu", "operation", "region"}}
CATALOG_TEXT = {"/api/v1/use"}


def _names_nothing(path: str, problem: dict[str, Any]) -> bool:
    fields = {error.get("field") for error in problem.get("errors", [])}
    return (problem.get("code") in NAMES_NOTHING or path in CATALOG_TEXT
            or bool(fields) and fields <= CATALOG_FILTERS.get(path, set()))


class _Proxy:
    def __init__(self) -> None:
        from kernelindex.web.app import create_app

        self.target: Any = create_app(_NoCatalog())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.target(scope, receive, send)


PROXY = _Proxy()
# The export streams the whole catalog (~80,000 runs) and takes no parameters: test_api streams it once.
schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", PROXY).include(method="GET").exclude(
    path="/api/v1/export")


@pytest.fixture(autouse=True)
def _real_app(api_app: Any) -> None:
    PROXY.target = api_app


@pytest.mark.filterwarnings("ignore")
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_schema_valid_parameters_are_never_refused_as_malformed(case: schemathesis.Case) -> None:
    if case.meta is not None and not case.meta.generation.mode.is_positive:
        return  # only requests the schema calls valid
    response = case.call()
    if response.status_code in (400, 422):
        assert _names_nothing(case.path, response.json()), \
            f"{case.method} {case.formatted_path} {case.query}: {response.text[:300]}"


@pytest.mark.parametrize("query", ["limit=1_0", "limit=%2010", "limit=10%20", "limit=010", "limit=%2B10"])
def test_lenient_integers_in_the_query_are_refused(api: TestClient, query: str) -> None:
    answer = api.get(f"/api/v1/operations?{query}")
    assert answer.status_code == 400, answer.text
    assert "limit" in answer.json()["detail"] and "not an integer" in answer.json()["detail"]
    assert api.get("/api/v1/operations?limit=10").status_code == 200


def test_compare_declares_what_each_run_is(api: TestClient, api_app: Any) -> None:
    declared = {p["name"]: p["schema"] for p in api_app.openapi()["paths"]["/api/v1/compare"]["get"]["parameters"]}
    run, impl = declared["run"], declared["impl"]  # none is required: runs, or an operation's implementations
    assert run["items"]["pattern"] == "^[0-9a-f]{6,64}$" and run["maxItems"] == 8
    assert impl["items"]["pattern"].startswith("^[a-z0-9]") and impl["maxItems"] == 2
    assert declared["gpu"]["maxItems"] == 2
    assert api.get("/api/v1/compare?run=&run=").status_code == 400  # invalid by the schema too, now


def test_a_spaced_page_number_is_refused(api: TestClient) -> None:
    answer = api.get("/api/v1/gpus/h100-sxm?page=%202")
    assert answer.status_code == 400 and "page" in answer.json()["detail"]


@pytest.mark.parametrize("value", ["2_048", " 2048", "2048", 2048.0])
def test_a_structured_axis_is_a_json_integer(api: TestClient, value: object) -> None:
    answer = api.post("/api/v1/resolve", json={"operation": "rope", "axes": {"seq": value}})
    assert answer.status_code == 422 and "axes.seq" in answer.text, answer.text
    assert api.post("/api/v1/resolve", json={"operation": "rope", "axes": {"seq": 2048}}).status_code == 200


def test_an_axis_in_query_text_uses_the_integer_rule(api: TestClient) -> None:
    issues = api.get("/api/v1/search", params={"q": "rope seq=2_048"}).json()["query"]["issues"]
    assert [i["code"] for i in issues] == ["BAD_VALUE"] and "not '2_048'" in issues[0]["message"]


def test_an_unknown_gpu_on_an_operation_page_is_a_named_parameter_error(api: TestClient) -> None:
    """The schema admits any text for ?gpu= (aliases are free); the server names the field, so the carve-out
    above accepts exactly this refusal and no other (Schemathesis found gpu='0')."""
    answer = api.get("/api/v1/operations/rope", params={"gpu": "0", "format": "csv", "cohort": "__main__"})
    assert answer.status_code == 400 and "no GPU '0'" in answer.json()["detail"]
    assert _names_nothing("/api/v1/operations/{slug}", answer.json())
    assert not _names_nothing("/api/v1/operations/{slug}", {"errors": [{"field": "limit"}]})
