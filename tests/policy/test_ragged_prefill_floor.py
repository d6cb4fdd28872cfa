"""The causal ragged prefills' compute floor (issue 25: "FLOP and byte floors from the definition"). The 7
``gqa-ragged-prefill-causal-*`` operations are FlashInfer-Bench definitions imported through the KernelIndex
export; their specs declare no FLOPs and must keep their digests (signed runner bundles reference them), so
floor-v1 reads the registry's rule when it estimates (``registry.floor_flops``). The rule is a lower bound
from the workload's axes: each query sees at least the keys up to its own position, fewest pairs when the
B = len_indptr − 1 sequences are equally long."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelindex import registry
from kernelindex.domain.manifests import digest_of, manifest_json
from kernelindex.policy.floor import floor_estimate
from kernelindex.sources.kernelindex_export.operations import map_operation, map_workload
from kernelindex.sources.kernelindex_export.read import read_export

H200 = registry.gpus()["h200"]
SLUG = "gqa-ragged-prefill-causal-h32-kv4-d128"


@pytest.fixture(scope="module")
def export() -> dict[str, list[dict]]:
    src = Path(registry.__file__).parent.parent / "data" / "kernelindex_export" / "catalog-publishable.jsonl.zst"
    return read_export(src.read_bytes(), src).rows


def _pairs_at_least(total_q: int, sequences: int) -> int:
    """Counted here from the axes, independently of floors.yaml: Σ q(q + 1)/2 is convex, so over B real lengths
    summing to total_q it is least at total_q / B each: B · (t² + t)/2 with t = total_q / B, rounded down."""
    t = total_q / sequences
    return int(sequences * (t * t + t) / 2)


def _causal_pairs(q_lens: list[int], kv_lens: list[int]) -> int:
    """FlashInfer's causal mask (bottom-right aligned): query i of a sequence sees key j iff j < i + 1 + kv − q."""
    return sum(sum(min(kv, max(0, i + 1 + kv - q)) for i in range(q)) for q, kv in zip(q_lens, kv_lens, strict=True))


def test_the_largest_traced_h32_kv4_case_is_compute_bound(export: dict[str, list[dict]]) -> None:
    op_row = next(r for r in export["operations"] if r["slug"] == SLUG)
    largest = max((w for w in export["workloads"] if w["operationId"] == op_row["id"]),
                  key=lambda w: w["manifest"]["spec"]["axes"]["total_q"])
    axes = largest["manifest"]["spec"]["axes"]
    assert (axes["total_q"], axes["total_kv"], axes["len_indptr"]) == (16294, 16294, 34)
    operation = registry.load_operation(SLUG)
    workload = manifest_json(map_workload(largest, operation))["spec"]

    flops = 4 * 32 * 128 * _pairs_at_least(16294, 33)  # QKᵀ and PV: 2 FLOPs per multiply-add, H·D each
    floor = floor_estimate(registry.floor_spec(operation), workload, H200)
    assert floor.flops == pytest.approx(flops, rel=1e-9)
    assert floor.bound == "compute" and floor.compute_ns is not None and floor.compute_ns > floor.memory_ns
    assert floor.floor_ns == pytest.approx(flops / 989.5e12 * 1e9)  # H200 bf16 dense: the inputs are bf16
    # The spec as stored (and signed) declares no FLOPs: without the floor-time rule it is bandwidth-bound.
    stored = floor_estimate(manifest_json(operation)["spec"], workload, H200)
    assert stored.bound == "bandwidth" and stored.floor_ns < floor.floor_ns


@pytest.mark.parametrize("sequences", [1, 2, 5, 33])
def test_the_count_is_a_lower_bound_for_any_split(sequences: int) -> None:
    """Any split of total_q into B sequences (some empty) with kv ≥ q in each, the prefix keys anywhere."""
    operation = registry.load_operation(SLUG)
    gen = random.Random(sequences)
    total_q = 200
    for trial in range(20):
        cuts = sorted(gen.choices(range(total_q + 1), k=sequences - 1))
        q_lens = [b - a for a, b in zip([0, *cuts], [*cuts, total_q], strict=True)]
        if trial == 0:
            q_lens = [total_q // sequences + (i < total_q % sequences) for i in range(sequences)]  # balanced
        kv_lens = [q + gen.choice([0, 0, gen.randrange(50)]) for q in q_lens]
        axes = {"total_q": total_q, "total_kv": sum(kv_lens), "len_indptr": sequences + 1}
        workload = manifest_json(map_workload({"id": "t", "manifest": {"spec": {"axes": axes}}}, operation))["spec"]
        counted = floor_estimate(registry.floor_spec(operation), workload, H200).flops
        assert counted is not None and counted <= 4 * 32 * 128 * _causal_pairs(q_lens, kv_lens)


def test_import_keeps_the_digests_and_floors_read_the_rules(export: dict[str, list[dict]]) -> None:
    """Only the rules marked in_spec are written into imported specs (the digests signed bundles reference);
    where a spec carries one, floors read the same formula from the registry, so page and spec agree."""
    aliases: dict[str, list[str]] = {}
    for row in export["operation_aliases"]:
        aliases.setdefault(row["operationId"], []).append(row["alias"])
    title = registry.source_policy("flashinfer-bench").title
    ruled = 0
    for row in export["operations"]:
        operation = map_operation(row, aliases.get(row["id"], []), title)
        rule = registry.floor_flops(operation)
        baked = operation.spec.flops
        if baked:
            assert rule is not None and rule.flops == baked and rule.in_spec, row["slug"]
        if row["family"] == "gqa-ragged":
            ruled += 1
            assert baked is None and rule is not None and not rule.in_spec and "at least" in rule.why
            assert digest_of(operation) == registry.operation_digests()[row["slug"]]
    assert ruled == 7
