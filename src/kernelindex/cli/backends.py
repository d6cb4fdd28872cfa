"""Where the query commands get their JSON: the local catalog, or a server (``--api URL``).
Both give the API's JSON, so the commands render one shape. The local catalog's modules (SQLAlchemy,
the page table, the manifest models) are imported only by LocalBackend: ``--api`` needs none of them."""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kernelindex import urls
from kernelindex.cli.console import print_error


class CommandError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class LocalBackend:
    """The local catalog; ``clock`` is the injectable "now" for staleness (tests pin it). A read command
    imports nothing: an empty catalog is an error naming what to run (``ki init``, or ``ki serve``)."""

    def __init__(self, database: str | None, clock: Callable[[], datetime] | None = None) -> None:
        from kernelindex.catalog.holdings import has_runs
        from kernelindex.cli.common import open_for_cli
        from kernelindex.domain.manifests import now_utc

        self.catalog = open_for_cli(database)
        self.clock = clock or now_utc
        if not has_runs(self.catalog):
            raise CommandError(empty_catalog_hint(self.catalog.display_location(), database))

    def get(self, path: str, params: dict[str, Any]) -> Any:
        return _local_get(self.catalog, path, params, self.clock())

    def post_resolve(self, body: dict[str, Any]) -> Any:
        from kernelindex.services import reads

        return answer_of(reads.resolution(self.catalog, self.clock(), body))

    def operation_brief(self, slug: str, params: dict[str, Any]) -> Any:
        """What ``ki show operation`` prints of the operation page (``readmodel.operation_brief``): the
        page's own arguments checked as the page checks them, and only the fields the tables print derived."""
        from kernelindex.services.operation_brief import brief_answer

        return answer_of(brief_answer(self.catalog, slug, params, self.clock()))

    def use(self, text: str) -> Any:
        from kernelindex.services import reads

        return answer_of(reads.use(self.catalog, self.clock(), text))


def empty_catalog_hint(location: str, database: str | None) -> str:
    """What to run when the catalog holds no runs: a read command never imports the bundled data itself."""
    where = f" --database {database}" if database else ""
    return (f"the catalog {location} holds no runs yet: run `ki init{where}` to import the bundled data "
            f"(or `ki serve{where.replace('--database', '--database-url')}`, which imports it on first start), "
            "or ask a server with --api URL")


def answer_of(outcome: Any) -> Any:
    """A service's answer, or its Problem as the command's error (with the problem's exit code)."""
    from kernelindex.services.problems import Problem

    if not isinstance(outcome, Problem):
        return outcome
    suggested = any("suggestion" in e for e in outcome.errors)
    raise CommandError(_problems_text(outcome.errors) if suggested else outcome.detail, outcome.exit_code)


def _problems_text(problems: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{p['field']}: {p['message']}" + (f" (did you mean {p['suggestion']!r}?)"
                                                         if p.get("suggestion") else "") for p in problems)


def _local_get(catalog: Any, path: str, params: dict[str, Any], now: datetime) -> Any:
    """The page service for ``path``, as the API would answer it (same checks, same JSON)."""
    from kernelindex.services import reads
    from kernelindex.views.table import view_for_path

    found = view_for_path(path)
    if found is None:
        raise CommandError(f"unknown path {path}", 2)
    view, subject = found
    return answer_of(reads.page(catalog, now, view.name, subject, **params))


def http_client(base: str) -> Any:
    """The HTTP client for ``--api`` (tests substitute an in-process one): ``lookup_client`` says why it
    is the standard library's."""
    from kernelindex.cli.lookup_client import LookupClient

    return LookupClient(base + urls.API)


class HttpBackend:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.client = http_client(self.base)

    def _answer(self, response: Any) -> Any:
        if response.status_code < 400:
            return response.json()
        try:
            problem = response.json()
        except ValueError:
            raise CommandError(f"{self.base} answered {response.status_code}", 1) from None
        detail = problem.get("detail", response.reason_phrase)
        if problem.get("errors") and any("suggestion" in e for e in problem["errors"]):
            detail = _problems_text(problem["errors"])
        raise CommandError(detail, 2 if response.status_code in (400, 413, 415, 422) else 1)

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        from kernelindex.cli.lookup_client import Unreachable

        try:
            return self._answer(self.client.request(method, path, **kwargs))
        except Unreachable as exc:
            raise CommandError(f"cannot reach {self.base}: {exc}", 1) from None

    def get(self, path: str, params: dict[str, Any]) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        data = self._send("GET", path, params=params)
        while isinstance(data, dict) and isinstance(data.get("pagination"), dict):
            # A paginated page model (the records ledger): follow the cursors, then show it whole,
            # exactly as the local catalog would.
            paging = data.pop("pagination")
            if not paging["next_cursor"]:
                break
            more = self._send("GET", path, params={**params, "limit": 200, "cursor": paging["next_cursor"]})
            more[paging["list"]] = data[paging["list"]] + more[paging["list"]]
            data = more
        return data

    def post_resolve(self, body: dict[str, Any]) -> Any:
        return self._send("POST", urls.RESOLVE, json=body)


def backend_for(api: str | None, database: str | None) -> LocalBackend | HttpBackend:
    return HttpBackend(api) if api else LocalBackend(database)


def run_command(action: Any) -> None:
    """Run a read command's ``action``, its CommandError printed as the command's error and exit code.

    The cyclic garbage collector is off meanwhile: a read command is one short process, and the collector's
    passes over the objects its imports (SQLAlchemy, the pydantic manifest models, the read model) and one
    operation's runs create freed almost nothing (1,369 objects in 350 passes over a search and the largest
    GEMM's ``show``, full catalog) and cost 10–20% of its CPU time (``bench/cli_start.py``,
    docs/performance.md). Memory is still freed by reference counting; the collector is on again after."""
    import typer  # the fast path (cli/fast_lookup.py) imports this module but never typer

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        action()
    except CommandError as exc:
        print_error(str(exc))
        raise typer.Exit(exc.code) from None
    finally:
        if was_enabled:
            gc.enable()
