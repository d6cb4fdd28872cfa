"""``ki keys create|list|revoke`` and ``ki audit``: the write path's keys and its audit log."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from kernelindex.cli.common import DatabaseOption, actor, fail, open_for_cli
from kernelindex.cli.console import plain_console
from kernelindex.trust import api_keys

console = plain_console()
keys_app = typer.Typer(help="API keys for the write path (bundle uploads, measurement requests, admin).",
                       no_args_is_help=True)


@keys_app.command("create")
def create(
    name: str = typer.Option(..., "--name", help="Who or what uses the key, e.g. lab-runner-3."),
    scope: str = typer.Option(..., "--scope", help="bundles:write | requests:write | admin."),
    database: str | None = DatabaseOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Make an API key. It is shown once: only a salted hash is stored."""
    if scope not in api_keys.SCOPES:
        fail(f"--scope {scope!r} is not one of {', '.join(api_keys.SCOPES)}", code=2)
    try:
        key, token = api_keys.create_key(open_for_cli(database), name=name, scope=scope, created_by=actor())
    except api_keys.ApiKeyError as exc:
        fail(str(exc), code=2)
    if as_json:
        typer.echo(json.dumps({**key.to_json(), "token": token}, sort_keys=True))
        return
    console.print(f"API key {key.key_id} ({key.name}, scope {key.scope}):")
    typer.echo(token)
    console.print("Store it now: it is not stored and cannot be shown again. Send it as `Authorization: Bearer …`.")


@keys_app.command("list")
def list_keys(database: str | None = DatabaseOption,
              as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Every API key: id, name, scope, who made it, when, revoked or not (never the secret)."""
    found = api_keys.list_keys(open_for_cli(database))
    if as_json:
        typer.echo(json.dumps([k.to_json() for k in found], sort_keys=True))
        return
    table = Table("key id", "name", "scope", "created", "by", "state")
    for key in found:
        state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
        table.add_row(key.key_id, key.name, key.scope, f"{key.created_at:%Y-%m-%d %H:%M}", key.created_by, state)
    console.print(table if found else "No API keys. Make one with `ki keys create --name N --scope S`.")


@keys_app.command("revoke")
def revoke(key_id: str = typer.Argument(..., help="The key id (12 hex digits) from `ki keys list`."),
           database: str | None = DatabaseOption) -> None:
    """Revoke an API key: requests with it are refused from now on."""
    try:
        key = api_keys.revoke_key(open_for_cli(database), key_id, revoked_by=actor())
    except api_keys.ApiKeyError as exc:
        fail(str(exc))
    console.print(f"Revoked API key {key.key_id} ({key.name}, scope {key.scope}).")


def audit_log(
    after: int = typer.Option(0, "--after", help="Only entries with a larger id."),
    limit: int = typer.Option(100, "--limit", min=1, max=10_000),
    action: str | None = typer.Option(None, "--action", help="Only this action, e.g. bundle.upload."),
    database: str | None = DatabaseOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """The append-only audit log of every write: who, scope, action, object, time, client address."""
    from kernelindex.catalog import audit

    entries = audit.entries(open_for_cli(database), after=after, limit=limit, action=action)
    if as_json:
        typer.echo(json.dumps([e.to_json() for e in entries], sort_keys=True))
        return
    table = Table("id", "time (UTC)", "actor", "scope", "action", "outcome", "object", "client")
    for e in entries:
        table.add_row(str(e.id), f"{e.at:%Y-%m-%d %H:%M:%S}", e.actor, e.scope or "—", e.action, e.outcome,
                      (e.object_digest or "—")[:19], e.client or "—")
    console.print(table if entries else "The audit log is empty.")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
    app.command("audit")(audit_log)
