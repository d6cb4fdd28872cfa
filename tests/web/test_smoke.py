"""Every operation, implementation and GPU page of the real catalog renders (no 500 anywhere)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operations import operations_index


def test_every_operation_page_renders(client: TestClient, catalog: Catalog) -> None:
    failures = [(o.slug, status) for o in operations_index(catalog)
                if (status := client.get(f"/operations/{o.slug}").status_code) != 200]
    assert not failures


def test_every_implementation_page_renders(client: TestClient) -> None:
    rope = client.get("/operations/rope").text + client.get("/operations/embedding").text
    slugs = {part.split('"', 1)[0] for part in rope.split('href="/implementations/')[1:]}
    assert slugs
    assert all(client.get(f"/implementations/{slug}").status_code == 200 for slug in slugs)


def test_every_gpu_page_renders(client: TestClient) -> None:
    assert all(client.get(f"/gpus/{slug}").status_code == 200 for slug in registry.gpus())
