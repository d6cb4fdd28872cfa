"""Where people look for the API (issue 46): /api/v1, /api and /openapi point to /api/docs instead of an HTML 404."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_api_prefix_points_to_its_reference(client: TestClient) -> None:
    for path in ("/api/v1", "/api"):
        response = client.get(path)
        assert response.status_code == 200, path
        body = response.json()
        assert body["docs"] == "/api/docs" and body["openapi"] == "/api/v1/openapi.json"


def test_openapi_guesses_redirect_to_the_reference(client: TestClient) -> None:
    for path in ("/openapi", "/openapi.json", "/docs/api"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 308 and response.headers["location"] == "/api/docs", path
