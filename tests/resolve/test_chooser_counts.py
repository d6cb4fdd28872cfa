"""The chooser weighs its candidates by their stored summaries' counts, never by loading their runs ("gemm h100"
names ~700 operations on a full install: loading each took 74 s cold); its counts are the figures the operations
listing shows, and its GPU evidence still counts a GPU label that may be the one asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operations import operations_index
from kernelindex.readmodel.summaries import counts_of
from kernelindex.resolve.cohorts import LeaderboardScores, OperationEvidence, RankedCohort
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.resolver import resolve
from kernelindex.resolve.service import search
from kernelindex.resolve.vocabulary import OperationEntry, Vocabulary, build_vocabulary, registry_vocabulary

UNRECORDED = "h100-variant-not-recorded"
OPS = [
    OperationEntry("gemm-sxm", "GEMM on SXM", "gemm", (), ("M",)),
    OperationEntry("gemm-scores", "GEMM leaderboard", "gemm", (), ("M",)),
    OperationEntry("gemm-b200", "GEMM on B200", "gemm", (), ("M",)),
    OperationEntry("gemm-none", "GEMM unmeasured", "gemm", (), ("M",)),
]
EVIDENCE = {
    "gemm-sxm": OperationEvidence(7, (("h100-sxm", 5), ("b200", 2))),
    "gemm-scores": OperationEvidence(0, (), (LeaderboardScores(UNRECORDED, "H100 (variant not recorded)", 23),)),
    "gemm-b200": OperationEvidence(100, (("b200", 100),)),
    "gemm-none": OperationEvidence(0),
}


class SummaryOnlySource:
    """Counts from summaries; an operation's runs (cohorts, scores) only for those in ``loadable``."""

    def __init__(self, ops: list[OperationEntry], evidence: dict[str, OperationEvidence],
                 loadable: Sequence[str] = ()) -> None:
        self.vocab = build_vocabulary(ops, registry_vocabulary().gpus.values())
        self._evidence = evidence
        self.loadable = set(loadable)

    def version(self) -> int:
        return 1

    def vocabulary(self) -> Vocabulary:
        return self.vocab

    def priority_gpus(self) -> Sequence[str]:
        return ()

    def operations(self) -> list[str]:
        return sorted(self._evidence)

    def evidence(self, operations: Sequence[str]) -> Mapping[str, OperationEvidence]:
        return {s: self._evidence[s] for s in operations if s in self._evidence}

    def _load(self, operation: str) -> None:
        assert operation in self.loadable, f"the chooser loaded {operation}'s runs"

    def cohorts(self, operation: str) -> Sequence[RankedCohort]:
        self._load(operation)
        return []

    def leaderboard_scores(self, operation: str) -> Sequence[LeaderboardScores]:
        self._load(operation)
        return self._evidence[operation].scores


def _resolve(source: SummaryOnlySource, gpu: str, candidates: Sequence[str], now: datetime):  # noqa: ANN202
    return resolve(ResolveRequest(gpu=gpu), source, candidates=candidates, now=now)


def test_the_chooser_orders_by_gpu_evidence_without_loading_a_candidate(now: datetime) -> None:
    r = _resolve(SummaryOnlySource(OPS, EVIDENCE), "h100-sxm", [op.slug for op in OPS], now)
    assert r.status == "choose_operation"
    assert [(c.slug, c.eligible_runs, c.on_gpu_runs) for c in r.choices] == [
        ("gemm-scores", 0, 23),  # scores on the unrecorded H100 variant may be the SXM asked for
        ("gemm-sxm", 7, 5), ("gemm-b200", 100, 0), ("gemm-none", 0, 0)]
    assert "2 of them have runs on H100 (listed first)" in r.message
    pcie_source = SummaryOnlySource(OPS, EVIDENCE, loadable=["gemm-scores"])
    pcie = _resolve(pcie_source, "h100-pcie", [op.slug for op in OPS], now)
    assert pcie.status == "leaderboard_only" and pcie.operation is not None  # the SXM runs are not PCIe's
    assert pcie.operation["slug"] == "gemm-scores"


def test_the_one_candidate_with_evidence_is_picked_and_only_it_is_loaded(now: datetime) -> None:
    source = SummaryOnlySource(OPS, EVIDENCE, loadable=["gemm-sxm"])
    r = _resolve(source, "h100-sxm", ["gemm-sxm", "gemm-b200", "gemm-none"], now)
    assert r.operation is not None and r.operation["slug"] == "gemm-sxm"
    assert [n.code for n in r.notes] == ["OPERATION_PICKED_BY_GPU_EVIDENCE"]


