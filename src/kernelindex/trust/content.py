"""What a bundle may carry: one runner's measurement — runs signed by the bundle's key and the
objects they reference — and the errors that refuse a bundle."""

from __future__ import annotations

from kernelindex.domain.manifests import BenchmarkRun, ImplementationRevision, Manifest, Source, WorkloadCase, digest_of
from kernelindex.domain.sources import RUNNER_SOURCE
from kernelindex.trust.bundle_limits import SAMPLES_DIR

# What a measurement is: runs and the objects they reference. Trust (TrustedRunner), corrections
# (Retraction, Supersession) and every other kind are administrative acts with their own
# authorisation (`ki runner trust`, `ki retract`, `ki supersede`), never bundle content.
MEASUREMENT_KINDS = ("OperationSpec", "WorkloadCase", "SoftwareProject", "ImplementationRevision",
                     "BenchmarkProtocol", "ExecutionEnvironment", "Source", "BenchmarkRun")


class BundleError(ValueError):
    """A bundle that must not be published; the message says what failed."""


class UntrustedRunnerError(BundleError):
    """A correctly signed bundle whose key is not a trusted runner in this catalog."""


class NotAMeasurementError(BundleError):
    """A bundle carrying a manifest that is not part of a measurement (a TrustedRunner, a Retraction,
    a Supersession …), a Source its runs do not name, or an object no run references."""


def check_runner_names(bundle_name: str, runs: list[Manifest], key_id: str, trusted: dict[str, str]) -> None:
    """A runner's name comes from its key's registration, never from the bundle: a bundle of a trusted
    key names the runner exactly as it is trusted, and an untrusted bundle may not take the name of a
    runner trusted under another key."""
    names = {bundle_name} | {r.spec.runner.name for r in runs if isinstance(r, BenchmarkRun) and r.spec.runner}
    registered = trusted.get(key_id)
    if registered is not None and (wrong := sorted(names - {registered})):
        raise BundleError(f"the bundle names runner {', '.join(map(repr, wrong))}, but its key {key_id} is trusted "
                          f"here as {registered!r}; a runner's name comes from its key's registration, so sign the "
                          f"bundle as {registered!r} (`ki runner work` takes the name from its claim)")
    if registered is None and (taken := sorted(names & {n for k, n in trusted.items() if k != key_id})):
        raise BundleError(f"the bundle names runner {', '.join(map(repr, taken))}, a runner trusted here under "
                          f"another key; the bundle's key {key_id} may not use that name")


def check_kind(manifest: Manifest, where: str) -> None:
    """Refuse a manifest of a kind that is not part of a measurement (``where``: file and line)."""
    if manifest.kind not in MEASUREMENT_KINDS:
        raise NotAMeasurementError(
            f"{where}: a {manifest.kind} manifest; a bundle carries only a measurement "
            f"({', '.join(MEASUREMENT_KINDS)}). Trusting a runner, retracting or superseding a run is an "
            "operator's act (`ki runner trust`, `ki retract`, `ki supersede`), never bundle content; "
            "the whole bundle is refused")


def referenced_by_runs(manifests: list[Manifest]) -> set[str]:
    """The digests the runs reference: directly, or as an implementation's operation or project, or a
    workload's operation."""
    by_digest = {digest_of(m): m for m in manifests}
    stack = [getattr(m.spec, f) for m in manifests if isinstance(m, BenchmarkRun)
             for f in ("implementation", "workload", "protocol", "environment")]
    reached: set[str] = set()
    while stack:
        digest = stack.pop()
        if digest in reached:
            continue
        reached.add(digest)
        manifest = by_digest.get(digest)
        if isinstance(manifest, ImplementationRevision):
            stack += [manifest.spec.operation, manifest.spec.project]
        elif isinstance(manifest, WorkloadCase):
            stack.append(manifest.spec.operation)
    return reached


def measurement_only(manifests: list[Manifest]) -> list[Manifest]:
    """The runs and the objects they reference, in order: what a bundle of these runs may carry (a step
    cut by its time limit planned cases, implementations and regions it never measured)."""
    reached = referenced_by_runs(manifests)
    return [m for m in manifests if _measured(m, digest_of(m), reached)]


def _measured(manifest: Manifest, digest: str, reached: set[str]) -> bool:
    if isinstance(manifest, Source):
        return manifest.spec.name == RUNNER_SOURCE
    return isinstance(manifest, BenchmarkRun) or digest in reached


def check_measured(manifests: list[Manifest]) -> None:
    """A bundle is one runner's measurement: its runs are source kernelindex-runner, its Source
    manifest is that source, and every other object is referenced by one of its runs (directly, or
    as an implementation's operation or project, or a workload's operation)."""
    by_digest = {digest_of(m): m for m in manifests}
    runs = [m for m in manifests if isinstance(m, BenchmarkRun)]
    for run in runs:
        if run.spec.source.name != RUNNER_SOURCE:
            raise NotAMeasurementError(
                f"run {run.spec.source.external_id}: source {run.spec.source.name!r}; a bundle carries runs a "
                f"KernelIndex runner measured (source {RUNNER_SOURCE!r}); other sources are imported by an operator")
    reached = referenced_by_runs(manifests)
    for digest, manifest in by_digest.items():
        if not _measured(manifest, digest, reached):
            raise NotAMeasurementError(
                f"{manifest.kind} {manifest.metadata.name or digest}: no run of the bundle references it; a "
                "bundle carries only runs and the objects they reference, so the whole bundle is refused")


def check_references(manifests: list[Manifest], files: dict[str, str], key_id: str) -> None:
    """Every object a manifest references is in the bundle, every run is signed by the bundle's key, and
    every samples digest a run names is a file of the bundle."""
    digests = {digest_of(m) for m in manifests}
    sample_digests = {d for name, d in files.items() if name.startswith(f"{SAMPLES_DIR}/")}
    for manifest in manifests:
        if isinstance(manifest, ImplementationRevision):
            _require(digests, manifest.spec.operation, "operation", manifest)
            _require(digests, manifest.spec.project, "project", manifest)
        if isinstance(manifest, WorkloadCase):
            _require(digests, manifest.spec.operation, "operation", manifest)
        if not isinstance(manifest, BenchmarkRun):
            continue
        spec = manifest.spec
        for name in ("implementation", "workload", "protocol", "environment"):
            _require(digests, getattr(spec, name), name, manifest)
        if spec.runner is None or spec.runner.key_id != key_id:
            raise BundleError(f"run {spec.source.external_id}: runner.key_id is not the signing key {key_id}")
        if spec.timing.samples_digest is not None and spec.timing.samples_digest not in sample_digests:
            raise BundleError(
                f"run {spec.source.external_id}: samples {spec.timing.samples_digest} are not in the bundle"
            )


def _require(digests: set[str], digest: str, what: str, manifest: Manifest) -> None:
    if digest not in digests:
        name = manifest.metadata.name or manifest.kind
        raise BundleError(f"{manifest.kind} {name}: its {what} {digest} is not in the bundle")
