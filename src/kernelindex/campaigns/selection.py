"""Which cases a campaign measures, chosen from the shipped verified runs (``data/verified`` and the shipped
supersessions): what a GPU lacks verified evidence for, and what a protocol change must re-measure there.

A run is *current* while no shipped supersession names it as the old run. Two rules, each over current runs:

- ``missing``: a (workload, region, implementation line) verified on some GPU has no current run on ``gpu``;
- ``older``: a current run on ``gpu`` was measured under a protocol older than ``protocol`` (e.g. every v1–v3
  run once v4 exists).

The plan keeps each chosen case's WorkloadCase line byte for byte (same digest) and the regions to measure, in
the folder a campaign step reads (``cases.jsonl``, ``regions.json``), and names one step per operation, the
cheapest first (``OperationPlan.estimated_s``): a call that ends early has then finished the most operations, and
an operation whose calls take milliseconds (the distillation losses at a vocabulary of 128k: minutes a case under
v4) waits for the end instead of filling a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.domain.manifests import digest_of, parse_manifest_text

DATA = Path(__file__).resolve().parents[1] / "data"
VERIFIED = DATA / "verified"
SUPERSESSIONS = DATA / "supersessions.jsonl"
RULES = ("missing", "older")
# What a v4 run costs the GPU, for ordering a plan's steps (an estimate, not a budget): about 50 replays of at least
# 32 calls each, a few seconds of setup per run (inputs, first call, checks, cross-check), and its compilation where
# a shipped run of it recorded one.
SAMPLED_CALLS_PER_RUN = 50 * 32
SETUP_S_PER_RUN = 2.0
_KERNELBENCH_LEVEL = re.compile(r"kernelbench-level(\d+)")


@dataclass(frozen=True)
class ShippedRun:
    """One verified run of a shipped bundle, as a campaign plan needs it."""

    digest: str
    bundle: str
    operation: str  # the operation's slug
    workload: str
    region: str
    line: str  # the implementation line (its ImplementationRevision's name)
    gpu: str  # the environment's hardware product, as the machine reported it
    protocol_version: str
    protocol_name: str
    figure_ns: float | None = None  # the run's ranked figure (its timing's median), when it recorded one
    compile_ns: float | None = None  # its first call's compilation and autotuning, when it recorded them


@dataclass
class Shipped:
    """Every shipped verified run, the WorkloadCase lines they measure, and the runs superseded."""

    runs: list[ShippedRun]
    cases: dict[str, bytes]  # workload digest → its manifest line, byte for byte
    superseded: set[str]

    def current(self) -> list[ShippedRun]:
        return [r for r in self.runs if r.digest not in self.superseded]

    def gpus(self) -> list[str]:
        return sorted({r.gpu for r in self.runs})


def read_shipped(verified: Path = VERIFIED, supersessions: Path = SUPERSESSIONS) -> Shipped:
    """Every bundle folder under ``verified`` (manifests parsed, not re-verified: start-up verifies them)."""
    runs: list[ShippedRun] = []
    cases: dict[str, bytes] = {}
    for folder in sorted(p for p in verified.iterdir() if (p / "manifests.jsonl").is_file()):
        runs += _bundle_runs(folder, cases)
    superseded = {json.loads(line)["old"] for line in supersessions.read_text().splitlines() if line.strip()} \
        if supersessions.exists() else set()
    return Shipped(runs, cases, superseded)


def _bundle_runs(folder: Path, cases: dict[str, bytes]) -> list[ShippedRun]:
    text = (folder / "manifests.jsonl").read_bytes()
    parsed: list[tuple[bytes, Any]] = [(line, parse_manifest_text(line)) for line in text.splitlines() if line.strip()]
    by_digest: dict[str, Any] = {digest_of(m): m for _, m in parsed}
    out = []
    for line, m in parsed:
        if m.kind == "WorkloadCase":
            cases.setdefault(digest_of(m), line)
        elif m.kind == "BenchmarkRun":
            protocol = by_digest[m.spec.protocol]
            operation = by_digest[by_digest[m.spec.workload].spec.operation]
            out.append(ShippedRun(
                digest=digest_of(m), bundle=folder.name, operation=operation.metadata.name or "",
                workload=m.spec.workload, region=protocol.spec.timed_region,
                line=by_digest[m.spec.implementation].metadata.name or m.spec.implementation,
                gpu=by_digest[m.spec.environment].spec.hardware.product,
                protocol_version=protocol.spec.harness.version, protocol_name=protocol.metadata.name or "",
                figure_ns=m.spec.timing.median_ns, compile_ns=m.spec.timing.secondary.get("compile_ns")))
    return out


def resolve_gpu(name: str, known: Iterable[str]) -> str:
    """The shipped GPU product ``name`` means: itself, or the one product containing it (``H100``)."""
    known = sorted(set(known))
    if name in known:
        return name
    found = [k for k in known if name.lower() in k.lower()]
    if len(found) != 1:
        raise ValueError(f"GPU {name!r} names {'none' if not found else 'several'} of the shipped GPUs "
                         f"({', '.join(known)}); give one of them or a part only it contains")
    return found[0]


Key = tuple[str, str, str, str]  # operation, workload, region, line


def missing_on(runs: list[ShippedRun], gpu: str) -> set[Key]:
    """What has a current run on another GPU and none on ``gpu``."""
    here = {(r.operation, r.workload, r.region, r.line) for r in runs if r.gpu == gpu}
    return {(r.operation, r.workload, r.region, r.line) for r in runs if r.gpu != gpu} - here


def older_on(runs: list[ShippedRun], gpu: str, protocol: str) -> set[Key]:
    """What has a current run on ``gpu`` under a protocol older than ``protocol`` (versions compare as numbers)."""
    return {(r.operation, r.workload, r.region, r.line) for r in runs
            if r.gpu == gpu and _version(r.protocol_version) < _version(protocol)}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)) or (0,)


@dataclass
class OperationPlan:
    operation: str
    regions: dict[str, list[str]] = field(default_factory=dict)  # workload digest → regions
    lines: set[str] = field(default_factory=set)
    timed_ns: float = 0.0  # the chosen runs' figures added up (each key's slowest current figure on any GPU)
    compile_ns: float = 0.0  # … and their compilations (each key's slowest recorded one)
    runs: int = 0  # the chosen (workload, region, line) keys

    @property
    def case_regions(self) -> int:
        return sum(len(r) for r in self.regions.values())

    @property
    def estimated_s(self) -> float:
        """Roughly what measuring the operation's chosen runs costs the GPU (``SAMPLED_CALLS_PER_RUN`` calls of
        each at its known figure, its known compilation, plus ``SETUP_S_PER_RUN`` each)."""
        return (self.timed_ns * SAMPLED_CALLS_PER_RUN + self.compile_ns) / 1e9 + self.runs * SETUP_S_PER_RUN


@dataclass
class CampaignPlan:
    gpu: str
    rule: str
    protocol: str
    operations: dict[str, OperationPlan]  # runnable by the runner's adapters
    kernelbench: dict[str, int]  # KernelBench level → runs to measure (the problem-module campaign)
    other: dict[str, int]  # operation → runs no campaign step can measure (no runner definition)

    def steps(self, adapter_keys: dict[str, dict[str, str]]) -> list[str]:
        """One step per operation (``OP``, or ``OP:0:0::::::KEYS`` when only some adapters are due), the cheapest
        first (``estimated_s``, then the name), then one KernelBench step per level. ``adapter_keys``: operation →
        implementation line → adapter key."""
        out = []
        for slug, op in sorted(self.operations.items(), key=lambda item: (item[1].estimated_s, item[0])):
            lines = adapter_keys.get(slug, {})
            keys = sorted({lines[line] for line in op.lines if line in lines})
            every = not keys or len(keys) == len(set(lines.values()))  # no line known here: every adapter
            out.append(slug if every else f"{slug}:0:0:::::{','.join(keys)}")
        out += [f"kernelbench:{level}:eager,torch-compile" for level in sorted(self.kernelbench)]
        return out


def runner_operations() -> dict[str, dict[str, str]]:
    """The operations the runner can verify here → implementation line → adapter key."""
    from kernelindex.runner.ops import operations

    return {slug: {a.line: a.key for a in op.adapters()} for slug, op in operations().items() if not op.unavailable}


def plan(shipped: Shipped, gpu: str, rule: str, *, protocol: str = "4", runnable: Iterable[str] = (),
         operations: Iterable[str] = (), under_ns: float | None = None) -> CampaignPlan:
    """The plan of ``rule`` for ``gpu`` (already resolved); ``runnable``: the operations the runner defines;
    ``operations``: keep only these (all when empty); ``under_ns``: only calls whose current run on ``gpu`` (rule
    older) or on any GPU (rule missing) is faster than this — issue 42 re-measures the short calls first."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    current = shipped.current()
    chosen = missing_on(current, gpu) if rule == "missing" else older_on(current, gpu, protocol)
    if under_ns is not None:
        chosen &= _faster_than(current, gpu if rule == "older" else None, under_ns)
    wanted, can_run = set(operations), set(runnable)
    bundles = {(r.operation, r.workload, r.region, r.line): r.bundle for r in current}
    slowest, compiles = _slowest(current, "figure_ns"), _slowest(current, "compile_ns")
    result = CampaignPlan(gpu, rule, protocol, {}, {}, {})
    for key in sorted(chosen):
        slug, workload, region, line = key
        if wanted and slug not in wanted:
            continue
        level = _KERNELBENCH_LEVEL.search(bundles[key])
        if slug in can_run:
            op = result.operations.setdefault(slug, OperationPlan(slug))
            regions = op.regions.setdefault(workload, [])
            if region not in regions:
                regions.append(region)
            op.lines.add(line)
            op.timed_ns += slowest.get(key, 0.0)
            op.compile_ns += compiles.get(key, 0.0)
            op.runs += 1
        elif level:
            result.kernelbench[level.group(1)] = result.kernelbench.get(level.group(1), 0) + 1
        else:
            result.other[slug] = result.other.get(slug, 0) + 1
    return result


