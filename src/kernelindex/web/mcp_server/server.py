"""The MCP server (official SDK): ``ki mcp`` over stdio, and streamable HTTP at ``/mcp`` on the site.

Every tool answers with the JSON body of a REST route (``structuredContent``) plus a short text
rendering; a failure is a tool error whose structured content is that route's problem body.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from kernelindex.readmodel.changes import MAX_CHANGES
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.services.problems import Answer, Problem
from kernelindex.services.reads import MAX_BATCH
from kernelindex.views.params import (
    GPU_NAME_PATTERN,
    IMPL_PATTERN,
    PHASE_PATTERN,
    REGION,
    RUN_ID_PATTERN,
    SLUG_PATTERN,
)
from kernelindex.web.mcp_server.page_tools import PAGE_TOOLS, page_tool
from kernelindex.web.mcp_server.resources import policy_text
from kernelindex.web.mcp_server.summaries import summary
from kernelindex.web.mcp_server.tools import CatalogTools, utc_now

INSTRUCTIONS = (
    "KernelIndex answers 'which GPU kernel should I use for this exact workload, and what is the evidence?'. "
    "Start with recommend_kernel for what to run (pip install line and a runnable snippet), or resolve_kernel "
    "for the ranked evidence. Queries use the search grammar: an operation, axis bindings and filters, e.g. "
    "'rope seq=2048 hidden=8192 bf16 h100'. Numbers are only ranked inside a cohort (same workload, protocol, "
    "environment); the resources kernelindex://methodology and kernelindex://policies/* explain the rules."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                             description="A query in the search grammar, e.g. 'rope seq=2048 hidden=8192 a100'.")]
Slug = Annotated[str, Field(pattern=SLUG_PATTERN, description="A slug, e.g. 'rope'.")]
Key = Annotated[str | None, Field(pattern=r"^[A-Za-z0-9:._-]{1,80}$", description="A 12-hex-digit key.")]
Filter = Annotated[str | None, Field(pattern=SLUG_PATTERN)]
GpuFilter = Annotated[str | None, Field(pattern=GPU_NAME_PATTERN, description=(
    "A GPU slug or name, as search takes it: h200, H200, H100 SXM, NVIDIA A100-SXM4-80GB."))]
Queries = Annotated[list[str | dict[str, Any]], Field(min_length=1, max_length=MAX_BATCH, description=(
    "1–50 queries, each a text query or a structured request."))]
RunId = Annotated[str, Field(pattern=RUN_ID_PATTERN, description="A run id (hex), e.g. from a ranked row.")]


def _result(compute: Callable[[], Answer | Problem], tool: str) -> CallToolResult:
    data = compute()
    if isinstance(data, Problem):
        return _problem_result(data)
    return CallToolResult(content=[TextContent(type="text", text=summary(tool, data))], structured_content=data)


BODY_TOOLS = {"resolve_kernel", "resolve_kernels", "validate_manifest"}  # their REST twins take a JSON body


def _named(name: str) -> str:
    """A client-given name as an error repeats it: quoted, at most 64 characters."""
    return repr(name[:64]) + ("…" if len(name) > 64 else "")


class KernelIndexServer(MCPServer):
    """Arguments that fail the tool's schema come back as the API's problem (422 ``invalid_request`` for
    a body, 400 ``bad_request`` for query/path parameters), not as the SDK's free text. An unknown tool or
    prompt is the JSON-RPC error -32602 (invalid params), answered without a traceback: the SDK answered
    an unknown prompt with code 0 and logged ~11 KB of traceback for each."""

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt {_named(name)}: this server has no "
                           "prompts (prompts/list); its answers are tools (tools/list)")
        return await super().get_prompt(name, arguments, context)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool {_named(name)}: tools/list names them")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            errors = [{"field": ".".join(str(p) for p in err["loc"]) or "arguments", "message": err["msg"]}
                      for err in exc.__cause__.errors()]
            code = "invalid_request" if name in BODY_TOOLS else "bad_request"
            problem = Problem(code, "; ".join(f"{e['field']}: {e['message']}" for e in errors), tuple(errors))
            return _problem_result(problem)


def _problem_result(problem: Problem) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{problem.code}: {problem.detail}")],
                          structured_content=problem.body(), is_error=True)


def build_server(catalog: Any, clock: Callable[[], datetime] = utc_now) -> MCPServer:
    """The server over ``catalog``; ``clock`` is the pages' "now" (the site passes its own)."""
    tools = CatalogTools(catalog, clock)
    server = KernelIndexServer(name="kernelindex", title="KernelIndex", instructions=INSTRUCTIONS, version="1",
                               log_level="WARNING")
    _register_tools(server, tools)
    _register_catalog_tools(server, tools)
    _register_compare_tools(server, tools)
    _register_resources(server)
    return server


