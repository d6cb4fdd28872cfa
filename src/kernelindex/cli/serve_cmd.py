"""``ki serve``: import the bundled data once, then serve the site with one or more workers. ``ki init``:
the import alone (the lookups never import)."""

from __future__ import annotations

import copy
import logging
import logging.config
import os
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

APP_FACTORY = "kernelindex.web.app:create_app_from_environment"
SERVING_ON = "KERNELINDEX_SERVING_ON"  # where ``ki serve`` serves, said by a worker once it has started
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration plus KernelIndex's loggers (the access log is
    ``kernelindex.web.access``). uvicorn applies it in every worker process, which does not
    inherit the parent's logging set-up: without it, ``--workers 2`` logged no request at all."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["kernelindex"] = {"format": LOG_FORMAT}
    config["handlers"]["kernelindex"] = {"class": "logging.StreamHandler", "formatter": "kernelindex",
                                         "stream": "ext://sys.stderr"}
    config["loggers"]["kernelindex"] = {"handlers": ["kernelindex"], "level": level.upper(), "propagate": False}
    return config


def _prepare_catalog(database_url: str | None) -> str:
    """Open (and migrate) the catalog, import the bundled data if it is empty; return its URL."""
    from kernelindex.catalog.db import ENV_URL

    catalog = _open_and_import(database_url)
    typer.echo(f"Serving {_run_count(catalog)}.")
    os.environ[ENV_URL] = catalog.url  # workers open exactly this catalog
    catalog.dispose()  # no pooled connections are inherited by worker processes
    return catalog.url


def _open_and_import(database_url: str | None) -> Catalog:
    """Open (and migrate) the catalog and import the bundled data it lacks, saying what it does."""
    from kernelindex.bootstrap import ensure_bundled_data, has_runs, summary_lines
    from kernelindex.catalog.db import open_catalog

    typer.echo("Opening the catalog (migrating its schema if needed)…")
    catalog = open_catalog(database_url)
    typer.echo(f"Catalog: {catalog.display_location()}")
    if not has_runs(catalog):
        typer.echo("Empty catalog: importing the bundled data (Liger-Kernel CSVs, the KernelIndex export's "
                   "FlashInfer-Bench and GPU MODE rows, AMD aiter's tuned tables, KernelBench, verified bundles)…")
    imported = ensure_bundled_data(catalog, say=typer.echo)
    if not imported:
        typer.echo("Bundled data already imported.")
    for line in summary_lines(imported):
        typer.echo(f"Imported {line}")
    return catalog


def init(database: str | None = typer.Option(
        None, "--database", envvar="KERNELINDEX_DATABASE_URL",
        help="Catalog URL (sqlite:///path or postgresql://...). Default: an SQLite file in your data directory.")
) -> None:
    """Create the catalog and import the bundled data it lacks (what `ki serve` does on first start); the
    lookups (`ki search`, `show`, `records`, `use`, `mcp`) read the catalog and never import."""
    catalog = _open_and_import(database)
    typer.echo(f"Ready: {_run_count(catalog)}.")
    catalog.dispose()


def _run_count(catalog: Catalog) -> str:
    from kernelindex.readmodel.objects import run_counts

    runs, sources = run_counts(catalog)
    return f"{runs:,} runs from {sources} source(s)"


WORKER_HEALTHCHECK_S = 60
MAX_CONNECTIONS = 1024  # per worker: connections and tasks together, uvicorn's limit_concurrency


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, min=1, max=65535, help="TCP port."),
    workers: int = typer.Option(1, min=1, max=64, help="Worker processes (use PostgreSQL for more than one)."),
    database_url: str | None = typer.Option(
        None, "--database-url", help="Catalog URL; default: $KERNELINDEX_DATABASE_URL or the local SQLite file."
    ),
    log_level: str = typer.Option("info", help="uvicorn log level."),
    trusted_proxies: str = typer.Option(
        "", "--trusted-proxies", envvar="KERNELINDEX_TRUSTED_PROXIES",
        help="Comma-separated addresses or networks of reverse proxies whose X-Forwarded-For / -Proto headers "
             "are believed (default: none, so a client's address is the connection's)."),
    base_url: str = typer.Option(
        "", "--base-url", envvar="KERNELINDEX_BASE_URL",
        help="The site's public URL, e.g. https://kernelindex.example (absolute links in the Atom feed)."),
) -> None:
    """Serve the website and the JSON API."""
    import uvicorn

    logging.config.dictConfig(log_config(log_level))
    url = _prepare_catalog(database_url)
    if workers > 1 and url.startswith("sqlite"):
        typer.echo("Note: several workers on SQLite serialise writes; PostgreSQL is recommended in production.")
    # said by each worker once its app has started (web/app.py), not before: a page answers from then on
    os.environ[SERVING_ON] = f"http://{host}:{port}/ with {workers} worker(s)"
    if base_url:
        os.environ["KERNELINDEX_BASE_URL"] = base_url  # read by every worker
    from kernelindex.web.slow_clients import http_protocol

    # Connections: at most MAX_CONNECTIONS open per worker (uvicorn answers 503 past it), and a connection
    # that does not finish its request's headers within 10 s is closed (docs/reliability.md).
    # A worker computing a cold answer on a busy machine can leave uvicorn's health ping (5 s by default)
    # unanswered, and a killed worker drops every connection it holds: give it a minute.
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, workers=workers, log_level=log_level,
                log_config=log_config(log_level), access_log=False, http=http_protocol(),
                timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
                limit_concurrency=int(os.environ.get("KERNELINDEX_MAX_CONNECTIONS") or MAX_CONNECTIONS),
                **proxy_settings(trusted_proxies))


def proxy_settings(trusted_proxies: str) -> dict[str, Any]:
    """uvicorn's forwarding settings: X-Forwarded-For is believed only from the configured proxies (it
    names the client for the anonymous ask limit and the audit log); with none configured, never."""
    proxies = [p.strip() for p in trusted_proxies.split(",") if p.strip()]
    if not proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(proxies)}


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``init`` to the ``ki`` command."""
    app.command("serve")(serve)
    app.command("init")(init)
