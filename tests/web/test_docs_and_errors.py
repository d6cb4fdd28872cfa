"""Methodology page, helpful 404s, clear 400s."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_docs_explains_the_rules_with_worked_floor_examples(client: TestClient) -> None:
    html = client.get("/docs").text
    for heading in ("Cohorts", "Ranking and ties", "Evidence levels", "Usability", "floor-v1",
                    "Where we differ from the reference pages", "verification runner"):
        assert heading in html
    assert "42.2 µs" in html and "1.40×" in html  # rope worked example
    assert "26.3 µs" in html and "20.6 µs" in html and "1.61 µs" in html


def test_unknown_path_is_a_helpful_404(client: TestClient) -> None:
    response = client.get("/operations/ropee")
    assert response.status_code == 404
    assert 'href="/operations/rope"' in response.text
    assert "text/html" in response.headers["content-type"]


def test_unknown_parameter_is_ignored_by_pages_and_refused_by_the_api(client: TestClient) -> None:
    page = client.get("/docs?colour=red")
    assert page.status_code == 200 and page.headers["link"] == '</docs>; rel="canonical"'
    response = client.get("/api/v1/records?colour=red")
    assert response.status_code == 400
    assert "colour" in response.text
