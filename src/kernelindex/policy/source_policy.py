"""Source policy as a rule: rows of a refused source are never stored.

One decision (``refusal_reason``) for every importer: the KernelIndex export importer asks it per
source, ``ki import jsonl`` per run through ``split_refused``, and the publication transaction
checks it again as a last guard."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from kernelindex.domain.manifests import Manifest, digest_of, manifest_json

REFUSED_BY_POLICY = "refused by source policy"
UNLISTED = ("the source has no entry in the source policy (no registered source package's policy.yaml names it: "
            "no license, attribution or publish decision)")


def refusal_reason(source_name: str, refused: Mapping[str, str], listed: Collection[str] | None = None) -> str | None:
    """Why rows of this source may not be stored, or None when they may. ``refused`` maps refused
    source names to their reasons (the registry's source policy); when ``listed`` (every source the
    policy names) is given, a source it does not name is refused too: a right to publish is never
    inferred from a row's presence in a file."""
    reason = refused.get(source_name)
    if reason is not None:
        return reason
    if listed is not None and source_name not in listed:
        return UNLISTED
    return None


def refusal_of(source_name: str, refused: Mapping[str, str], listed: Collection[str] | None = None) -> str | None:
    """``refusal_reason`` as a sentence naming the source."""
    reason = refusal_reason(source_name, refused, listed)
    return f"source {source_name!r} is {REFUSED_BY_POLICY}: {reason}" if reason is not None else None


@dataclass
class PolicySplit:
    """Manifests that may be stored, and what was refused: runs per source, and the other objects
    (the refused sources' Source manifests, and objects only their runs used)."""

    kept: list[Manifest] = field(default_factory=list)
    refused_runs: Counter = field(default_factory=Counter)  # source name → runs refused
    refused_objects: Counter = field(default_factory=Counter)  # kind → objects dropped with them
    reasons: dict[str, str] = field(default_factory=dict)  # source name → reason


def _references(data: dict, known: Collection[str]) -> set[str]:
    """The digests of batch objects a manifest's spec names (anywhere in it)."""
    found: set[str] = set()
    stack: list[object] = [data["spec"]]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if value in known:
                found.add(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def split_refused(
    manifests: Iterable[Manifest], refused: Mapping[str, str], listed: Collection[str] | None = None
) -> PolicySplit:
    """Drop every run of a refused source, the refused sources' Source manifests, and every object
    reachable only from what was dropped (a workload or implementation only refused runs measured;
    a retraction of a refused run). Objects that kept manifests use stay."""
    items = {digest_of(m): (m, manifest_json(m)) for m in manifests}
    split = PolicySplit()
    dropped: set[str] = set()
    for digest, (_, data) in items.items():
        name = data["spec"]["source"]["name"] if data["kind"] == "BenchmarkRun" else (
            data["spec"]["name"] if data["kind"] == "Source" else None)
        if name is not None and (reason := refusal_reason(name, refused, listed)) is not None:
            dropped.add(digest)
            split.reasons[name] = reason
            if data["kind"] == "BenchmarkRun":
                split.refused_runs[name] += 1
    refs = {d: _references(data, items.keys()) for d, (_, data) in items.items()}
    referenced = set().union(*refs.values()) if refs else set()
    roots = [d for d in items if d not in referenced and d not in dropped and not refs[d] & dropped]
    kept: set[str] = set()
    stack = list(roots)
    while stack:
        digest = stack.pop()
        if digest not in kept and digest not in dropped:
            kept.add(digest)
            stack.extend(refs[digest])
    for digest, (manifest, data) in items.items():
        if digest in kept:
            split.kept.append(manifest)
        elif data["kind"] != "BenchmarkRun":
            split.refused_objects[data["kind"]] += 1
    return split
