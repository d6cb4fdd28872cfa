"""Evidence levels, derived from stored facts (first match wins):
replicated > verified > reproducible > reported."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

LEVELS = ("replicated", "verified", "reproducible", "reported")
LEVEL_ORDER = {level: i for i, level in enumerate(LEVELS)}
# A trusted runner measured it (and, replicated, a second one agreed): what "verified" means on every page.
VERIFIED_LEVELS = ("verified", "replicated")
REPLICATION_AGREEMENT = 0.05

SENTENCES = {
    "replicated": "Verified by at least two independent trusted runners on the same GPU; medians agree within 5%.",
    "verified": "Measured by a trusted KernelIndex runner with correctness checked against the reference.",
    "reproducible": "Public source, pinned install and raw samples are all present.",
    "reported": "Reported by source; not independently reproduced.",
}


@dataclass(frozen=True)
class EvidenceFacts:
    run: str
    implementation: str
    workload: str
    gpu: str
    median_ns: int | None
    runner_key_id: str | None  # the key that signed the bundle the run came in
    attested: bool  # its bundle signature and digests were checked at publish
    correctness_passed: bool  # correctness checked against the reference and passed
    public_source: bool
    pinned_install: bool
    raw_samples: bool
    region: str = "forward"  # the protocol's timed region: only runs of the same region replicate each other
    # What the median is: "device" (runner v3's CUPTI device time) or "" (graph replay, events, a source's
    # own timer). A device time never confirms a graph-replay time, nor the reverse.
    statistic: str = ""
    # The protocol's input rule (``input_rule`` of its ``input_regeneration``): a loss's backward from
    # upstream gradient 1.0 and one from a random scalar are different measurements; neither replicates the other.
    inputs: str = ""
    # Whether the timed call ran with autograd off (``grad_mode``): a forward under torch.no_grad() and one
    # that records an autograd graph are different calls (Inductor even compiles a different graph).
    grad_mode: str = ""
    # The runner protocol's version (harness version): "replicated" means two runner identities agreeing under
    # the same protocol, so a v3 device time never confirms a v4 stream time, whatever the figures.
    protocol_version: str = ""
    # A superseded run (a newer protocol re-measured it) keeps its own level as history, but never makes
    # another run replicated, and is never replicated itself.
    superseded: bool = False


UPSTREAM_ONE = "upstream gradient 1.0"


def input_rule(input_regeneration: str) -> str:
    """The part of a protocol's input rule that changes what a call computes: the upstream gradient a loss's
    backward starts from (1.0, as loss.backward() sends, or a random scalar). The rest of the wording is
    not compared: runner v1 said "one further fresh input set per implementation", v2 "... per
    implementation and region", for the same inputs of one forward."""
    return UPSTREAM_ONE if UPSTREAM_ONE in input_regeneration else "random upstream gradient"


NO_GRAD = "autograd off"


def grad_mode(protocol_timer: str) -> str:
    """Whether a protocol times its call under torch.no_grad() ("autograd off") or with autograd as the call
    leaves it (""). Read from the protocol's signed timer text, as ``input_rule`` reads the input rule: runner
    protocols have no field for it (the region "forward-no-grad" is another region, and KernelBench's own
    figures, timed under no_grad, are its "forward"), and the signed text of shipped protocols cannot change."""
    return NO_GRAD if "torch.no_grad()" in protocol_timer else ""


def _replication_key(facts: EvidenceFacts) -> tuple[str, str, str, str, str, str, str, str]:
    """Runs that may replicate each other: one implementation revision, workload, GPU product, timed
    region (a backward time never confirms a forward one), statistic (device time, stream time or neither),
    input rule (upstream gradient 1.0 or a random scalar), autograd mode and protocol version. Not the whole
    protocol: two runners that differ only in warm-up or time budget measure the same thing."""
    return (facts.implementation, facts.workload, facts.gpu, facts.region, facts.statistic, facts.inputs,
            facts.grad_mode, facts.protocol_version)


def _replicates(facts: EvidenceFacts, trusted_keys: set[str]) -> bool:
    """A run that may take part in replication: verified, with a figure, and not superseded."""
    return _verified(facts, trusted_keys) and facts.median_ns is not None and not facts.superseded


def _verified(facts: EvidenceFacts, trusted_keys: set[str]) -> bool:
    return bool(facts.runner_key_id in trusted_keys and facts.attested and facts.correctness_passed)


def evidence_levels(runs: Iterable[EvidenceFacts], trusted_keys: set[str]) -> dict[str, str]:
    """Evidence level per run id. Needs the whole set: replication compares runs with each other."""
    runs = list(runs)
    levels: dict[str, str] = {}
    verified_groups: dict[tuple[str, ...], list[EvidenceFacts]] = defaultdict(list)
    for facts in runs:
        if _verified(facts, trusted_keys):
            if _replicates(facts, trusted_keys):
                verified_groups[_replication_key(facts)].append(facts)
            levels[facts.run] = "verified"
        elif facts.public_source and facts.pinned_install and facts.raw_samples:
            levels[facts.run] = "reproducible"
        else:
            levels[facts.run] = "reported"
    for group in verified_groups.values():
        for facts in group:
            if _replicated(facts, group):
                levels[facts.run] = "replicated"
    return levels


def _replicated(facts: EvidenceFacts, group: list[EvidenceFacts]) -> bool:
    if facts.median_ns is None:
        return False
    return any(
        other.runner_key_id != facts.runner_key_id and other.median_ns is not None and _agree(facts, other)
        for other in group
    )


@dataclass(frozen=True)
class PeerRun:
    """A verified run of the same implementation revision, workload and GPU by another trusted runner."""

    run: str
    runner_key_id: str
    median_ns: int
    agrees: bool  # medians within REPLICATION_AGREEMENT of each other


def replication_peers(runs: Iterable[EvidenceFacts], trusted_keys: set[str]) -> dict[str, list[PeerRun]]:
    """Per verified run, the verified runs of other trusted runners it is compared with, each marked
    agreeing or disagreeing. A disagreement is shown as such, never averaged away."""
    groups: dict[tuple[str, ...], list[EvidenceFacts]] = defaultdict(list)
    for facts in runs:
        if _replicates(facts, trusted_keys):
            groups[_replication_key(facts)].append(facts)
    peers: dict[str, list[PeerRun]] = {}
    for group in groups.values():
        for facts in group:
            found = [
                PeerRun(other.run, str(other.runner_key_id), int(other.median_ns or 0), _agree(facts, other))
                for other in group
                if other.runner_key_id != facts.runner_key_id
            ]
            if found:
                peers[facts.run] = found
    return peers


def _agree(a: EvidenceFacts, b: EvidenceFacts) -> bool:
    assert a.median_ns is not None and b.median_ns is not None
    return abs(a.median_ns - b.median_ns) <= REPLICATION_AGREEMENT * min(a.median_ns, b.median_ns)
