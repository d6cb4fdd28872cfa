"""Replicated evidence from the two shipped runner identities (real H200 bundles): agreeing runs
show `replicated` naming both runners; the compiled outliers show both figures, never an average."""

from __future__ import annotations

from kernelindex.catalog.db import Catalog
from kernelindex.policy.evidence import EvidenceFacts, replication_peers
from kernelindex.readmodel.loading import load_operation

RUNNERS = {"kernelindex-h200-runner-2", "independent-check-runner"}


def _facts(run: str, key: str, median: int, region: str = "forward") -> EvidenceFacts:
    return EvidenceFacts(run=run, implementation="impl", workload="w", gpu="h200", median_ns=median,
                         runner_key_id=key, attested=True, correctness_passed=True, public_source=True,
                         pinned_install=True, raw_samples=True, region=region)


def test_peers_agree_within_five_percent_and_disagree_beyond() -> None:
    runs = [_facts("a", "k1", 100), _facts("b", "k2", 105), _facts("c", "k3", 106)]
    peers = replication_peers(runs, {"k1", "k2", "k3"})
    assert [(p.run, p.agrees) for p in peers["a"]] == [("b", True), ("c", False)]
    assert all(p.agrees for p in peers["b"])
    assert replication_peers(runs, {"k1"}) == {}  # untrusted runners are no peers
    backward = [_facts("a", "k1", 100), _facts("d", "k2", 300, region="backward")]
    assert replication_peers(backward, {"k1", "k2"}) == {}  # a backward time never confirms a forward one


def test_no_replicated_badge_rests_on_a_superseded_run(catalog: Catalog) -> None:
    """The independent check (runner 1's protocol) agreed with runner-2's v2 runs on 64 of 69 forwards; runner-2's
    runs were re-measured under v3 and superseded, so those pairs confirm nothing now (issue 42 item 4: 68 badges
    rested on a superseded run). Every run keeps its own level; none is replicated by a superseded peer."""
    checked = 0
    for slug in ("rope", "embedding"):
        data = load_operation(catalog, slug)
        superseded = {r.run_id for r in data.runs if r.superseded_by is not None}
        for run in data.runs:
            if run.spec.runner and run.spec.runner.name in RUNNERS:
                checked += 1
                assert run.evidence in ("verified", "replicated")
            if run.replication is not None:
                assert run.run_id not in superseded
                assert not {p.run_id for p in run.replication.peers} & superseded
            if run.superseded_by is not None:
                assert run.evidence != "replicated"
    assert checked > 100


def test_dossier_names_both_runners_where_two_agree_under_one_protocol() -> None:
    runs = [_facts("a", "k1", 100), _facts("b", "k2", 130)]
    peers = replication_peers(runs, {"k1", "k2"})
    assert [(p.run, p.agrees) for p in peers["a"]] == [("b", False)]  # a disagreement is shown, never averaged