def _register_tools(server: MCPServer, tools: CatalogTools) -> None:
    def tool(description: str) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
        return server.tool(description=description, annotations=READ_ONLY)

    @tool(DESCRIPTIONS["recommend_kernel"])
    def recommend_kernel(query: Query) -> CallToolResult:
        return _result(lambda: tools.recommend_kernel(query), "recommend_kernel")

    @tool(DESCRIPTIONS["search_catalog"])
    def search_catalog(query: Annotated[str, Field(max_length=MAX_QUERY_CHARS, description=(
            "Free words and key:value filters; empty lists operations."))] = "") -> CallToolResult:
        return _result(lambda: tools.search_catalog(query), "search_catalog")

    @tool(DESCRIPTIONS["resolve_kernel"])
    def resolve_kernel(
        query: Annotated[str | None, Field(max_length=MAX_QUERY_CHARS, description="A text query.")] = None,
        request: Annotated[dict[str, Any] | None, Field(description=(
            "A structured request: operation, axes {name: int}, dtype, gpu, arch, mode, language, trust, usable, "
            "license, source (the body of POST /api/v1/resolve)."))] = None,
    ) -> CallToolResult:
        return _result(lambda: tools.resolve_kernel(query, request), "resolve_kernel")

    @tool(DESCRIPTIONS["resolve_kernels"])
    def resolve_kernels(queries: Queries) -> CallToolResult:
        return _result(lambda: tools.resolve_kernels(queries), "resolve_kernels")

    @tool(DESCRIPTIONS["get_model_step"])
    def get_model_step(
        model: Annotated[str, Field(pattern=SLUG_PATTERN, description="A model slug, e.g. 'llama-3.1-8b'.")],
        gpu: GpuFilter = None,
        phase: Annotated[str | None, Field(pattern=PHASE_PATTERN)] = None,
        batch: Annotated[int | None, Field(ge=1, le=65_536, description="Sequences in the batch (32).")] = None,
        seq: Annotated[int | None, Field(ge=1, le=1_048_576, description=(
            "Decode: context length; prefill and train: sequence length (4096)."))] = None,
        tp: Annotated[int | None, Field(ge=1, le=64, description="Tensor-parallel degree (1).")] = None,
    ) -> CallToolResult:
        return _result(lambda: tools.get_model_step(model, gpu, phase, batch, seq, tp), "get_model_step")


def _register_compare_tools(server: MCPServer, tools: CatalogTools) -> None:
    def tool(description: str) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
        return server.tool(description=description, annotations=READ_ONLY)

    @tool(DESCRIPTIONS["compare_runs"])
    def compare_runs(run_ids: Annotated[list[Annotated[str, Field(pattern=RUN_ID_PATTERN)]],
                                        Field(min_length=2, max_length=8, description="2–8 run ids.")]
                     ) -> CallToolResult:
        return _result(lambda: tools.compare_runs(run_ids), "compare_runs")

    @tool(DESCRIPTIONS["compare_implementations"])
    def compare_implementations(
        operation: Slug,
        implementations: Annotated[list[Annotated[str, Field(pattern=IMPL_PATTERN)]], Field(
            min_length=1, max_length=2, description="1–2 implementations: a slug, a shorter name within the "
            "operation (liger, torch-compile), or slug@version.")],
        gpus: Annotated[list[Annotated[str, Field(pattern=GPU_NAME_PATTERN)]], Field(
            max_length=2, description="0–2 GPUs (h200, H100 SXM …); none: the GPU the default rule leads with.")
        ] = [],  # noqa: B006 - the tool's schema default; never mutated
        region: Annotated[str | None, Field(pattern=REGION.pattern, description=REGION.description)] = None,
    ) -> CallToolResult:
        return _result(lambda: tools.compare_implementations(operation, implementations, gpus, region),
                       "compare_implementations")


