"""Which operation a cached answer depends on alone, read from its path: an operation page, one of its
run pages or implementation pages, and their JSON twins. Such an answer is kept by that operation's
own version, so it is computed again exactly when a publication changes that operation. Every other
cached answer (home, records, search, GPUs, indexes, compare) reads many operations: it is kept by
the catalog version. ``/challenges`` also shows the measurement requests, which are not catalog data:
its answer is kept, besides the catalog version, by what it shows of them (``live_scope``); so is the Atom
feed's, which lists their completions. Which routes keep answers, and by what, each route declares where it is
mounted (``keeps_answers``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operation_of import operation_of
from kernelindex.readmodel.requests import HeldRequests
from kernelindex.views.table import CacheScope
from kernelindex.web.render import age

_OPERATION = re.compile(r"(?:/api/v1)?/operations/([^/]+?)(?:/workloads)?")
_RUN = re.compile(r"(?:/api/v1)?/runs/([0-9a-f]{16})(?:/samples\.json)?")
_IMPLEMENTATION = re.compile(r"(?:/api/v1)?/implementations/([^/]+)")


def operation_scope(catalog: Catalog, path: str) -> str | None:
    """The slug of the one operation the answer at ``path`` depends on, or None (it reads many)."""
    if found := _OPERATION.fullmatch(path):
        return found.group(1)
    if found := _RUN.fullmatch(path):
        return operation_of(catalog, "run", found.group(1))
    if found := _IMPLEMENTATION.fullmatch(path):
        return operation_of(catalog, "implementation", found.group(1))
    return None


def shows_requests(path: str) -> bool:
    """Whether the answer at ``path`` shows the measurement requests (``live_scope`` needs them)."""
    return path in (urls.FEED, urls.CHALLENGES)


def live_scope(path: str, now: datetime, held: HeldRequests | None) -> Hashable:
    """What the answer at ``path`` shows besides the catalog, as it shows it: for /challenges, the
    measurement requests (``held``: the listing's generation, so a new, merged, claimed or finished request or a
    lapsed lease shows on the next request) and their ages as the page writes them ('40 s', '12 min'),
    so the page is rendered again when one of those moves and kept otherwise. For /feed.atom, the listing's
    generation (a finished replica is an entry). Nothing for other paths (``held`` is None for them)."""
    if held is None or not shows_requests(path):
        return ()
    if path == urls.FEED:
        return held.generation
    return held.generation, tuple(age(request.age_seconds(now)) for request in held.requests)


def shared_live(path: str, now: datetime, held: HeldRequests | None) -> Hashable:
    """What ``live_scope`` stands for, in terms every worker shares (its generation is this process's own
    numbering): the requests as the answer shows them — each request's and its replicas' fields, and for
    /challenges its age as the page writes it. Nothing for other paths."""
    if held is None or not shows_requests(path):
        return ()
    return tuple((tuple(sorted((k, repr(v)) for k, v in r.to_json(now).items() if k != "age_seconds")),
                  age(r.age_seconds(now)) if path == urls.CHALLENGES else "") for r in held.requests)


_KEEPS = "keeps_answers"  # the mark ``keeps_answers`` leaves on an endpoint: its cache scope
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])
DAY = "@day"  # the stamp's scope of an answer kept by the day alone


def keeps_answers(endpoint: Endpoint | None = None, *, scope: CacheScope = "catalog") -> Any:
    """Declare that a route's answers are a function of the catalog, the day and the URL alone, kept by
    ``scope`` (the route says so where it is mounted: there is no list to keep in step). Used bare as a
    decorator, or called with a scope (a view passes the one it declares); "none" keeps nothing."""
    def mark(marked: Endpoint) -> Endpoint:
        setattr(marked, _KEEPS, scope)
        return marked

    return mark if endpoint is None else mark(endpoint)


def kept_route(route: Any) -> bool:
    """Whether ``route`` (a mounted route, or None) was declared with ``keeps_answers`` and a scope that keeps."""
    return _scope(route) is not None


def _scope(route: Any) -> CacheScope | None:
    scope = getattr(getattr(route, "endpoint", None), _KEEPS, None)
    return scope if scope in ("operation", "catalog", "day") else None


def kept_scopes(routes: Iterable[Any], prefix: str = "") -> dict[str, CacheScope]:
    """The path patterns of the app's routes whose answers may be kept, with their scopes (included routers
    walked)."""
    found: dict[str, CacheScope] = {}
    for route in routes:
        if (included := getattr(route, "original_router", None)) is not None:  # FastAPI ≥ 0.120 nests them
            found |= kept_scopes(included.routes, prefix + getattr(route.include_context, "prefix", ""))
        elif (scope := _scope(route)) is not None:
            found[prefix + route.path] = scope
    return found


def kept_paths(routes: Iterable[Any]) -> frozenset[str]:
    """The path patterns of the app's routes whose answers may be kept."""
    return frozenset(kept_scopes(routes))


class AnswerPaths:
    """Which kept route a path is, and its scope: one regular expression, a named group per route."""

    def __init__(self, routes: Iterable[Any]) -> None:
        scopes = sorted(kept_scopes(routes).items())
        self._scopes = [scope for _, scope in scopes]
        self._pattern = re.compile("|".join(f"(?P<r{i}>{re.sub(r'{[^}]+}', '[^/]+', path)})"
                                            for i, (path, _) in enumerate(scopes)))

    def scope(self, path: str) -> CacheScope | None:
        found = self._pattern.fullmatch(path) if self._scopes else None
        return self._scopes[int(found.lastgroup[1:])] if found and found.lastgroup else None
