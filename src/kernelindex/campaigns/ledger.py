"""Shipping what a campaign's device calls brought back, and its ledger.

Each call's ``OUT`` holds ``ledger.jsonl`` (one line per step: its outcome, seconds, the bundles it wrote) and
``bundles.tgz`` (every bundle of the machine so far). Shipping verifies each bundle, copies the newest copy of
each into ``data/verified`` (under ``NAME-b``, ``NAME-c`` … when another machine's bundle of that name is shipped:
a step re-run on a fresh machine), appends the supersessions a protocol v4 bundle's runs make (same workload, region,
implementation line and GPU under an older protocol; ``campaigns/supersede.py``; other kinds of re-measurement
are ``ki runner campaign supersede``'s) and writes the campaign's ledger,
``data/ledgers/NAME.md``, beside the bundles: the calls and their steps, each bundle with its runs, the
supersessions and their reason, and the steps left for a later campaign. The prose of what was learnt is the
engineer's to add below it; the tables are the record.
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.campaigns.drive import OUTCOMES
from kernelindex.campaigns.selection import DATA, SUPERSESSIONS, VERIFIED
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.trust.bundles import VerifiedBundle, verify_directory

LEDGERS = DATA / "ledgers"
STREAM_VERSION = "4"  # a bundle of this protocol supersedes the older protocols' runs of its calls on its GPU


class ShipError(ValueError):
    """What came back cannot be shipped as it is; the message names the call and the bundle."""


@dataclass
class BundleRow:
    name: str
    runner: str
    gpu: str
    statuses: Counter[str]
    under_sampled: int
    came_back_as: str = ""  # the name it came back under, when another bundle already held that name

    @property
    def runs(self) -> int:
        return sum(self.statuses.values())


@dataclass
class Shipment:
    name: str
    calls: list[tuple[Path, list[dict[str, Any]]]]
    bundles: list[BundleRow] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # shipped before, same contents
    supersessions: list[dict[str, str]] = field(default_factory=list)

    def steps_left(self) -> list[str]:
        """Steps whose last outcome is not done (here or in an earlier call), in the order first given."""
        last: dict[str, str] = {}
        for _, entries in self.calls:
            for entry in entries:
                last[entry["step"]] = entry["outcome"]
        return [step for step, outcome in last.items() if outcome not in ("done", "done earlier")]


def read_call(folder: Path) -> list[dict[str, Any]]:
    """The call's ledger lines; for a call of the shell drivers before the engine (no ``ledger.jsonl``), its
    steps as ``run.log`` says them (``[S s] STEP rc=N``)."""
    path = folder / "ledger.jsonl"
    if path.is_file():
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    log = folder / "run.log"
    if not log.is_file():
        raise ShipError(f"{folder}: neither ledger.jsonl nor run.log (not the OUT of a campaign call)")
    return [_from_log(match) for match in _LOG_STEP.finditer(log.read_text())]


_LOG_STEP = re.compile(r"^\[(\d+) s\] (\S+) rc=(\d+)", re.MULTILINE)


def _from_log(match: re.Match[str]) -> dict[str, Any]:
    rc = int(match.group(3))
    return {"gpu": "", "tag": "", "step": match.group(2), "rc": rc, "outcome": OUTCOMES.get(rc, "failed"),
            "seconds": "", "bundles": [], "left_s": "", "at_s": int(match.group(1))}


def _unpack(calls: list[Path], into: Path) -> dict[str, Path]:
    """Bundle name → its newest copy (later calls repack a warm machine's earlier bundles too)."""
    found: dict[str, Path] = {}
    for index, call in enumerate(calls):
        archive = call / "bundles.tgz"
        if not archive.is_file():
            continue
        target = into / str(index)
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        for bundle in sorted((target / "bundles").glob("[!.]*")):
            found[bundle.name] = bundle
    return found


def _row(name: str, bundle: VerifiedBundle, came_back_as: str) -> BundleRow:
    runs: list[Any] = bundle.runs()
    products = {m.spec.hardware.product for m in bundle.manifests if isinstance(m, ExecutionEnvironment)}
    return BundleRow(name, bundle.runner_name, ", ".join(sorted(products)), Counter(r.spec.status for r in runs),
                     sum(bool(r.spec.timing.under_sampled) for r in runs if r.spec.timing is not None),
                     came_back_as if came_back_as != name else "")


def _place(verified: Path, name: str, digest: str) -> Path | None:
    """Where a bundle that came back as ``name`` ships: that name, or (another machine's bundle already holds it,
    e.g. a step re-run on a fresh machine) the first free of ``NAME-b``, ``NAME-c`` …; None when it is shipped
    already under one of them."""
    for suffix in ["", *(f"-{letter}" for letter in "bcdefghijklmnopqrstuvwxyz")]:
        target = verified / f"{name}{suffix}"
        if not target.exists():
            return target
        if verify_directory(target).digest == digest:
            return None
    raise ShipError(f"{name}: 26 other bundles of that name are shipped; rename it by hand")


def ship(calls: list[Path], name: str, at: str, *, verified: Path = VERIFIED, supersessions: Path = SUPERSESSIONS,
         ledgers: Path = LEDGERS, supersede: bool = True) -> Shipment:
    """Ship the calls' bundles, their supersessions and the ledger ``ledgers/NAME.md`` (see the module)."""
    from kernelindex.campaigns.supersede import harness_version, lines

    shipment = Shipment(name, [(call, read_call(call)) for call in calls])
    with tempfile.TemporaryDirectory() as scratch:
        fresh: list[Path] = []
        for bundle_name, path in sorted(_unpack(calls, Path(scratch)).items()):
            bundle = verify_directory(path)
            target = _place(verified, bundle_name, bundle.digest)
            if target is None:
                shipment.already.append(bundle_name)
                continue
            shutil.copytree(path, target)
            fresh.append(target)
            shipment.bundles.append(_row(target.name, bundle, bundle_name))
        stream = [path for path in fresh if harness_version(path) == STREAM_VERSION]  # others: `supersede`'s kinds
        if supersede and stream:
            found = lines(stream, at, stream=True, verified=verified, supersessions=supersessions)
            shipment.supersessions = [json.loads(line) for line in found]
            with supersessions.open("a") as handle:
                handle.writelines(line + "\n" for line in found)
    ledgers.mkdir(parents=True, exist_ok=True)
    (ledgers / f"{name}.md").write_text(render(shipment))
    return shipment


def render(shipment: Shipment) -> str:
    out = [f"# Campaign {shipment.name}", "",
           "Written by `ki runner campaign ship` from the calls' `ledger.jsonl` (docs/campaigns.md).", "",
           "## Calls", "", "| call | GPU | step | outcome | rc | seconds | bundles written | call s left |",
           "|---|---|---|---|---|---|---|---|"]
    for number, (_, entries) in enumerate(shipment.calls, start=1):
        for e in entries:
            mode = " (dry run)" if e.get("dry_run") else f" (rehearsal, {e['rehearsal']})" if e.get("rehearsal") else ""
            out.append(f"| {number} | {e.get('gpu') or e.get('tag', '')}{mode} | `{e['step']}` | {e['outcome']} | "
                       f"{'' if e['rc'] is None else e['rc']} | {e['seconds']} | {', '.join(e['bundles']) or '—'} | "
                       f"{e['left_s']} |")
    notes = [f"- call {number}, `{e['step']}`: {e['note']}" for number, (_, entries) in
             enumerate(shipment.calls, start=1) for e in entries if e.get("note")]
    if notes:
        out += ["", *notes]
    out += ["", "## Bundles shipped", "", "| bundle | runner | GPU | runs | passed | under-sampled | other |",
            "|---|---|---|---|---|---|---|"]
    for b in shipment.bundles:
        other = ", ".join(f"{s} {n}" for s, n in sorted(b.statuses.items()) if s != "passed") or "—"
        renamed = f" (came back as {b.came_back_as})" if b.came_back_as else ""
        out.append(f"| {b.name}{renamed} | {b.runner} | {b.gpu} | {b.runs} | {b.statuses.get('passed', 0)} | "
                   f"{b.under_sampled} | {other} |")
    if shipment.already:
        out += ["", f"Shipped before, unchanged: {', '.join(shipment.already)}."]
    out += ["", "## Supersessions", ""]
    reasons = Counter(s["reason"] for s in shipment.supersessions)
    out += [f"- {count} older runs: {reason}" for reason, count in reasons.items()] or ["None."]
    left = shipment.steps_left()
    out += ["", "## Steps left", "", f"`{' '.join(left)}`" if left else "None: every step finished.", ""]
    return "\n".join(out)