def protocol_share(shipped: Shipped, gpu: str, protocol: str, under_ns: float | None) -> tuple[int, int]:
    """(current passed-or-not runs on ``gpu`` faster than ``under_ns``, those of them under ``protocol``)."""
    runs = [r for r in shipped.current() if r.gpu == gpu and r.figure_ns is not None
            and (under_ns is None or r.figure_ns < under_ns)]
    return len(runs), sum(1 for r in runs if _version(r.protocol_version) >= _version(protocol))


def _slowest(runs: list[ShippedRun], field_name: str) -> dict[Key, float]:
    """Each key's largest current ``figure_ns`` or ``compile_ns`` on any GPU: what its run is likely to cost on the
    next one."""
    found: dict[Key, float] = {}
    for r in runs:
        key, value = (r.operation, r.workload, r.region, r.line), getattr(r, field_name)
        if value is not None and value > found.get(key, 0.0):
            found[key] = float(value)
    return found


def _faster_than(runs: list[ShippedRun], gpu: str | None, under_ns: float) -> set[Key]:
    return {(r.operation, r.workload, r.region, r.line) for r in runs
            if (gpu is None or r.gpu == gpu) and r.figure_ns is not None and r.figure_ns < under_ns}


def write_cases(campaign: CampaignPlan, shipped: Shipped, out: Path) -> dict[str, int]:
    """The plan's cases as a campaign step reads them: ``cases.jsonl`` (lines byte for byte) and ``regions.json``."""
    regions = {w: sorted(rs) for op in campaign.operations.values() for w, rs in op.regions.items()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases.jsonl").write_bytes(b"".join(shipped.cases[d] + b"\n" for d in sorted(regions)))
    (out / "regions.json").write_text(json.dumps(dict(sorted(regions.items())), indent=1))
    return {"cases": len(regions), "case_regions": sum(len(r) for r in regions.values())}
