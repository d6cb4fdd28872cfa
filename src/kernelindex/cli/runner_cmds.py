"""``ki verify``, ``ki publish`` and ``ki runner keygen|trust``: the verification runner's commands.

torch is imported only inside ``ki verify``, so the other commands work without the runner extra.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from kernelindex import urls
from kernelindex.catalog.runners import trusted_runner_keys
from kernelindex.cli.common import DatabaseOption, actor, fail, open_for_cli
from kernelindex.cli.console import plain_console
from kernelindex.domain.manifests import OperationSpec, WorkloadCase, digest_of
from kernelindex.domain.sources import RUNNER_SOURCE
from kernelindex.readmodel.objects import workload_cases
from kernelindex.runner.report import print_results, workloads_from_file
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import (
    BundleError,
    NotAMeasurementError,
    UntrustedRunnerError,
    publish_verified,
    verify_directory,
)

console = plain_console()
err = Console(stderr=True)


# --- ki runner keygen / trust ---------------------------------------------------------------------

runner_app = typer.Typer(help="Runner keys: make one, or trust one in this catalog.", no_args_is_help=True)


@runner_app.command("keygen")
def keygen(
    out: Path = typer.Option(None, "--out", help="Directory for runner.key and runner.pub "
                             "(default: ~/.config/kernelindex/runner; .keys/ in a checkout is git-ignored)."),
    name: str = typer.Option(None, "--name", help="Runner name recorded in its runs (default: <host>-runner)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing key."),
) -> None:
    """Make an Ed25519 runner key. The private key never leaves this machine; publish runner.pub."""
    folder = out or runner_keys.default_key_dir()
    runner_name = name or f"{socket.gethostname().split('.')[0] or 'local'}-runner"
    try:
        private, public, key = runner_keys.generate(runner_name, folder, overwrite=force)
    except runner_keys.RunnerKeyError as exc:
        fail(str(exc))
    console.print(f"Private key: {private} (mode 600; keep it out of any repository)")
    console.print(f"Public key:  {public}")
    console.print(f"Key id:      {key.key_id}")
    console.print(f"Trust it in a catalog with: ki runner trust {public} --name {key.name}")


def _read_pubkey(pubkey: str, name: str | None) -> runner_keys.RunnerKey:
    if len(pubkey) == 64 and all(c in "0123456789abcdef" for c in pubkey):
        if not name:
            fail("a bare public key needs --name", code=2)
        from datetime import UTC, datetime

        return runner_keys.RunnerKey(runner_keys.validate_name(name), pubkey, datetime.now(UTC))
    key = runner_keys.load_public_key(Path(pubkey))
    if name and name != key.name:
        key = runner_keys.RunnerKey(runner_keys.validate_name(name), key.public_key, key.created_at)
    return key


@runner_app.command("trust")
def trust(
    pubkey: str = typer.Argument(..., help="A runner.pub file, or 64 hex digits of a raw Ed25519 public key."),
    name: str = typer.Option(None, "--name", help="Runner name (default: the name in the .pub file)."),
    database: str | None = DatabaseOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Register a runner key as trusted: its signed bundles publish as verified runs."""
    from kernelindex.catalog.publish import publish_manifests

    try:
        key = _read_pubkey(pubkey, name)
    except runner_keys.RunnerKeyError as exc:
        fail(str(exc), code=2)
    who = actor()
    manifest = key.trusted_runner_manifest(trusted_by=who)
    catalog = open_for_cli(database)
    report = publish_manifests(catalog, [manifest], actor=who, source="ki runner trust")
    already = not report.new
    if as_json:
        typer.echo(json.dumps({"key_id": key.key_id, "name": key.name, "manifest": digest_of(manifest),
                               "already_trusted": already, **report.to_json()}, sort_keys=True))
        return
    if already:
        trusted_as = trusted_runner_keys(catalog).get(key.key_id, key.name)
        console.print(f"Runner key {key.key_id} is already trusted (as {trusted_as}); nothing changed.")
        return
    console.print(f"Trusted runner {key.name} ({key.key_id}) — TrustedRunner {digest_of(manifest)}")


