"""Parameters of the pages: names, patterns and limits, declared once for HTML, API, CLI and MCP. Light on
purpose: the CLI builds its page options from them (cli/page_options.py) without loading the catalog."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernelindex.policy.evidence import LEVELS
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.ledger_views import VIEWS as RECORD_VIEWS

SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,119}$"
KEY_PATTERN = r"^[A-Za-z0-9:._=,+-]{1,200}$"
RUN_ID_PATTERN = r"^[0-9a-f]{6,64}$"
# A GPU by slug or by name, as search takes it: "h200", "H200", "H100 SXM", "NVIDIA A100-SXM4-80GB".
GPU_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._()+-]{0,119}$"
QUERY_PATTERN = r"^[^\x00]*$"
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"  # the API's opaque pagination cursors
PAGE_PATTERN = r"^[1-9][0-9]{0,3}$"  # a numbered page of a long list on a page (?page=2)
REQUEST_STATE_PATTERN = r"^(open|claimed|done|failed)$"  # measurement request states


@dataclass(frozen=True)
class Param:
    """One parameter: a path subject (``/operations/{slug}``) or a query parameter."""

    name: str
    pattern: str
    description: str
    what: str  # how a message names a well-formed value: "a workload key", "an operation slug"
    max_length: int = 200
    choices: tuple[str, ...] = ()  # a closed list the schema declares as its enum (the read model checks it)

    def matches(self, value: str) -> bool:
        return len(value) <= self.max_length and re.fullmatch(self.pattern, value) is not None


@dataclass(frozen=True)
class Repeated:
    """A query parameter given several times (compare's ``run=…``), between ``least`` and ``most``."""

    param: Param
    least: int
    most: int


def given_query(query: Mapping[str, object]) -> dict[str, list[str]]:
    """A door's keyword arguments as a query string gives them (each a list of strings; None: not given)."""
    return {k: v if isinstance(v, list) else [str(v)] for k, v in query.items() if v is not None}


def check_subject(param: Param, value: str) -> str:
    """A path subject that cannot name anything is a 404 (nothing lives at that path)."""
    if not param.matches(value):
        raise NotFound(f"{value[:40]!r} is not {param.what}", malformed=True)
    return value


def read_query(params: Sequence[Param], repeated: Sequence[Repeated],
               query: Mapping[str, Sequence[str]]) -> dict[str, str | None | list[str]]:
    """The page's query parameters from a multi-valued mapping; unknown, repeated or malformed
    values are a BadParameter naming the parameter and what it takes."""
    allowed = {p.name for p in params} | {r.param.name for r in repeated}
    if unknown := sorted(set(query) - allowed):
        takes = ", ".join(sorted(allowed)) or "no parameters"
        raise BadParameter(unknown[0], f"this page does not take {unknown[0]!r} (it takes {takes})")
    values: dict[str, str | None | list[str]] = {p.name: _single(p, query.get(p.name, ())) for p in params}
    for each in repeated:
        values[each.param.name] = _repeated(each, query.get(each.param.name, ()))
    return values


def _single(param: Param, given: Sequence[str]) -> str | None:
    if len(given) > 1:
        raise BadParameter(param.name, f"given {len(given)} times; give it once")
    value = given[0] if given else ""
    if value.strip() == "":  # an empty form field is an absent parameter
        return None
    if not param.matches(value):
        raise BadParameter(param.name, f"{value[:80]!r} is not {param.what}")
    return value


def _repeated(repeated: Repeated, given: Sequence[str]) -> list[str]:
    values = [v.lower() for v in given if v.strip()]  # run ids are hex, slugs lowercase: either case names one
    for value in values:
        if not repeated.param.matches(value):
            raise BadParameter(repeated.param.name, f"{value[:40]!r} is not {repeated.param.what}")
    if len(values) > repeated.most:
        raise BadParameter(repeated.param.name, f"at most {repeated.most} (got {len(values)})")
    return values


SLUG = Param("slug", SLUG_PATTERN, "Slug (lowercase letters, digits, '.', '_', '-').", "a slug", 120)
SOURCE = Param("source", SLUG_PATTERN, "Source name (kernelbench, liger-kernel-benchmarks, …).", "a source name", 120)
RUN_ID = Param("run_id", RUN_ID_PATTERN, "Run id: hex digits (16 on every page).", "a run id (hex digits)", 64)
WORKLOAD = Param("workload", KEY_PATTERN, "Workload key (12 hex digits).", "a workload key")
COHORT = Param("cohort", KEY_PATTERN, "Cohort key (12 hex digits).", "a cohort key")
OPERATION = Param("operation", SLUG_PATTERN, "Operation slug.", "an operation slug", 120)
GPU = Param("gpu", GPU_NAME_PATTERN, "GPU: a slug or a name (h200, H200, H100 SXM, NVIDIA A100-SXM4-80GB).",
            "a GPU slug or name", 120)
GPU_SUBJECT = Param("slug", GPU_NAME_PATTERN, GPU.description, GPU.what, 120)
EVIDENCE = Param("evidence", SLUG_PATTERN, "Evidence level.", "an evidence level", 120, LEVELS)
VIEW = Param("view", SLUG_PATTERN, "current, recently-broken or history.", "a view name", 120, tuple(RECORD_VIEWS))
RUN = Param("run", RUN_ID_PATTERN, "Run ids (repeat the parameter).", "a run id (hex digits)", 64)
# compare by implementation (/compare?operation=rope&impl=liger&impl=torch-compile&gpu=h200): a line's slug, a
# shorter name of it within the operation, or one version of it after '@' (liger-kernel-rope@0.8.5)
IMPL_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,119}(@[a-z0-9][a-z0-9.+_-]{0,63})?$"
IMPL = Param("impl", IMPL_PATTERN, "Implementations to compare across the workload sweep (repeat the parameter): an "
             "implementation slug or a shorter name of it within the operation (liger, torch-compile), optionally "
             "one version after '@' (liger-kernel-rope@0.8.5).", "an implementation name (slug[@version])", 184)
COMPARED_GPU = Param("gpu", GPU_NAME_PATTERN, "GPUs to compare on (repeat the parameter; one or two): a slug or a "
                     "name. None: the GPU the default rule leads with.", GPU.what, 120)
REGION_PATTERN = r"^(forward|backward|forward\+backward|forward-no-grad)$"
REGION = Param("region", REGION_PATTERN,
               "Timed region of the sweep (forward, backward, forward+backward). None: the first region every "
               "implementation was measured in, forward first.", "a timed region", 20,
               ("forward", "backward", "forward+backward", "forward-no-grad"))
PAGE = Param("page", PAGE_PATTERN, "Page number of the page's long list (1 = first).", "a page number (1, 2, …)", 4)

# a model's step (/models/{slug}): issue 49
STEP_INTEGER_PATTERN = r"^[1-9][0-9]{0,6}$"
PHASE_PATTERN = r"^(decode|prefill|train)$"
PHASE = Param("phase", PHASE_PATTERN, "decode (one token per sequence), prefill or train.", "a phase",
              12, ("decode", "prefill", "train"))
BATCH = Param("batch", STEP_INTEGER_PATTERN, "Sequences in the batch (default 32).", "a batch size", 7)
SEQ = Param("seq", STEP_INTEGER_PATTERN, "Decode: the context length (tokens in the KV cache); prefill and train: the "
            "sequence length (default 4096).", "a sequence length", 7)
TP = Param("tp", STEP_INTEGER_PATTERN, "Tensor-parallel degree (default 1).", "a tensor-parallel degree", 7)