def _register_catalog_tools(server: MCPServer, tools: CatalogTools) -> None:
    def tool(description: str) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
        return server.tool(description=description, annotations=READ_ONLY)

    for name in PAGE_TOOLS:  # their arguments are their view's parameters (page_tools.py)
        def show(view: str, subject: str | None, query: dict[str, Any], name: str = name) -> CallToolResult:
            return _result(lambda: tools.page(view, subject, **query), name)

        tool(DESCRIPTIONS[name])(page_tool(name, show))

    @tool(DESCRIPTIONS["list_changes"])
    def list_changes(
        since: Annotated[str | None, Field(max_length=300, description=(
            "next_cursor from the previous answer, or an RFC 3339 instant; omit for everything from the start."))
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_CHANGES, description="At most this many changes.")] = 100,
    ) -> CallToolResult:
        return _result(lambda: tools.list_changes(since, limit), "list_changes")

    @tool(DESCRIPTIONS["list_gpus"])
    def list_gpus() -> CallToolResult:
        return _result(tools.list_gpus, "list_gpus")

    @tool(DESCRIPTIONS["validate_manifest"])
    def validate_manifest(manifest: Annotated[dict[str, Any], Field(description=(
            "A manifest: {apiVersion: 'kernelindex/v1', kind, metadata, spec}."))]) -> CallToolResult:
        return _result(lambda: tools.validate_manifest(manifest), "validate_manifest")

    @tool(DESCRIPTIONS["get_manifest_schema"])
    def get_manifest_schema(kind: Annotated[str, Field(description="A manifest kind, e.g. BenchmarkRun.")]
                            ) -> CallToolResult:
        return _result(lambda: tools.get_manifest_schema(kind), "get_manifest_schema")


