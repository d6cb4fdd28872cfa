"""The pages, each declared once: path, parameters, read-model builder, template, cache key."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.operations import operation_page
from kernelindex.readmodel.pages_challenges import challenges_page
from kernelindex.readmodel.pages_compare import compare_page
from kernelindex.readmodel.pages_gpus import gpu_page
from kernelindex.readmodel.pages_home import home_page
from kernelindex.readmodel.pages_implementations import implementation_page
from kernelindex.readmodel.pages_records import records_page
from kernelindex.readmodel.runs import run_dossier
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.resolve.service import search
from kernelindex.views import params as p
from kernelindex.views.params import Param, Repeated, check_subject, read_query

Builder = Callable[..., Any]  # builder(catalog, [subject,] now=..., **query) -> a read model with to_json()


@dataclass(frozen=True)
class View:
    """One page. ``path`` is the HTML route; its JSON twin is ``/api/v1`` + ``twin`` (``path`` when
    not given; the home page's twin is ``/api/v1/home``). The CLI names a page by its twin's path."""

    name: str
    path: str
    build: Builder
    template: str
    subject: Param | None = None
    query: tuple[Param, ...] = ()
    repeated: Repeated | None = None
    twin: str | None = None
    canonical: Callable[[str], str] | None = None  # a subject's canonical spelling (a GPU name → its slug)
    keeps_answers: bool = True  # its answers are a function of the catalog, the day and the URL alone

    @property
    def api_path(self) -> str:
        return "/api/v1" + (self.twin or self.path)

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
        names = {p.name for p in self.query} | ({self.repeated.param.name} if self.repeated else set())
        return {name: values for name, values in query.items() if name in names}

    def cache_key(self, now: datetime, args: Mapping[str, Any]) -> tuple[Any, ...]:
        """Pages depend on the day (staleness moves by days) and on their arguments."""
        values = tuple(tuple(v) if isinstance(v, list) else v for _, v in sorted(args.items()))
        return ("view", self.name, now.date().isoformat(), *values)

    def data(self, catalog: Catalog, now: datetime, args: Mapping[str, Any]) -> dict[str, Any]:
        """The page's JSON (what the API serves, the HTML renders and the CLI prints), cached."""
        return READ_CACHE.get(catalog, self.cache_key(now, args), lambda: self._build(catalog, now, args))

    def _build(self, catalog: Catalog, now: datetime, args: Mapping[str, Any]) -> dict[str, Any]:
        named = dict(args)
        positional = [named.pop(self.subject.name)] if self.subject is not None else []
        if self.repeated is not None:
            positional.append(named.pop(self.repeated.param.name))
        return self.build(catalog, *positional, now=now, **named).to_json()


def _search(catalog: Catalog, *, now: datetime, q: str | None) -> Any:
    return search(catalog, q or "", now=now)


def _gpu_slug(name: str) -> str:
    """``H200``, ``h200`` and ``NVIDIA H200`` all stand for ``/gpus/h200`` (search's alias table)."""
    return registry.gpu_slug(name) or name


COMPARE_RUNS = Repeated(p.RUN, 2, 8)
QUERY = Param("q", p.QUERY_PATTERN, "The query text; empty lists operations.", "a query", MAX_QUERY_CHARS)
VIEWS: tuple[View, ...] = (
    View("home", "/", home_page, "home.html", twin="/home"),
    View("operation", "/operations/{slug}", operation_page, "operation.html",
         subject=p.SLUG, query=(p.WORKLOAD, p.COHORT, p.GPU)),
    View("implementation", "/implementations/{slug}", implementation_page, "implementation.html", subject=p.SLUG),
    View("run", "/runs/{run_id}", run_dossier, "run.html", subject=p.RUN_ID),
    View("records", "/records", records_page, "records.html",
         query=(p.OPERATION, p.GPU, p.EVIDENCE, p.VIEW, p.COHORT)),
    View("gpu", "/gpus/{slug}", gpu_page, "gpu.html", subject=p.GPU_SUBJECT, query=(p.PAGE,), canonical=_gpu_slug),
    # /challenges also shows the live measurement requests, which change without a catalog version
    View("challenges", "/challenges", challenges_page, "challenges.html", query=(p.PAGE,), keeps_answers=False),
    View("compare", "/compare", compare_page, "compare.html", repeated=COMPARE_RUNS),
    View("search", "/search", _search, "search/search.html", query=(QUERY,)),
)
VIEW = {view.name: view for view in VIEWS}
_PATHS = [(re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", v.api_path) + "$"), v) for v in VIEWS]


def view_for_path(path: str) -> tuple[View, str | None] | None:
    """The view whose JSON twin answers ``path`` (``/operations/rope``, ``/api/v1/runs/…``), and
    the subject the path names."""
    path = "/api/v1/" + path.removeprefix("/api/v1").strip("/")
    for pattern, view in _PATHS:
        if found := pattern.match(path):
            return view, next(iter(found.groupdict().values()), None)
    return None
