from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from kernelindex.policy.ranking import Rankable, one_per_implementation, rank
from kernelindex.policy.records import record_events

T0 = datetime(2024, 9, 3, tzinfo=UTC)


def item(
    id_: str, median: int, low: int | None = None, high: int | None = None, days: int = 0, evidence: str = "reported"
) -> Rankable:
    return Rankable(id_, median, low, high, evidence, T0 + timedelta(days=days))


def test_native_rope_cohort_ranks_and_noise() -> None:
    # The reference rope cohort (A100, forward): medians with their p20/p80.
    ranked = rank(
        [
            item("hf2", 516800, 515000, 518000),
            item("l1", 58880, 58600, 59300),
            item("hf1", 516096, 515500, 517000),
            item("l2", 59488, 59200, 59900),
        ],
        native=True,
    )
    assert [(r.item.id, r.label, r.within_noise) for r in ranked] == [
        ("l1", "1", False),
        ("l2", "2", True),
        ("hf1", "3", False),
        ("hf2", "4", True),
    ]
    assert round(ranked[2].vs_first, 2) == 8.77


def test_native_ties_only_on_equal_values() -> None:
    ranked = rank([item("a", 100), item("b", 100), item("c", 101)], native=True)
    assert [r.label for r in ranked] == ["1=", "1=", "2"]


def test_runner_ties_by_ci_overlap_or_one_percent_and_chain_rule() -> None:
    a = item("a", 1000, 990, 1010)
    b = item("b", 1009, 1005, 1013)  # within 1% of a
    c = item("c", 1016, 1014, 1018)  # ties with b (1%) but not with a → new rank
    ranked = rank([c, b, a], native=False)
    assert [(r.item.id, r.label) for r in ranked] == [("a", "1="), ("b", "1="), ("c", "2")]


def test_display_order_inside_tie_of_equal_medians_prefers_evidence_then_newest() -> None:
    ranked = rank(
        [item("old", 100, days=0), item("new", 100, days=5), item("ver", 100, evidence="verified")], native=True
    )
    assert [r.item.id for r in ranked] == ["ver", "new", "old"]


def test_inside_a_tie_the_fastest_median_comes_first() -> None:
    """Issue 20 item 3 (geglu-mlp H200 backward): Transformers 28.19 ms, newer and better evidenced,
    shared "1=" with torch.compile 26.82 ms and headed the cohort; the fastest median leads a tie, so
    the headline, the record and the margin over the runner-up (never below 1) name it."""
    slow = item("transformers", 28_186_048, 27_000_000, 29_000_000, days=9, evidence="verified")
    fast = item("torch-compile", 26_818_896, 26_000_000, 28_000_000, days=0)
    ranked = rank([slow, fast], native=False)
    assert [(r.item.id, r.label) for r in ranked] == [("torch-compile", "1="), ("transformers", "1=")]
    assert ranked[1].vs_first is not None and ranked[1].vs_first >= 1


def test_one_row_per_implementation_with_its_replicates() -> None:
    """Issue 20 item 5: two measurements of one implementation in one cohort are one row, never two ranks;
    issue 43 item 6: the row's figure is the median of the replicates' figures (of a pair, their mean),
    never the faster of a pair."""
    rows, replicates = one_per_implementation([
        ("liger", item("seq-sweep", 100)), ("liger", item("hidden-sweep", 104)), ("torch", item("t", 102)),
        ("hf", item("h1", 300)), ("hf", item("h2", 310)), ("hf", item("h3", 290)),
    ])
    assert sorted(r.id for r in rows) == ["h1", "seq-sweep", "t"]
    assert replicates == {"seq-sweep": ["hidden-sweep"], "h1": ["h3", "h2"]}
    assert [r.item.id for r in rank(rows, native=True)] == ["seq-sweep", "t", "h1"]
    assert {r.id: r.median_ns for r in rows} == {"seq-sweep": 102, "t": 102, "h1": 300}
    rows, _ = one_per_implementation([("a", item("fast", 100)), ("a", item("slow", 150)), ("b", item("b", 120))])
    assert [(r.id, r.median_ns) for r in sorted(rows, key=lambda r: r.median_ns)] == [("b", 120), ("fast", 125)]


medians = st.lists(st.integers(min_value=1000, max_value=5000), min_size=1, max_size=12)


@given(medians, st.randoms())
def test_ranking_does_not_depend_on_input_order(values: list[int], rnd) -> None:  # noqa: ANN001
    items = [item(f"r{i}", v, v - 30, v + 30) for i, v in enumerate(values)]
    shuffled = items[:]
    rnd.shuffle(shuffled)
    for native in (True, False):
        first = [(r.item.id, r.rank, r.tied, r.within_noise) for r in rank(items, native=native)]
        second = [(r.item.id, r.rank, r.tied, r.within_noise) for r in rank(shuffled, native=native)]
        assert first == second


@given(medians)
def test_ranks_are_dense_and_ascending(values: list[int]) -> None:
    ranked = rank([item(f"r{i}", v) for i, v in enumerate(values)], native=True)
    ranks = [r.rank for r in ranked]
    assert ranks[0] == 1 and all(b - a in (0, 1) for a, b in zip(ranks, ranks[1:], strict=False))
    assert [r.item.median_ns for r in ranked] == sorted(values)


def test_record_only_beyond_noise() -> None:
    events = record_events(
        [
            item("first", 100, 95, 105, days=0),
            item("within", 98, 96, 101, days=1),  # lower median but overlapping interval: not a record
            item("beyond", 80, 78, 82, days=2),
        ]
    )
    assert [(e.kind, e.holder) for e in events] == [("first", "first"), ("beaten", "beyond")]
    assert round(events[-1].margin, 2) == 1.25


def test_retraction_hands_the_record_to_the_best_remaining_run() -> None:
    runs = [item("a", 100, days=0), item("b", 90, days=1), item("c", 70, days=2)]
    events = record_events(runs, removals=[(T0 + timedelta(days=3), "c")])
    assert [(e.kind, e.holder) for e in events] == [
        ("first", "a"),
        ("beaten", "b"),
        ("beaten", "c"),
        ("retraction", "b"),
    ]
