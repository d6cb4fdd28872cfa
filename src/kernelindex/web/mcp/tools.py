"""The MCP tools' answers: each is the JSON body of the REST route named beside it, built by the
same read-model call, or an :class:`ApiProblem` with the route's code and wording."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelindex.domain.manifests import KINDS, MANIFEST_MODELS, ManifestError, digest_of, parse_manifest
from kernelindex.readmodel.loading import NotFound
from kernelindex.readmodel.operations import BadSelection, operation_page
from kernelindex.readmodel.pages_common import BadParameter
from kernelindex.readmodel.pages_compare import compare_page
from kernelindex.readmodel.pages_gpus import gpus_index
from kernelindex.readmodel.pages_implementations import implementation_page
from kernelindex.readmodel.pages_records import records_page
from kernelindex.readmodel.runs import run_dossier
from kernelindex.resolve.batch import MAX_BATCH, QueryFailure, answer_query
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.resolve.service import search
from kernelindex.web.api.agent_routes import batch_answers, use_body
from kernelindex.web.api.problems import ApiProblem
from kernelindex.web.render import VersionedCache


def read(compute: Callable[[], Any]) -> Any:
    """The read model's errors as the API's problems (same codes as the REST routes)."""
    try:
        return compute()
    except NotFound as exc:
        raise ApiProblem("not_found", str(exc)) from None
    except BadSelection as exc:
        raise ApiProblem("bad_selection", str(exc)) from None
    except BadParameter as exc:
        raise ApiProblem("bad_request", str(exc), [{"field": exc.parameter, "message": exc.message}]) from None


def _failure(outcome: QueryFailure) -> ApiProblem:
    return ApiProblem(outcome.code, outcome.detail, outcome.errors)


class CatalogTools:
    """Tool bodies over one catalog (and the site's answer cache when served at ``/mcp``)."""

    def __init__(self, catalog: Any, cache: VersionedCache | None = None) -> None:
        self.catalog = catalog
        self.cache = cache

    def search_catalog(self, query: str) -> dict[str, Any]:  # GET /api/v1/search?q=
        if len(query) > MAX_QUERY_CHARS:
            raise ApiProblem("bad_request", f"q: String should have at most {MAX_QUERY_CHARS} characters",
                             [{"field": "q", "message": "too long"}])
        return search(self.catalog, query).to_json()

    def resolve_kernel(self, query: str | None, request: dict[str, Any] | None) -> dict[str, Any]:
        """GET /api/v1/search (text) or POST /api/v1/resolve (structured)."""
        if (query is None) == (request is None):
            raise ApiProblem("invalid_request", "Give either query (text) or request (structured), not both.",
                             [{"field": "query", "message": "exactly one of query and request"}])
        if query is not None:
            return self.search_catalog(query)
        outcome = answer_query(self.catalog, request)
        if isinstance(outcome, QueryFailure):
            raise _failure(outcome)
        return outcome.to_json()

    def resolve_kernels(self, queries: list[str | dict[str, Any]]) -> dict[str, Any]:  # POST /resolve/batch
        if not 1 <= len(queries) <= MAX_BATCH:
            raise ApiProblem("invalid_request", f"queries: give 1–{MAX_BATCH} queries, not {len(queries)}",
                             [{"field": "queries", "message": f"1–{MAX_BATCH} items"}])
        return batch_answers(self.catalog, self.cache, list(queries))

    def get_operation(self, slug: str, workload: str | None, cohort: str | None) -> dict[str, Any]:
        return read(lambda: operation_page(self.catalog, slug, workload=workload, cohort=cohort).to_json())

    def get_implementation(self, slug: str) -> dict[str, Any]:
        return read(lambda: implementation_page(self.catalog, slug).to_json())

    def get_run_evidence(self, run_id: str) -> dict[str, Any]:
        return read(lambda: run_dossier(self.catalog, run_id).to_json())

    def compare_runs(self, run_ids: list[str]) -> dict[str, Any]:
        if not 2 <= len(run_ids) <= 8:
            raise ApiProblem("bad_request", f"run: give 2–8 run ids, not {len(run_ids)}",
                             [{"field": "run", "message": "2–8 run ids"}])
        return read(lambda: compare_page(self.catalog, list(run_ids)).to_json())

    def list_records(self, operation: str | None, gpu: str | None, evidence: str | None, view: str | None,
                     cohort: str | None) -> dict[str, Any]:
        return read(lambda: records_page(self.catalog, operation=operation, gpu=gpu, evidence=evidence, view=view,
                                         cohort=cohort).to_json())

    def list_gpus(self) -> dict[str, Any]:
        items = [g.to_json() for g in read(lambda: gpus_index(self.catalog))]
        return {"items": items, "total": len(items)}

    def recommend_kernel(self, query: str) -> dict[str, Any]:  # GET /api/v1/use?q=
        return use_body(self.catalog, self.cache, query)

    @staticmethod
    def validate_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = parse_manifest(manifest, "manifest")
        except ManifestError as exc:
            return {"valid": False, "kind": manifest.get("kind"), "problems": exc.problems, "digest": None}
        return {"valid": True, "kind": parsed.kind, "problems": [], "digest": digest_of(parsed)}  # type: ignore[attr-defined]

    @staticmethod
    def get_manifest_schema(kind: str) -> dict[str, Any]:
        if kind not in MANIFEST_MODELS:
            raise ApiProblem("not_found", f"no manifest kind {kind!r}; kinds are {', '.join(KINDS)}")
        return {"kind": kind, "schema": MANIFEST_MODELS[kind].model_json_schema()}
