"""The pages, each declared once: path, parameters, read-model builder, template, extras, rows for a
CSV download, cache key and the words of its API documentation. ``web/view_routes.py`` mounts each
view's HTML page, JSON twin and CSV from this declaration, ``web/mcp_server/page_tools.py`` its MCP tool and
``cli/page_options.py`` its ``ki`` options (docs/views.md). Builders are named ``module:function`` of
``kernelindex.readmodel`` and imported on first use, so the declarations load without the read model (a
``ki`` lookup with ``--api`` reads the parameters and never the catalog)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from kernelindex import urls
from kernelindex.views import params as p
from kernelindex.views.extras import MODEL_CALLS, USE_BOX, Extra
from kernelindex.views.lazy import Ref, resolved
from kernelindex.views.params import Param, Repeated, check_subject, read_query
from kernelindex.views.tables import (
    CHALLENGES_CSV,
    COMPARE_CSV,
    GPU_CSV,
    IMPLEMENTATION_CSV,
    MODEL_CSV,
    MODELS_CSV,
    OPERATION_CSV,
    RECORDS_CSV,
    REPRODUCTION_CSV,
    SEARCH_CSV,
    CsvTable,
)

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

# What a view's finished answer is kept by (web/answer_cache.py): the version of the one operation it shows,
# the catalog version, the day alone (it reads nothing of the catalog), or nothing (docs/caching.md).
CacheScope = Literal["operation", "catalog", "day", "none"]
Builder = Callable[..., Any]  # builder(catalog, [subject,] now=..., **query) -> a read model with to_json()


@dataclass(frozen=True)
class ApiDoc:
    """What the API documentation says of a view's JSON twin."""

    summary: str
    answers: str  # the 200 answer's description
    description: str | None = None
    errors: tuple[int, ...] = ()  # statuses besides 400 it may answer (404: its subject names nothing)