DESCRIPTIONS = {
    "recommend_kernel": (
        "What to run for one exact workload on one GPU. Give a query naming an operation, its shapes and a GPU "
        "(e.g. 'rope seq=2048 hidden=8192 bf16 h100'). Returns, per cohort (the GPU's verified cohort and/or its "
        "default cohort, never compared across cohorts), the fastest usable implementation with its pinned pip "
        "install line, a runnable Python snippet using tensors of the workload's shapes and dtypes, the evidence "
        "line and how far it sits above the physical floor. If the GPU was never measured for that workload, "
        "status is not_measured_on_gpu and the answer gives the nearest measured GPU's evidence plus the asked "
        "GPU's floor estimate; if several workloads match, status is choose_workload with a query for each."),
    "search_catalog": (
        "Search the catalog with the query grammar (free words plus key:value filters and axis bindings such as "
        "'layer norm fp32 h100 usable:yes'). Returns the same resolution as the site's /search: exact cohorts "
        "ranked, other protocols, compatible cohorts with mismatch vectors, nearest measured shapes and coverage "
        "gaps. A mistyped key or value comes back in query.issues with a suggestion; the rest still resolves. An "
        "empty query lists the operations."),
    "resolve_kernel": (
        "Resolve one exact workload, from a text query or a structured request (exactly one of the two). Returns "
        "status exact / not_measured / no_exact_evidence / choose_operation, the exact cohorts with ranked rows "
        "(median_ns, evidence, usability, install), other-protocol cohorts (never ranked against exact), "
        "compatible cohorts with their mismatch vectors {field, requested, observed}, and for an unmeasured shape "
        "the nearest measured cases below and above (never interpolated). Same answer as POST /api/v1/resolve."),
    "resolve_kernels": (
        "Resolve up to 50 queries in one call (text or structured, mixed). Answers come back in order, each with "
        "its own status: 200 with the resolution, or the problem that query would get alone (one bad query does "
        "not fail the others). Use it when choosing kernels for every operation of a model at once."),
    "get_operation": (
        "The full operation page for one operation slug (from search results), optionally for a workload and "
        "cohort key: workloads, cohorts, headline slots (fastest usable, best usable, fastest verified), the "
        "ranked table, fastest by language, the floor estimate, scaling data, implementations and sources."),
    "get_model_step": (
        "One step of a model (llama-3.1-8b, llama-3.1-70b, qwen2.5-7b, mixtral-8x7b, deepseek-v3, gpt-oss-120b) "
        "on one GPU: phase decode/prefill/train, batch, seq (decode: context length), tp. Returns every kernel call "
        "with its shapes after tensor parallelism, the catalog operation and workload it maps to (exact, nearest "
        "measured, or not measured with how to ask for it), the best usable implementation on that GPU with its "
        "evidence level and statistic, its floor, and the step's sum with the biggest gaps first. Same answer as "
        "GET /api/v1/models/{slug}."),
    "get_implementation": (
        "One implementation line (project + callable, e.g. 'liger-kernel-rope'): its revisions, whether and how "
        "it can be installed (pinned install or the reasons it is not usable as-is), declared and concluded "
        "license, source link, records held and runs per workload and GPU."),
    "get_run_evidence": (
        "The evidence dossier of one run id: status, median and spread, its rank in its cohort or the reason it "
        "is not ranked, workload, protocol (timer, timed region, warmup, L2 policy, correctness policy), "
        "environment, correctness result, raw-samples digest, signature/verification status and corrections."),
    "compare_runs": (
        "Compare 2–8 runs side by side. A winner is named only when all runs share one cohort; otherwise the "
        "answer names the first material difference (workload, protocol, environment or metric) and declares no "
        "winner."),
    "compare_implementations": (
        "Compare two implementations of one operation (or two versions of one, 'slug@version'), on one or two GPUs, "
        "across the operation's workloads in one timed region: per workload, each implementation's figure on each "
        "GPU from the cohort the default rule picks, its multiple of the row's fastest where every cell was timed "
        "alike, and facts saying whether the timer, protocol version and statistic are the same for all. Same "
        "answer as GET /api/v1/compare?operation=…&impl=…&impl=…&gpu=…"),
    "get_reproduction": (
        "A source's reproduction court (kernelbench, liger-kernel-benchmarks, …): per GPU product, how many of its "
        "reported figures a trusted KernelIndex runner re-measured, the median ratio ours / theirs, the shares "
        "within 10% and within 2×, and the figures not reproduced (beyond 2×, out of rankings and records) with "
        "their explanation or 'unexplained'; every pair with its protocol differences."),
    "list_records": (
        "The records ledger: each cohort's current record holder, history and margin, filtered by operation "
        "slug, GPU slug or evidence level; view current, recently-broken or history; or one cohort's history by "
        "its key. Cohorts are never ranked against each other."),
    "list_changes": (
        "What changed in the index since a cursor, oldest first: publications (new runs), record events (first "
        "record, record broken, record changed by a retraction), retractions and completed measurement "
        "requests, each with its time, kind, id, title, summary, site URL and data. Call it without since to "
        "start, then pass the answer's next_cursor as since to get only what is new; more is true when further "
        "changes wait beyond limit. An RFC 3339 instant also works as since; a malformed cursor is bad_cursor."),
    "list_gpus": (
        "The GPUs of the datasheet table with their bandwidth and peak rates (used by the floor estimate) and "
        "how many runs each has. Use the slugs as gpu: values in queries."),
    "validate_manifest": (
        "Validate a KernelIndex manifest (OperationSpec, WorkloadCase, ImplementationRevision, BenchmarkRun …). "
        "Returns valid true with the manifest's identity digest, or valid false with every problem naming its "
        "field. Nothing is stored."),
    "get_manifest_schema": (
        "The JSON Schema of one manifest kind (OperationSpec, WorkloadCase, SoftwareProject, "
        "ImplementationRevision, BenchmarkProtocol, ExecutionEnvironment, BenchmarkRun, Retraction, Supersession, "
        "TrustedRunner, Source), to build a manifest that validate_manifest accepts."),
}


RESOURCES = [
    ("kernelindex://methodology", "methodology", "methodology",
     "How KernelIndex decides cohorts, eligibility, ranking, records, evidence levels, usability and the floor."),
    ("kernelindex://policies/floor", "floor-policy", "floor",
     "floor-v1: the physical lower bound (compulsory bytes / bandwidth, flops / peak) shown next to every record."),
    ("kernelindex://policies/ranking", "ranking-policy", "ranking",
     "ranking-v1, records and default views: how runs are ranked inside a cohort and when a record changes hands."),
]


def _register_resources(server: MCPServer) -> None:
    for uri, name, section, description in RESOURCES:
        server.resource(uri, name=name, description=description, mime_type="text/markdown")(_reader(section))


def _reader(section: str) -> Callable[[], str]:
    def read() -> str:
        return policy_text(section)

    return read