@runner_app.command("untrust")
def untrust(
    key: str = typer.Argument(..., help="The runner's key id (sha256:…), its runner.pub file, or 64 hex digits."),
    reason: str = typer.Option(..., "--reason", help="Why (recorded with the act), e.g. 'key leaked'."),
    database: str | None = DatabaseOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Stop trusting a runner key: its uploads and claims are refused, its runs no longer count as verified."""
    from kernelindex.catalog.runners import untrust_runner

    key_id = key.strip().lower()
    if not (key_id.startswith("sha256:") and len(key_id) == 71):
        try:
            key_id = _read_pubkey(key, None).key_id
        except runner_keys.RunnerKeyError as exc:
            fail(f"{exc} (or give the key id, sha256: and 64 hex digits)", code=2)
    if not reason.strip():
        fail("--reason must say why the key is no longer trusted", code=2)
    name = untrust_runner(open_for_cli(database), key_id, actor=actor(), reason=reason.strip())
    if as_json:
        typer.echo(json.dumps({"key_id": key_id, "name": name, "untrusted": name is not None}, sort_keys=True))
    elif name is None:
        console.print(f"Runner key {key_id} is not trusted here; nothing changed.")
    else:
        console.print(f"Runner {name} ({key_id}) is no longer trusted: its uploads and claims are refused.")
    if name is None:
        raise typer.Exit(1)


# --- ki publish -----------------------------------------------------------------------------------


def publish(
    bundle: Path = typer.Argument(..., help="A result bundle directory written by `ki verify`."),
    as_reported: bool = typer.Option(False, "--as-reported", help="Publish a bundle from an untrusted key; "
                                     "its runs stay 'reported'."),
    database: str | None = DatabaseOption,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    server: str = typer.Option(None, "--server", help="Upload to this KernelIndex server instead of writing to a "
                               "local catalog (POST /api/v1/bundles)."),
    api_key: str = typer.Option(None, "--api-key", envvar="KERNELINDEX_API_KEY",
                                help="With --server: an API key with scope bundles:write."),
) -> None:
    """Check a bundle's signature and every digest, then publish its runs (locally, or to --server).

    A bundle holds only regular files (symlinks, devices and pipes are refused unread); caps:
    bundle.json and bundle.sig 1 MiB, manifests.jsonl 64 MiB (1 MiB a line), each samples file
    16 MiB, 256 MiB and 10,000 files in all. See docs/reliability.md.
    """
    if server:
        _upload(bundle, server, api_key, as_json)
        return
    try:
        checked = verify_directory(bundle)
        report = publish_verified(open_for_cli(database), checked, allow_untrusted=as_reported, actor=actor(),
                                  locator=str(bundle))
    except UntrustedRunnerError as exc:
        fail(str(exc))
    except NotAMeasurementError as exc:
        fail(f"bundle {bundle} refused: {exc}")
    except BundleError as exc:
        fail(f"bundle refused: {exc}")
    if as_json:
        typer.echo(json.dumps({"bundle": checked.digest, "key_id": checked.key_id, "runner": checked.runner_name,
                               **report.to_json()}, sort_keys=True))
        return
    console.print(f"Bundle {checked.digest} signed by {checked.runner_name} ({checked.key_id}): signature and "
                  f"{len(checked.manifests)} manifests checked.")
    new, existing = dict(report.new), dict(report.existing)
    console.print(f"Published: {sum(new.values())} new ({_counts(new)}), {sum(existing.values())} already present.")


def _upload(bundle: Path, server: str, api_key: str | None, as_json: bool) -> None:
    import httpx

    from kernelindex.trust.bundles import read_bundle, verify_bundle
    from kernelindex.trust.uploads import pack_files

    if not api_key:
        fail("--server needs --api-key (or $KERNELINDEX_API_KEY) with scope bundles:write", code=2)
    try:
        files = read_bundle(bundle)
        checked = verify_bundle(files)  # what is sent is what was checked
        response = httpx.post(server.rstrip("/") + urls.api(urls.BUNDLES), content=pack_files(files), timeout=300,
                              headers={"authorization": f"Bearer {api_key}", "content-type": "application/gzip"})
    except BundleError as exc:
        fail(f"bundle refused before upload: {exc}")
    except httpx.HTTPError as exc:
        fail(f"cannot reach {server}: {exc}")
    body = response.json() if response.headers.get("content-type", "").endswith("json") else {}
    if response.status_code >= 400:
        fail(f"the server refused the bundle ({response.status_code} {body.get('title', '')}): "
             f"{body.get('detail', response.text[:500])}")
    if as_json:
        typer.echo(json.dumps({**body, "http_status": response.status_code}, sort_keys=True))
        return
    what = "already published (nothing written)" if response.status_code == 200 else "published"
    console.print(f"Bundle {checked.digest} signed by {checked.runner_name}: {what} on {server}, "
                  f"{len(body.get('runs', []))} runs.")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing"


# --- ki verify ------------------------------------------------------------------------------------


def catalog_workloads(catalog: Any, operation: OperationSpec, *, reference_only: bool) -> list[WorkloadCase]:
    """The operation's WorkloadCases in the catalog; ``reference_only``: those with runs from a source
    other than the KernelIndex runner (the reference cases, e.g. the imported Liger ones)."""
    return workload_cases(catalog, digest_of(operation), measured_by_other_than=RUNNER_SOURCE if reference_only
                          else None)


def _load_workloads(
    operation: OperationSpec, manifests: Path | None, database: str | None, selector: str
) -> list[WorkloadCase]:
    if manifests is not None:
        workloads = workloads_from_file(manifests, operation)
        where = str(manifests)
    else:
        from kernelindex.bootstrap import ensure_bundled_data

        catalog = open_for_cli(database)
        ensure_bundled_data(catalog)
        workloads = catalog_workloads(catalog, operation, reference_only=selector == "reference")
        where = catalog.display_location()
    if not workloads:
        fail(f"no workload cases of {operation.metadata.name} in {where}")
    return sorted(workloads, key=lambda w: sorted(w.spec.axes.items()))


def _runner_identity(key: Path) -> tuple[str, str]:
    private = runner_keys.load_private_key(key)
    public_hex = runner_keys.public_key_hex(private)
    pub_file = key.with_name(runner_keys.PUBLIC_KEY_FILE)
    name = runner_keys.load_public_key(pub_file).name if pub_file.exists() else "local-runner"
    return name, runner_keys.key_id_of(public_hex)


def verify(
    operation: str = typer.Option(..., "--operation", help="Operation slug (ki verify --help lists them)."),
    workloads: str = typer.Option("reference", "--workloads", help="reference | all | a case "
                                  "(digest prefix, or axis bindings such as seq=2048,hidden=8192)."),
    impl: str = typer.Option("baseline,liger,torch-compile", "--impl", help="Comma-separated adapters, by key or "
                             "by implementation line (liger-kernel-rope: what a run page names)."),
    region: str = typer.Option("", "--region", help="Comma-separated timed regions: forward, backward, "
                               "forward+backward (default: every region the runner times for the operation)."),
    out: Path = typer.Option(..., "--out", help="Directory for the signed result bundle (must be new or empty)."),
    key: Path = typer.Option(None, "--key", help="Runner private key (default: ~/.config/kernelindex/runner/"
                             "runner.key)."),
    manifests: Path = typer.Option(None, "--manifests", help="Read workload cases from this JSON Lines export "
                                   "instead of the catalog."),
    database: str | None = DatabaseOption,
    min_samples: int = typer.Option(100, min=10, help="Samples per implementation before the stop rule applies."),
    time_budget: float = typer.Option(4.0, min=0.1, help="Seconds of timing per case, all implementations."),
    calls_per_sample: int = typer.Option(10, min=1, max=100, help="Calls captured per CUDA graph."),
    no_graphs: bool = typer.Option(False, "--no-graphs", help="Per-call CUDA events instead of graph replay."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    protocol_version: str | None = typer.Option(None, "--protocol-version", help="The protocol version to measure "
                                                "under (a run page's command names its run's); others refused."),
) -> None:
    """Measure implementations on the local GPU: correctness first, then timing; write a signed bundle."""
    from kernelindex import registry
    _check_protocol_version(protocol_version)
    key = key or runner_keys.default_key_dir() / runner_keys.PRIVATE_KEY_FILE
    try:
        runner_name, key_id = _runner_identity(key)
        op = registry.load_operation(operation)
    except (runner_keys.RunnerKeyError, registry.RegistryError) as exc:
        fail(str(exc), code=2)
    if out.exists() and any(out.iterdir()):
        fail(f"{out} is not empty; choose a new directory for the bundle", code=2)
    try:
        from kernelindex.runner.campaign import select_workloads
        from kernelindex.runner.session import run_session
    except ImportError as exc:
        fail(f"`ki verify` needs the runner extra (pip install 'kernelindex[runner]'): {exc}")
    keys = [k.strip() for k in impl.split(",") if k.strip()]
    try:
        from kernelindex.domain.manifests import digest_of
        from kernelindex.runner.adapters import select
        from kernelindex.runner.campaign import case_regions, operation_def

        op_def = operation_def(operation)
        select(op_def, keys)
        regions = case_regions(op_def, [r.strip() for r in region.split(",") if r.strip()])
        cases = select_workloads(_load_workloads(op, manifests, database, workloads), workloads)
    except ValueError as exc:
        fail(str(exc), code=2)
    try:
        session = run_session(
            [(op, cases, keys, {digest_of(c): regions for c in cases})], key_path=key, runner_name=runner_name,
            key_id=key_id, out_dirs=[out],
            min_samples=min_samples, time_budget_s=time_budget, calls_per_sample=calls_per_sample,
            use_graphs=not no_graphs, console=None if as_json else err,
        )
    except (RuntimeError, ValueError, BundleError) as exc:
        fail(str(exc))
    _report_session(session, op.slug, out, runner_name, as_json)


def _check_protocol_version(asked: str | None) -> None:
    """Refuse (exit 2) a protocol version this runner does not measure: a run page's command names its run's."""
    from kernelindex.domain.sources import RUNNER_PROTOCOL_VERSION

    if asked is not None and asked.removeprefix("v") != RUNNER_PROTOCOL_VERSION:
        fail(f"--protocol-version {asked}: this runner measures protocol v{RUNNER_PROTOCOL_VERSION} only; "
             f"a run of another version is re-measured under v{RUNNER_PROTOCOL_VERSION} (omit the option) or with "
             "the KernelIndex release that measured it", code=2)


def _report_session(session: Any, operation: str, out: Path, runner_name: str, as_json: bool) -> None:
    """What ``ki verify`` measured: a table (or JSON) and the bundle to publish."""
    from kernelindex.runner.campaign import outcome_rows

    result = session.results[0]
    if not session.bundles:
        reasons = "; ".join(result.skipped.values()) or "no implementation ran"
        fail(f"nothing to put in a bundle: {reasons}")
    bundle = session.bundles[0]
    rows = outcome_rows(result)
    if as_json:
        typer.echo(json.dumps({"bundle": str(out), "digest": bundle.digest, "skipped": result.skipped,
                               "copy_bandwidth_bytes_per_s": session.copy_bandwidth, "runs": rows},
                              sort_keys=True))
        return
    print_results(console, operation, rows, result.skipped)
    console.print(f"Bundle {out} ({bundle.digest}), signed by {runner_name}. Publish it with: ki publish {out}")


def register(app: typer.Typer) -> None:
    """Add ``verify``, ``publish`` and ``runner keygen|trust`` to the ``ki`` command."""
    app.command("verify")(verify)
    app.command("publish")(publish)
    app.add_typer(runner_app, name="runner")