@dataclass(frozen=True)
class View:
    """One page. ``path`` is the HTML route; its JSON twin is ``/api/v1`` + ``twin`` (``path`` when
    not given; the home page's twin is ``/api/v1/home``), and ``?format=csv`` there gives ``csv``'s rows.
    ``extras`` are computed from the built page and belong to its data (both twins show them); ``pages``
    names the list the JSON twin hands out a cursor page at a time. The CLI names a page by its twin's path."""

    name: str
    path: str
    builder: Ref  # its Builder, or "module:function" naming it (imported on first use)
    template: str
    subject: Param | None = None
    query: tuple[Param, ...] = ()
    repeated: tuple[Repeated, ...] = ()  # parameters given several times (compare's run, impl and gpu)
    twin: str | None = None
    canonical: Callable[[str], str] | None = None  # a subject's canonical spelling (a GPU name → its slug)
    api: ApiDoc | None = None
    extras: tuple[Extra, ...] = ()
    csv: CsvTable | None = None
    pages: Callable[[Mapping[str, Any]], str] | None = None  # the paginated list of the JSON twin
    blank: Callable[[Mapping[str, Any]], bool] | None = None  # arguments that ask for the empty form only
    # What its finished answer is kept by (web/answer_cache.py): the version of the one operation it shows,
    # the catalog version, the day alone (it reads nothing of the catalog), or nothing (docs/caching.md)
    cache: CacheScope = "catalog"

    @property
    def build(self) -> Builder:
        named = isinstance(self.builder, str)
        builder: Builder = resolved(f"kernelindex.readmodel.{self.builder}" if named else self.builder)
        return builder

    @property
    def api_path(self) -> str:
        return urls.api(self.twin or self.path)

    def is_blank(self, args: Mapping[str, Any]) -> bool:
        """Whether ``args`` only ask for the page's empty form (compare with neither two runs nor an
        implementation, search without a query): there is nothing to compute."""
        return self.blank is not None and self.blank(args)

    def arguments(self, subject: str | None, query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
        """Checked arguments for the builder (NotFound / BadParameter name what is wrong)."""
        args: dict[str, Any] = dict(read_query(self.query, self.repeated, query))
        if self.subject is not None:
            args[self.subject.name] = self.canonical_subject(check_subject(self.subject, subject or ""))
        return args

    def canonical_subject(self, subject: str) -> str:
        return self.canonical(subject) if self.canonical is not None else subject

    def known(self, query: Mapping[str, Sequence[str]]) -> dict[str, Sequence[str]]:
        """The parameters this page takes, the rest dropped: a page reached through a shared link
        (``?utm_source=…``, ``?fbclid=…``) answers as its canonical URL; the API stays strict."""
        names = {p.name for p in self.query} | {r.param.name for r in self.repeated}
        return {name: values for name, values in query.items() if name in names}

    def data(self, catalog: Catalog, now: datetime, args: Mapping[str, Any]) -> dict[str, Any]:
        """The page's JSON (what the API serves, the HTML renders and the CLI prints), projected from the
        read model's kept parts; the finished answer is kept once, by the web's answer cache."""
        named = dict(args)
        positional = [named.pop(self.subject.name)] if self.subject is not None else []
        data = self.build(catalog, *positional, now=now, **named).to_json()
        for extra in self.extras:
            data[extra.name] = extra.compute(catalog, data, now)
        return data


def _search(catalog: Catalog, *, now: datetime, q: str | None) -> Any:
    from kernelindex.resolve.service import search

    return search(catalog, q or "", now=now)


def _gpu_slug(name: str) -> str:
    """``H200``, ``h200`` and ``NVIDIA H200`` all stand for ``/gpus/h200`` (search's alias table)."""
    from kernelindex import registry

    return registry.gpu_slug(name) or name


COMPARE_REPEATED = (Repeated(p.RUN, 0, 8), Repeated(p.IMPL, 0, 2), Repeated(p.COMPARED_GPU, 0, 2))
QUERY = Param("q", p.QUERY_PATTERN, "The query text; empty lists operations.", "a query", urls.MAX_QUERY_CHARS)
_CHALLENGES = ("The challenges page's model. Its four lists (`unmeasured`, `unbeaten_baselines`, `single_entry`, "
               "`stale_records`) are one ordered list that comes a numbered page at a time, as on the page: `paging` "
               "gives `page`, `pages`, `total`, `previous` and `next`; `sections` says where each list lies and which "
               "of its rows this page holds; `counts` are the whole catalog's.")
_MODEL = ("One step of a model on one GPU: every kernel call with its shapes (after tensor parallelism), the "
          "catalog operation and workload it maps to (`status`: exact, nearest, other_gpu, not_measured, "
          "no_operation), the best usable run on the GPU with its evidence and statistic, the floor of the call's "
          "own shapes, and the step's sum (`summary`: the estimate, its exact/nearest and verified/reported parts, "
          "the floor) with the biggest gaps first (`gaps`). An estimate, not evidence.")
_COMPARE = ("Two forms. `run=` (2–8 times): those runs side by side (`runs`). `operation=` with `impl=` (1–2 "
            "times: a slug, a shorter name within the operation, or `slug@version`) and `gpu=` (0–2 times): `sweep`, "
            "one row per workload of the timed region (`region=`), one cell per implementation and GPU with its "
            "row figure in the cohort the default rule picks; `sweep.facts` says whether the timer, protocol "
            "version and statistic are the same for all cells, and each cell names its own. `mode` says which.")
_SEARCH = ("Free words plus key:value filters and axis bindings, e.g. `rope seq=2048 hidden=8192 gpu:a100`. Problems "
           "in the text come back beside their token in `query.issues`; the rest still resolves.")
VIEWS: tuple[View, ...] = (
    View("home", urls.HOME, "pages_home:home_page", "home.html", twin=urls.API_HOME,
         api=ApiDoc("The home page's model", "Headline records, sources and their freshness")),
    View("operation", urls.OPERATION, "operations:operation_page", "operation.html",
         subject=p.SLUG, query=(p.WORKLOAD, p.COHORT, p.GPU, p.PAGE), extras=(USE_BOX,), csv=OPERATION_CSV,
         cache="operation",
         api=ApiDoc("Operation detail (the operation page's model)", "The operation page: workloads, cohorts, "
                    "headline slots, ranked rows, floor, and the use box of the selected cohort", errors=(404,))),
    View("implementation", urls.IMPLEMENTATION, "pages_implementations:implementation_page", "implementation.html",
         subject=p.SLUG, query=(p.PAGE,), csv=IMPLEMENTATION_CSV, cache="operation",
         api=ApiDoc("One implementation line (the implementation page's model)",
                    "Revisions, install, license, runs per workload and GPU", errors=(404,))),
    View("run", urls.RUN, "runs:run_dossier", "run.html", subject=p.RUN_ID, cache="operation",
         api=ApiDoc("Evidence dossier of one run", "Status, timing, rank or the reason it is not ranked, workload, "
                    "protocol, environment", errors=(404,))),
    View("records", urls.RECORDS, "pages_records:records_page", "records.html",
         query=(p.OPERATION, p.GPU, p.EVIDENCE, p.VIEW, p.COHORT), csv=RECORDS_CSV,
         pages=lambda page: "events" if page.get("view") == "history" else "cohorts",
         api=ApiDoc("The records ledger", "Cohorts with their holder and history (plus `pagination`)",
                    "The records page's model. Its main list (`cohorts`, or `events` for view=history) is paginated: "
                    "`pagination` gives the list's name, `next_cursor`, `limit` and `total`.", errors=(404,))),
    View("gpu", urls.GPU, "pages_gpus:gpu_page", "gpu.html", subject=p.GPU_SUBJECT, query=(p.PAGE,),
         canonical=_gpu_slug, csv=GPU_CSV,
         api=ApiDoc("One GPU: peaks, measured ceilings, coverage, records", "The GPU page's model",
                    "The GPU page's model. Its cohorts (`records`) come a numbered page at a time, as on the page: "
                    "`records_paging` gives `page`, `pages`, `total`, `previous` and `next`.", errors=(404,))),
    # /challenges also shows the measurement requests: its answer is kept by them too (web/answer_scope.py)
    View("challenges", urls.CHALLENGES, "pages_challenges:challenges_page", "challenges.html", query=(p.PAGE,),
         extras=(MODEL_CALLS,), csv=CHALLENGES_CSV,
         api=ApiDoc("Open challenges", "Unmeasured cells, unbeaten baselines, single-entry cohorts, stale records",
                    _CHALLENGES)),
    View("compare", urls.COMPARE, "pages_compare:compare_page", "compare.html", query=(p.OPERATION, p.REGION),
         repeated=COMPARE_REPEATED, csv=COMPARE_CSV, blank=lambda args: not args["impl"] and len(args["run"]) < 2,
         api=ApiDoc("Compare 2–8 runs, or implementations across a workload sweep",
                    "Runs side by side (a winner only within one cohort, else the first material difference), or "
                    "two implementations (or two versions of one) on one or two GPUs across the operation's "
                    "workloads (`sweep`)", _COMPARE, errors=(404,))),
    View("models", urls.MODELS, "pages_models:models_index", "models.html", csv=MODELS_CSV, cache="day",
         api=ApiDoc("The models", "Every shipped model definition with its source, license and configuration")),
    View("model", urls.MODEL, "pages_models:model_page", "model.html", subject=p.SLUG,
         query=(p.GPU, p.PHASE, p.BATCH, p.SEQ, p.TP), csv=MODEL_CSV,
         api=ApiDoc("One step of a model: its kernel calls, best known implementations, floors and gaps",
                    "The model page's model", _MODEL, errors=(404,))),
    View("reproduction", urls.REPRODUCTION, "pages_reproduction:reproduction_page", "reproduction.html",
         subject=p.SOURCE, csv=REPRODUCTION_CSV,
         api=ApiDoc("A source's reproduction court", "How many of the source's reported figures were re-measured per "
                    "GPU, the median ratio (ours / theirs), the shares within 10% and 2×, the outliers and every pair",
                    errors=(404,))),
    View("search", urls.SEARCH, _search, "search/search.html", query=(QUERY,), csv=SEARCH_CSV,
         blank=lambda args: not (args["q"] or "").strip(),
         api=ApiDoc("Search with the query grammar", "The resolution: exact cohorts, other protocols, compatible, "
                    "nearest, gaps", _SEARCH)),
)
VIEW = {view.name: view for view in VIEWS}
_PATHS = [(re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", v.api_path) + "$"), v) for v in VIEWS]


def view_for_path(path: str) -> tuple[View, str | None] | None:
    """The view whose JSON twin answers ``path`` (``/operations/rope``, ``/api/v1/runs/…``), and
    the subject the path names."""
    path = urls.api("/" + path.removeprefix(urls.API).strip("/"))
    for pattern, view in _PATHS:
        if found := pattern.match(path):
            return view, next(iter(found.groupdict().values()), None)
    return None
