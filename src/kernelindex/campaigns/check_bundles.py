"""Check runner bundles before they ship: each one verifies (signature, every file digest, every
reference resolves), is signed by the expected runner key, and names the catalog's identities — its
OperationSpec is the registry's, every WorkloadCase is one of the catalog's reference cases (the cases
other sources measured), and every SoftwareProject the catalog also holds has the catalog's digest.
Prints per bundle the runs by status and region, and the implementations (new ones said so).

    ki runner campaign check --pub RUNNER.pub BUNDLE... [--database URL]

The catalog is the one at --database (default KERNELINDEX_DATABASE_URL); it must hold the Liger import
(``ki import liger --publish``), whose cases the runner measures. Exit status 1 if any check fails.

Compare two runs of the same cases (a same-runner re-run on another machine):

    ki runner campaign check compare BUNDLE_A BUNDLE_B [--within 0.03]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import digest_of


def _runs_by_key(path: Path) -> dict[tuple[str, str, str], float]:
    from kernelindex.trust.bundles import verify_directory

    bundle = verify_directory(path)
    by_digest: dict[str, Any] = {digest_of(m): m for m in bundle.manifests}
    out = {}
    for run in bundle.runs():
        spec: Any = run.spec
        impl = by_digest[spec.implementation].metadata.name or spec.implementation
        proto = by_digest[spec.protocol].spec.timed_region
        out[(spec.workload, proto, impl)] = float(spec.timing.median_ns)
    return out


def compare(a: Path, b: Path, within: float) -> int:
    ra, rb = _runs_by_key(a), _runs_by_key(b)
    common = sorted(set(ra) & set(rb))
    diffs = [abs(rb[k] / ra[k] - 1) for k in common]
    close = sum(d <= within for d in diffs)
    print(f"{a.name} vs {b.name}: {len(common)} runs in both, {close} within {within:.0%}, "
          f"median |diff| {statistics.median(diffs):.2%}, largest {max(diffs):.2%}")
    for k in common:
        if abs(rb[k] / ra[k] - 1) > within:
            print(f"  {k[1]} {k[2]} workload {k[0][:19]}: {ra[k] / 1e3:.1f} vs {rb[k] / 1e3:.1f} µs")
    return 0


def check(paths: list[Path], pub: Path, database: str | None) -> int:
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.objects import software_project_digests, workload_cases
    from kernelindex.trust import keys
    from kernelindex.trust.bundles import BundleError, verify_directory

    expected = keys.load_public_key(pub)
    catalog = open_catalog(database)
    projects = software_project_digests(catalog)
    failed = False
    for path in paths:
        try:
            bundle = verify_directory(path)
        except BundleError as exc:
            print(f"{path.name}: REFUSED {exc}")
            failed = True
            continue
        problems = []
        if bundle.key_id != expected.key_id or bundle.runner_name != expected.name:
            problems.append(f"signed by {bundle.runner_name} {bundle.key_id}, not {expected.name} {expected.key_id}")
        ops = [m for m in bundle.manifests if m.kind == "OperationSpec"]
        for op in ops:
            if digest_of(op) != digest_of(registry.load_operation(op.metadata.name or "")):
                problems.append(f"OperationSpec {op.metadata.name} differs from the registry's")
        reference = {digest_of(w) for op in ops
                     for w in workload_cases(catalog, digest_of(op), measured_by_other_than="kernelindex-runner")}
        cases = [m for m in bundle.manifests if m.kind == "WorkloadCase"]
        stray = [digest_of(w) for w in cases if digest_of(w) not in reference]
        if stray:
            problems.append(f"{len(stray)} of {len(cases)} WorkloadCases are not catalog reference cases")
        for project in (m for m in bundle.manifests if m.kind == "SoftwareProject"):
            known = projects.get(project.metadata.name or "")
            if known is not None and known != digest_of(project):
                problems.append(f"SoftwareProject {project.metadata.name} differs from the registry's")
        runs: list[Any] = bundle.runs()
        statuses = Counter(r.spec.status for r in runs)
        by_digest: dict[str, Any] = {digest_of(m): m for m in bundle.manifests}
        regions = Counter(by_digest[r.spec.protocol].spec.timed_region for r in runs)
        impls = sorted({by_digest[r.spec.implementation].metadata.name or "?" for r in runs})
        print(f"{path.name}: digest {bundle.digest[:19]}… runner {bundle.runner_name}; {len(runs)} runs "
              f"{dict(statuses)}; regions {dict(regions)}; {len(cases)} cases (all catalog reference cases: "
              f"{not stray}); implementations {impls}")
        for problem in problems:
            print(f"  PROBLEM {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        p = argparse.ArgumentParser(prog="ki runner campaign check compare")
        p.add_argument("a", type=Path)
        p.add_argument("b", type=Path)
        p.add_argument("--within", type=float, default=0.03)
        args = p.parse_args(argv[1:])
        return compare(args.a, args.b, args.within)
    p = argparse.ArgumentParser(prog="ki runner campaign check", description=__doc__.split("\n\n")[0])
    p.add_argument("bundles", type=Path, nargs="+")
    p.add_argument("--pub", type=Path, required=True)
    p.add_argument("--database", default=None)
    args = p.parse_args(argv)
    return check(args.bundles, args.pub, args.database)


if __name__ == "__main__":
    sys.exit(main())
