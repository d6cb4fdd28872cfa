"""Every URL the site serves and links to, built in one place.

The page patterns below are what the view table (``views/table.py``) mounts, HTML and JSON twin
alike; the functions build the links that read models, the resolver, the CSV downloads, the API's
answers and the clients (CLI, runner) put in what they return or ask for. This module imports
nothing of the project, so every layer may use it (tests/test_architecture.py), and
tests/test_urls.py checks that no other module writes a site path by hand.

Query values are escaped as ``urlencode`` escapes them, with a shortcut for plain ones (slugs, hex
keys: the common case, kept cheap for the resolver's batches).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote_plus

MAX_QUERY_CHARS = 500  # the longest query text (?q= of search and use) any door takes
API = "/api/v1"  # the JSON API's prefix: a page's twin is API + its path (the home page's is API + API_HOME)
OPENAPI = API + "/openapi.json"

HOME = "/"
API_HOME = "/home"
OPERATION = "/operations/{slug}"
IMPLEMENTATION = "/implementations/{slug}"
RUN = "/runs/{run_id}"
RUN_SAMPLES = "/runs/{run_id}/samples.json"
OPERATIONS = "/operations"  # under API: the operations' index
IMPLEMENTATIONS = "/implementations"  # under API: the implementations' index
RECORDS = "/records"
GPUS = "/gpus"
GPU = "/gpus/{slug}"
CHALLENGES = "/challenges"
REPRODUCTION = "/reproduction/{source}"
COMPARE = "/compare"
SEARCH = "/search"
MODELS = "/models"
MODEL = "/models/{slug}"
ASK_FORM = "/requests/new"
ASKS = "/requests"  # the ask form posts here; under API, the measurement requests
DOCS = "/docs"
FEED = "/feed.atom"
EXPORT = "/export"  # under API: the whole catalog as JSON Lines
USE = "/use"  # under API: what to run for an exact workload
RESOLVE = "/resolve"  # under API: structured resolution
RESOLVE_BATCH = RESOLVE + "/batch"  # under API
WORKLOADS = "/workloads"  # under API: the workload cases
OPERATION_WORKLOADS = OPERATION + WORKLOADS  # under API: one operation's workload cases
BUNDLES = "/bundles"  # under API: signed result bundles are uploaded here
API_DOCS = "/api/docs"  # the API's documentation page
API_ROOT_ALIASES = ("/api",)  # answer like API itself: where the reference and the schema are
OPENAPI_GUESSES = ("/openapi", "/openapi.json", "/docs/api")  # where people look for the schema: to API_DOCS
REQUEST = ASKS + "/{request_id}"  # under API: one measurement request
REPLICA = REQUEST + "/replicas/{replica}"  # under API: a runner's lease of one replica (…/heartbeat, …/complete)
HEARTBEAT = REPLICA + "/heartbeat"  # under API: a runner renews its lease
COMPLETE = REPLICA + "/complete"  # under API: a runner marks its replica done or failed
CLAIMS = "/claims"  # under API: a runner claims one replica of an open request
AUDIT = "/audit"  # under API: the audit log of every write
CHANGES = "/changes"  # under API: what changed, for followers
API_FALLBACK = API + "/{path:path}"  # every API path left over: a problem naming the API's documents
MCP = "/mcp"  # the MCP server over streamable HTTP
STATIC = "/static"  # the static assets (content-addressed: web/render.static_url)
SWAGGER_ASSETS = STATIC + "/swagger-ui"  # the API reference's own assets

_PLAIN = re.compile(r"[A-Za-z0-9._~-]*")
Param = tuple[str, "str | int | None"]


def _value(value: str | int) -> str:
    text = str(value)
    return text if text.isalnum() or _PLAIN.fullmatch(text) else quote_plus(text, safe="")


def with_query(path: str, params: Iterable[Param] = (), anchor: str | None = None) -> str:
    """``path`` with the given parameters in their order (those that are None or "" left out)."""
    query = "&".join(f"{name}={_value(value)}" for name, value in params if value is not None and value != "")
    return path + (f"?{query}" if query else "") + (f"#{anchor}" if anchor else "")


def api(path: str) -> str:
    """The API's URL of ``path`` (a page's JSON twin, or an API route)."""
    return API + path


def csv_download(json_url: str) -> str:
    """The CSV download of a page's JSON twin (``?format=csv``), whether ``json_url`` has a query or not."""
    return json_url + ("&" if "?" in json_url else "?") + "format=csv"


def operation(slug: str, *params: Param) -> str:
    """An operation page, e.g. ``operation("rope", ("workload", key), ("cohort", cohort))``."""
    return with_query(OPERATION.format(slug=slug), params)


def cohort(slug: str, workload: str, cohort: str) -> str:
    """One cohort's ranking on its operation page (workload and cohort by their short keys)."""
    return operation(slug, ("workload", workload), ("cohort", cohort))


def implementation(slug: str) -> str:
    return IMPLEMENTATION.format(slug=slug)


def run(run_id: str) -> str:
    return RUN.format(run_id=run_id)


def run_samples(run_id: str) -> str:
    return RUN_SAMPLES.format(run_id=run_id)


def records(*params: Param) -> str:
    return with_query(RECORDS, params)


def gpu(slug: str, anchor: str | None = None) -> str:
    return with_query(GPU.format(slug=slug), (), anchor)


def reproduction(source: str, anchor: str | None = None) -> str:
    """A source's reproduction page (the court: issue 44)."""
    return with_query(REPRODUCTION.format(source=source), (), anchor)


def challenges(anchor: str | None = None, *params: Param) -> str:
    return with_query(CHALLENGES, params, anchor)


def compare(run_ids: Iterable[str]) -> str:
    return with_query(COMPARE, [("run", r) for r in run_ids])


def compare_sweep(operation: str, implementations: Iterable[str], gpus: Iterable[str], region: str | None) -> str:
    """Implementations compared across an operation's workloads (``impl``: a slug, or ``slug@version``)."""
    return with_query(COMPARE, [("operation", operation), *(("impl", i) for i in implementations),
                                *(("gpu", g) for g in gpus), ("region", region)])


def model(slug: str, *params: Param) -> str:
    """A model's page; ``params``: gpu, phase, batch, seq, tp."""
    return with_query(MODEL.format(slug=slug), params)


def search(q: str) -> str:
    return with_query(SEARCH, [("q", q)])


def ask(operation: str, workload: str, gpu: str, axes: str = "", dtypes: str = "") -> str:
    """The site's "Ask for this measurement" form for one workload on one GPU; a workload the catalog does not
    hold yet is named by its ``axes`` (``m=32,n=6144``) and ``dtypes`` (``T=bf16``) instead of its key."""
    extra = [("axes", axes)] if axes else []
    return with_query(ASK_FORM, [("operation", operation), ("workload", workload), ("gpu", gpu), *extra,
                                 *([("dtypes", dtypes)] if dtypes else [])])


def docs(anchor: str | None = None) -> str:
    return with_query(DOCS, (), anchor)


def measurement_request(request_id: int) -> str:
    """A measurement request, relative to the API (the runner's client is based there)."""
    return REQUEST.format(request_id=request_id)


def replica(request_id: int, number: int, action: str) -> str:
    """A runner's heartbeat or completion of one replica, relative to the API."""
    return REPLICA.format(request_id=request_id, replica=number) + "/" + action