def test_the_example_binding_comes_from_a_candidate_that_has_the_constants(now: datetime) -> None:
    """The candidate listed first (most evidence) fixes no constant: the example is the next one's."""
    ops = [OperationEntry("gemm-free", "GEMM", "gemm", (), ("M", "N")),
           OperationEntry("gemm-n4096", "GEMM N 4096", "gemm", (), ("M", "N"), constants={"N": 4096}),
           OperationEntry("gemm-n8192", "GEMM N 8192", "gemm", (), ("M", "N"), constants={"N": 8192})]
    evidence = {"gemm-free": OperationEvidence(9, (("h100-sxm", 9),)), "gemm-n4096": OperationEvidence(3),
                "gemm-n8192": OperationEvidence(1)}
    r = _resolve(SummaryOnlySource(ops, evidence), "b200", [op.slug for op in ops], now)
    assert r.choices[0].slug == "gemm-free"
    assert "Pick one, or bind them, e.g. N=4096." in r.message


def test_the_chooser_shows_the_listing_figures_from_the_stored_summaries(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "gqa paged decode b200", now=now)
    assert r.status == "choose_operation"
    listed = {o.slug: o.eligible_runs for o in operations_index(catalog, now=now)}
    counts = counts_of(catalog, [c.slug for c in r.choices], now=now)
    for choice in r.choices:
        assert choice.eligible_runs == listed[choice.slug] == counts[choice.slug].eligible_runs
        assert choice.on_gpu_runs == counts[choice.slug].gpus.get("b200", 0)


def test_the_summary_keeps_the_leaderboard_scores_per_gpu(catalog: Catalog, now: datetime) -> None:
    counts = counts_of(catalog, ["gpumode-matmul-v2", "no-such-operation"], now=now)
    assert list(counts) == ["gpumode-matmul-v2"]
    by_gpu = {s.gpu: s.runs for s in counts["gpumode-matmul-v2"].scores}
    assert by_gpu[UNRECORDED] == 23 and by_gpu["b200"] == 47


def test_a_choice_says_leaderboard_scores_apart_from_runs(now: datetime) -> None:
    """"0 runs (23 on the GPU asked for)" read as a contradiction: the 23 are leaderboard scores, which rank a whole
    suite and sit in no workload's cohort."""
    r = _resolve(SummaryOnlySource(OPS, EVIDENCE), "h100-sxm", [op.slug for op in OPS], now)
    texts = {c.slug: c.evidence_text for c in r.choices}
    assert texts["gemm-scores"] == "0 runs (23 leaderboard scores on the GPU asked for)"
    assert texts["gemm-sxm"] == "7 runs (5 on the GPU asked for)"
    assert texts["gemm-none"] == "0 runs (0 on the GPU asked for)"
    assert r.to_json()["choices"][0]["on_gpu_scores"] == 23
    no_gpu = resolve(ResolveRequest(), SummaryOnlySource(OPS, EVIDENCE), candidates=[o.slug for o in OPS], now=now)
    assert {c.evidence_text for c in no_gpu.choices} >= {"100 runs", "7 runs"}


def test_a_chooser_says_the_words_that_named_its_candidates(catalog: Catalog, now: datetime) -> None:
    """The request of a chooser names no operation: it read "Any operation · gpu H100" with the exact query
    "gpu:h100-sxm", a query that lists every operation. The words stay in both, and the query parses back to the
    same candidates."""
    r = search(catalog, "gqa paged decode b200", now=now)
    assert r.status == "choose_operation"
    assert r.interpretation.startswith(f"{len(r.choices)} operations named 'gqa paged decode' · gpu B200")
    assert r.canonical_query == "gqa paged decode gpu:b200"
    again = search(catalog, r.canonical_query, now=now)
    assert [c.slug for c in again.choices] == [c.slug for c in r.choices]


def test_constants_are_named_only_among_look_alikes(now: datetime) -> None:
    """Candidates of different axes (a family word: GEMMs of several semantics) are not told apart by a list of every
    constant any of them fixes."""
    ops = [OperationEntry("gemm-n4096", "GEMM N 4096", "gemm", (), ("M", "N"), constants={"N": 4096}),
           OperationEntry("gemm-blocks", "Block-scaled GEMM", "gemm", (), ("M", "N", "k_blocks"),
                          constants={"k_blocks": 8})]
    evidence = {"gemm-n4096": OperationEvidence(3), "gemm-blocks": OperationEvidence(1)}
    r = _resolve(SummaryOnlySource(ops, evidence), "b200", [op.slug for op in ops], now)
    assert r.message.startswith("2 operations match; pick one.") and "bind them" not in r.message
