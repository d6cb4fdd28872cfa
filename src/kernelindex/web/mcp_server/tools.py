"""The MCP tools' answers: each is the service behind the REST route named beside it, so a tool and
its route answer the same JSON, or the same :class:`Problem`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kernelindex.services import reads
from kernelindex.services.problems import Answer, Problem


def utc_now() -> datetime:
    return datetime.now(UTC)


class CatalogTools:
    """Tool bodies over one catalog, with the clock its pages use (the site's, at ``/mcp``)."""

    def __init__(self, catalog: Any, clock: Callable[[], datetime] = utc_now) -> None:
        self.catalog = catalog
        self.clock = clock

    def page(self, name: str, subject: str | None = None, **query: Any) -> Answer | Problem:
        """The view ``name``'s JSON, as its twin answers it (the page tools of ``page_tools.py``)."""
        return reads.page(self.catalog, self.clock(), name, subject, **query)

    def search_catalog(self, query: str) -> Answer | Problem:  # GET /api/v1/search?q=
        return self.page("search", q=query)

    def resolve_kernel(self, query: str | None, request: dict[str, Any] | None) -> Answer | Problem:
        """GET /api/v1/search (text) or POST /api/v1/resolve (structured)."""
        if (query is None) == (request is None):
            return Problem("invalid_request", "Give either query (text) or request (structured), not both.",
                           ({"field": "query", "message": "exactly one of query and request"},))
        if query is not None:
            return self.search_catalog(query)
        return reads.resolution(self.catalog, self.clock(), request or {})

    def resolve_kernels(self, queries: list[str | dict[str, Any]]) -> Answer | Problem:  # POST /resolve/batch
        return reads.batch(self.catalog, self.clock(), list(queries))

    def get_model_step(self, model: str, gpu: str | None, phase: str | None, batch: int | None, seq: int | None,
                       tp: int | None) -> Answer | Problem:  # GET /api/v1/models/{slug}
        return self.page("model", model, gpu=gpu, phase=phase, batch=batch, seq=seq, tp=tp)

    def compare_runs(self, run_ids: list[str]) -> Answer | Problem:
        return self.page("compare", run=list(run_ids))

    def compare_implementations(self, operation: str, implementations: list[str], gpus: list[str],
                                region: str | None) -> Answer | Problem:  # GET /api/v1/compare?operation=&impl=
        return self.page("compare", operation=operation, impl=list(implementations), gpu=list(gpus), region=region)

    def list_changes(self, since: str | None, limit: int) -> Answer | Problem:  # GET /api/v1/changes
        return reads.changes(self.catalog, self.clock(), since, limit)

    def list_gpus(self) -> Answer:  # GET /api/v1/gpus, every page at once
        items = reads.gpus(self.catalog)
        return {"items": items, "total": len(items)}

    def recommend_kernel(self, query: str) -> Answer | Problem:  # GET /api/v1/use?q=
        return reads.use(self.catalog, self.clock(), query)

    @staticmethod
    def validate_manifest(manifest: dict[str, Any]) -> Answer:
        return reads.manifest_check(manifest)

    @staticmethod
    def get_manifest_schema(kind: str) -> Answer | Problem:
        return reads.manifest_schema(kind)
