"""How many rows of a gathered table a floor counts (issue 20 item 2): the one decision for every floor.

A gather (embedding: ``weight[input_ids]``; a MoE's experts: ``gate_up_proj[top_k_index]``) reads only the
rows its ids name, and random ids repeat: 16,384 uniformly random ids over 16,384 rows name only ~63% of
them. In order of preference:

1. the run's own count: a KernelIndex runner counts the distinct values of each index input on the very
   tensor it timed and records it (``timing.raw.distinct_<input>``); that run's floors count exactly those rows;
2. for a workload without a recorded count whose ids are uniformly random (a source's workload, Liger's
   benchmark draws them with torch.randint, or a runner run from before the count was recorded, drawn the
   same way), the expectation V·(1 − (1 − 1/V)^N), labelled as an expectation, not a count;
3. otherwise the count the operation declares (``gather_rows``): what every call must read, such as the pages a
   paged-attention call lists or the top-k experts of an aiter MoE (each token's k experts are distinct).
The embedding's and the curated fused-moe's declared bounds (min(vocab, batch·seq), min(experts, tokens·top_k))
are only the most a call can read; rules 1 and 2 decide their rows (``GATHERS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import expm1, log1p

RAW_PREFIX = "distinct_"  # timing.raw key of a recorded count: distinct_<index input>


@dataclass(frozen=True)
class Gather:
    """The gathered tables of an operation and the integer input whose values pick their rows, for operations
    whose ids are uniformly random wherever no count is recorded (the sources' and the runner's workloads).
    ``group_axis``: the ids are drawn without replacement in groups of that axis's size (a token's top-k
    experts are distinct)."""

    tables: tuple[str, ...]
    ids: str
    group_axis: str | None = None


GATHERS: dict[str, Gather] = {
    "embedding": Gather(("weight",), "input_ids"),
    "fused-moe": Gather(("gate_up_proj", "down_proj"), "top_k_index", group_axis="top_k"),
}


@dataclass(frozen=True)
class GatheredRows:
    rows: float
    note: str
    counted: bool  # True: the run's recorded count; False: an expectation or a bound


def expected_distinct_rows(rows: int, ids: int, group: int = 1) -> float:
    """The expected number of distinct rows ``ids`` uniformly random ids name among ``rows``:
    V·(1 − (1 − 1/V)^N). With 16,384 ids over 16,384 rows only ~63% are distinct. Ids drawn in groups of
    ``group`` distinct ones (a token's top-k experts): V·(1 − (1 − g/V)^(N/g)), each row missed by a group
    with probability 1 − g/V."""
    if rows <= group:
        return float(min(rows, ids))
    return rows * -expm1(ids / group * log1p(-group / rows))


def recorded_distinct_ids(raw: Mapping[str, str]) -> dict[str, int]:
    """The distinct values per index input a runner counted on its timed inputs, from a run's
    ``timing.raw`` (absent: the run recorded none). A value that is not a whole number is ignored."""
    found: dict[str, int] = {}
    for key, value in raw.items():
        if key.startswith(RAW_PREFIX) and str(value).isdigit():
            found[key.removeprefix(RAW_PREFIX)] = int(value)
    return found


def gathered_rows(operation: str, table: str, table_rows: int, bound: float, bound_words: str, ids: int,
                  distinct_ids: Mapping[str, int] | None = None, group: int = 1) -> GatheredRows:
    """The rows of ``table`` (``table_rows`` long) a floor counts: ``bound`` is the operation's declared
    ``gather_rows`` (``bound_words`` its expression), ``ids`` how many ids the workload holds, ``group`` the
    size of the groups they are drawn in (``Gather.group_axis``'s value)."""
    gather = GATHERS.get(operation)
    if gather is None or table not in gather.tables:
        return GatheredRows(bound, f"gather: {bound_words} = {int(bound):,} of {table_rows:,} rows, as the operation "
                            "declares", False)
    recorded = (distinct_ids or {}).get(gather.ids)
    if recorded is not None:
        rows = min(bound, recorded)
        return GatheredRows(rows, f"gather: this run's {ids:,} ids named {rows:,.0f} distinct rows of {table_rows:,} "
                            f"(counted by the runner on the inputs it timed)", True)
    rows = min(bound, expected_distinct_rows(table_rows, ids, group))
    formula = ("V·(1 − (1 − 1/V)^N)" if group == 1
               else f"V·(1 − (1 − {group}/V)^(N/{group})), {group} distinct per token")
    return GatheredRows(rows, f"gather: {ids:,} uniformly random ids name {rows:,.0f} distinct rows of {table_rows:,} "
                        f"on average ({formula}: an expectation, not a count)", False)
