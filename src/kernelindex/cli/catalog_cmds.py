"""Catalog commands: import, export, manifest validate|digest, retract, supersede."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.export import JsonlError, import_jsonl, write_export
from kernelindex.catalog.lifecycle import UnknownRunError, approve_install, retract, supersede
from kernelindex.catalog.publish import PublishError
from kernelindex.cli.common import DatabaseOption, actor, fail, open_for_cli, print_json
from kernelindex.cli.console import console
from kernelindex.domain.manifests import ManifestError, digest_of, load_manifest_file
from kernelindex.policy.source_policy import REFUSED_BY_POLICY

import_app = typer.Typer(help="Import a source into the catalog.", no_args_is_help=True)
manifest_app = typer.Typer(help="Validate manifests and compute their identity.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.add_typer(manifest_app, name="manifest")
    app.command("export")(export_cmd)
    app.command("retract")(retract_cmd)
    app.command("supersede")(supersede_cmd)
    app.command("approve")(approve_cmd)


@import_app.command("jsonl")
def import_jsonl_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A `ki export` file."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and count; write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable report."),
    database: str = DatabaseOption,
) -> None:
    """Import a JSON Lines export (one manifest per line).

    The source policy (each source package's policy.yaml) applies as in every importer: runs of a refused
    source, or of a source the policy does not list, are counted "refused by source policy" and
    never stored, nor are the objects only they used.

    Limits per line (decompressed bytes): 1 MiB, 32 levels of nesting, 10,000 JSON values,
    integers within ±2^53. Any invalid line refuses the whole file; the first 20 problems are
    listed with their line numbers and the rest counted. See docs/reliability.md.
    """
    catalog = open_for_cli(database)
    try:
        report = import_jsonl(catalog, file, actor=actor(), dry_run=dry_run,
                              refused=registry.refused_sources(), listed=registry.source_policies())
    except (JsonlError, PublishError) as exc:
        fail(str(exc))
    if as_json:
        print_json(report.to_json())
        return
    done = report.published
    console.print(f"{'dry run' if dry_run else 'imported'}: new {dict(done.new)} existing {dict(done.existing)}")
    for name, reason in sorted(report.policy.reasons.items()):
        runs = report.policy.refused_runs[name]
        console.print(f"{REFUSED_BY_POLICY}: {escape(name)} — {runs:,} run(s) not stored: {escape(reason)}")
    if report.policy.refused_objects:
        console.print(f"not stored with them (used only by refused runs): {dict(report.policy.refused_objects)}")


def export_cmd(
    output: Path = typer.Option(None, "--output", "-o", help="File to write (default: standard output)."),
    database: str = DatabaseOption,
) -> None:
    """Write the whole catalog as JSON Lines, sources (license, attribution) first."""
    from kernelindex.catalog.export import source_header_lines
    from kernelindex.readmodel.objects import export_lines

    catalog = open_for_cli(database)
    for line in source_header_lines(catalog):
        typer.echo(f"# {line}", err=True)
    if output is None:
        for line in export_lines(catalog):
            typer.echo(line)
        return
    count = write_export(catalog, output)
    console.print(f"wrote {count:,} manifests to {escape(str(output))}")


@manifest_app.command("validate")
def validate_cmd(files: list[Path] = typer.Argument(..., exists=True, dir_okay=False)) -> None:
    """Validate manifests; every problem is printed with its document and field.

    Limits per file: 1 MiB, 32 levels of nesting, 10,000 JSON values, integers within ±2^53;
    at most 20 problems are listed per file, the rest counted. See docs/reliability.md.
    """
    bad = 0
    for path in files:
        try:
            manifest = load_manifest_file(path)
            console.print(f"[green]ok[/] {escape(str(path))} ({manifest.kind}) {digest_of(manifest)}", highlight=False)
        except ManifestError as exc:
            bad += 1
            for problem in exc.problems:
                console.print(f"[red]invalid[/] {escape(exc.document)}: {escape(problem)}", highlight=False)
            if exc.more:
                console.print(f"[red]invalid[/] {escape(exc.document)}: … and {exc.more:,} more problems")
    if bad:
        raise typer.Exit(1)


@manifest_app.command("digest")
def digest_cmd(file: Path = typer.Argument(..., exists=True, dir_okay=False)) -> None:
    """Print the identity digest: sha256 over the RFC 8785 form of {apiVersion, kind, spec}."""
    try:
        typer.echo(digest_of(load_manifest_file(file)))
    except ManifestError as exc:
        fail(str(exc))


def retract_cmd(
    run: str = typer.Argument(..., help="Run id (16 hex digits) or digest."),
    reason: str = typer.Option(..., "--reason", help="Why; shown on the run's page."),
    database: str = DatabaseOption,
) -> None:
    """Retract a run: it stays readable with a banner and leaves every ranking and count."""
    fact = _record_act(database, reason, "why the run is retracted",
                       lambda catalog, who: retract(catalog, run, reason=reason, actor=who))
    console.print(f"retracted {escape(run)} ({fact})")


def supersede_cmd(
    new: str = typer.Argument(..., help="The run that replaces."),
    old: str = typer.Argument(..., help="The run that is replaced."),
    reason: str = typer.Option(..., "--reason", help="Why; shown on both runs' pages."),
    database: str = DatabaseOption,
) -> None:
    """Record that NEW supersedes OLD; OLD leaves rankings and links to NEW."""
    fact = _record_act(database, reason, "why NEW replaces OLD",
                       lambda catalog, who: supersede(catalog, new, old, reason=reason, actor=who))
    console.print(f"{escape(new)} supersedes {escape(old)} ({fact})")


def approve_cmd(
    line: str = typer.Argument(..., help="The implementation line (its slug, e.g. liger-kernel-rope)."),
    reason: str = typer.Option(..., "--reason", help="What was checked: the package, its index, the pins."),
    database: str = DatabaseOption,
) -> None:
    """Approve the install line a runner's bundle proposed for a new implementation line (held until then)."""
    _record_act(database, reason, "what was checked of the install recipe",
                lambda catalog, who: approve_install(catalog, line, reason=reason, actor=who))
    console.print(f"approved the install line of {escape(line)}")


def _record_act(database: str, reason: str, reason_says: str, act: Callable[[Catalog, str], object]) -> object:
    """Retraction and supersession are administrative acts (catalog.lifecycle): each needs a reason, names
    its actor, and refuses an unknown or ill-matched run with the catalog's own words."""
    if not reason.strip():
        fail(f"--reason must say {reason_says}", code=2)
    try:
        return act(open_for_cli(database), actor())
    except (UnknownRunError, ValueError) as exc:
        fail(str(exc))
