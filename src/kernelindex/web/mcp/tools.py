"""The MCP tools' answers: each is the JSON body of the REST route named beside it, computed by the
same call (the page table's views, the resolver, the batch and use bodies), or an :class:`ApiProblem`
with the route's code and wording."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kernelindex.domain.manifests import KINDS, MANIFEST_MODELS, ManifestError, digest_of, parse_manifest
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.pages_gpus import gpus_index
from kernelindex.resolve.batch import MAX_BATCH, QueryFailure, answer_query
from kernelindex.web.api.agent_routes import batch_answers, use_body
from kernelindex.web.api.problems import ApiProblem
from kernelindex.web.api.routes import view_json
from kernelindex.web.api.write_routes import changes_body


def utc_now() -> datetime:
    return datetime.now(UTC)


class CatalogTools:
    """Tool bodies over one catalog, with the clock its pages use (the site's, at ``/mcp``)."""

    def __init__(self, catalog: Any, clock: Callable[[], datetime] = utc_now) -> None:
        self.catalog = catalog
        self.clock = clock

    def _view(self, name: str, subject: str | None = None, **query: Any) -> dict[str, Any]:
        return view_json(self.catalog, self.clock(), name, subject, **query)

    def search_catalog(self, query: str) -> dict[str, Any]:  # GET /api/v1/search?q=
        return self._view("search", q=query)

    def resolve_kernel(self, query: str | None, request: dict[str, Any] | None) -> dict[str, Any]:
        """GET /api/v1/search (text) or POST /api/v1/resolve (structured)."""
        if (query is None) == (request is None):
            raise ApiProblem("invalid_request", "Give either query (text) or request (structured), not both.",
                             [{"field": "query", "message": "exactly one of query and request"}])
        if query is not None:
            return self.search_catalog(query)
        outcome = answer_query(self.catalog, request, now=self.clock())
        if isinstance(outcome, QueryFailure):
            raise ApiProblem(outcome.code, outcome.detail, outcome.errors)
        return outcome.to_json()

    def resolve_kernels(self, queries: list[str | dict[str, Any]]) -> dict[str, Any]:  # POST /resolve/batch
        if not 1 <= len(queries) <= MAX_BATCH:
            raise ApiProblem("invalid_request", f"queries: give 1–{MAX_BATCH} queries, not {len(queries)}",
                             [{"field": "queries", "message": f"1–{MAX_BATCH} items"}])
        return batch_answers(self.catalog, READ_CACHE, list(queries), self.clock())

    def get_operation(self, slug: str, workload: str | None, cohort: str | None) -> dict[str, Any]:
        return self._view("operation", slug, workload=workload, cohort=cohort)

    def get_implementation(self, slug: str) -> dict[str, Any]:
        return self._view("implementation", slug)

    def get_run_evidence(self, run_id: str) -> dict[str, Any]:
        return self._view("run", run_id)

    def compare_runs(self, run_ids: list[str]) -> dict[str, Any]:
        return self._view("compare", run=list(run_ids))

    def list_records(self, operation: str | None, gpu: str | None, evidence: str | None, view: str | None,
                     cohort: str | None) -> dict[str, Any]:
        return self._view("records", operation=operation, gpu=gpu, evidence=evidence, view=view, cohort=cohort)

    def list_changes(self, since: str | None, limit: int) -> dict[str, Any]:  # GET /api/v1/changes
        return changes_body(self.catalog, self.clock(), since, limit)

    def list_gpus(self) -> dict[str, Any]:  # GET /api/v1/gpus, every page at once
        items = READ_CACHE.get(self.catalog, ("api", "gpus"), lambda: [g.to_json() for g in gpus_index(self.catalog)])
        return {"items": items, "total": len(items)}

    def recommend_kernel(self, query: str) -> dict[str, Any]:  # GET /api/v1/use?q=
        return use_body(self.catalog, query, self.clock())

    @staticmethod
    def validate_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = parse_manifest(manifest, "manifest")
        except ManifestError as exc:
            return {"valid": False, "kind": manifest.get("kind"), "problems": exc.problems, "digest": None}
        return {"valid": True, "kind": parsed.kind, "problems": [], "digest": digest_of(parsed)}

    @staticmethod
    def get_manifest_schema(kind: str) -> dict[str, Any]:
        if kind not in MANIFEST_MODELS:
            raise ApiProblem("not_found", f"no manifest kind {kind!r}; kinds are {', '.join(KINDS)}")
        return {"kind": kind, "schema": MANIFEST_MODELS[kind].model_json_schema()}
