"""Cases of the GEMM & attention campaign (issue 25), from the shipped KernelIndex export: FlashInfer-Bench's 16
dense GEMM definitions and 18 GQA attention definitions, each WorkloadCase as the export importer maps it (the
same digests as the catalog's), plus the case selections the campaign's steps measure.

    python3 -m kernelindex.campaigns.gemm_attn --out .devcarry/cases-gemm [--export FILE.jsonl.zst]

writes ``cases.jsonl`` and ``regions.json`` (every case: forward, the region FlashInfer-Bench timed) for
``kernelindex.campaigns.measure run --cases``, and the ``--only-cases`` selections ([operation, case label] pairs):

- ``gemm.json``: per GEMM the traced M values nearest (in log scale) to 1, 4, 16, 64, 128, 256, 1024, 4096
  and the largest (8 or 9 each; 1, 16, 128 and the largest always, as the issue asks);
- ``gemm-compile.json``: M = 1, 128 and the largest (torch.compile autotunes for tens of seconds a shape);
- ``attention.json``: per attention definition up to 4 cases spread over its total tokens (ragged) or cached
  page entries (decode), smallest and largest included, leaving out cases the runner refuses (a decode whose
  page table names more entries than the cache has pages).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelindex import registry
from kernelindex.domain.canonical import canonical_bytes
from kernelindex.domain.manifests import digest_of, manifest_json, parse_manifest_text
from kernelindex.sources.kernelindex_export.operations import RowSkipped, map_operation, map_workload
from kernelindex.sources.kernelindex_export.read import read_export

EXPORT = Path(registry.__file__).parent.parent / "data" / "kernelindex_export" / "catalog-publishable.jsonl.zst"
MEASURED = re.compile(r"^(gemm-n\d+-k\d+|gqa-ragged-prefill-causal-.*|gqa-paged-decode-.*)$")
GEMM_TARGETS = (1, 4, 16, 64, 128, 256, 1024, 4096)
COMPILE_TARGETS = (1, 128)
ATTENTION_CASES = 4  # the issue asks for at least 4 traced workloads per definition


def mapped_cases(export: Path) -> dict[str, list]:
    """slug → its WorkloadCases (distinct digests), mapped as the importer maps them."""
    tables = read_export(export.read_bytes(), export)
    policy = registry.source_policy("flashinfer-bench")
    if policy is None:
        sys.exit("the registry has no source policy for flashinfer-bench")
    title = policy.title
    operations = {row["id"]: row for row in tables.rows["operations"] if MEASURED.match(row["slug"])}
    specs = {op_id: map_operation(row, [], title) for op_id, row in operations.items()}
    for op_id, spec in specs.items():
        if digest_of(spec) != registry.operation_digests()[operations[op_id]["slug"]]:
            sys.exit(f"{operations[op_id]['slug']}: the registry copy differs from the import; re-derive it")
    found: dict[str, dict[str, object]] = {row["slug"]: {} for row in operations.values()}
    for row in tables.rows["workloads"]:
        if row["operationId"] in specs and row["manifest"].get("kind") == "WorkloadCase":
            try:
                case = map_workload(row, specs[row["operationId"]])
            except RowSkipped as exc:
                print(f"skipped a workload of {operations[row['operationId']]['slug']}: {exc}")
                continue
            # As the campaign reads it back from cases.jsonl (canonical JSON: axes in key order, which the
            # case labels of the selections follow).
            stored = parse_manifest_text(canonical_bytes(manifest_json(case)))
            found[operations[row["operationId"]]["slug"]][digest_of(stored)] = stored
    return {slug: list(cases.values()) for slug, cases in sorted(found.items())}


def nearest(values: list[int], targets: tuple[int, ...]) -> list[int]:
    """The traced values nearest each target in log scale, and the largest; distinct, ascending."""
    picked = {min(values, key=lambda v: (abs(math.log(v) - math.log(t)), v)) for t in targets}
    return sorted(picked | {max(values)})


def spread(cases: list, size: Callable[[Any], float], count: int) -> list:
    """Up to ``count`` cases evenly spaced in the order of ``size`` (smallest and largest included)."""
    ordered = sorted(cases, key=size)
    if len(ordered) <= count:
        return ordered
    return [ordered[round(i * (len(ordered) - 1) / (count - 1))] for i in range(count)]


def _axis(name: str) -> Callable[[Any], float]:
    return lambda case: float(case.spec.axes[name])


def runnable(slug: str, case: object) -> bool:
    axes = case.spec.axes  # type: ignore[attr-defined]
    return not slug.startswith("gqa-paged-decode-") or axes["num_kv_indices"] <= axes["num_pages"]


def selections(cases: dict[str, list]) -> dict[str, list[list[str]]]:
    from kernelindex.runner.verify import case_label

    chosen: dict[str, list[list[str]]] = {"gemm": [], "gemm-compile": [], "attention": []}
    for slug, found in cases.items():
        if slug.startswith("gemm-"):
            by_m = {c.spec.axes["m"]: c for c in found}
            for name, targets in (("gemm", GEMM_TARGETS), ("gemm-compile", COMPILE_TARGETS)):
                chosen[name] += [[slug, case_label(by_m[m])] for m in nearest(sorted(by_m), targets)]
            continue
        key = "total_q" if slug.startswith("gqa-ragged") else "num_kv_indices"
        usable = [c for c in found if runnable(slug, c)]
        chosen["attention"] += [[slug, case_label(c)] for c in spread(usable, _axis(key), ATTENTION_CASES)]
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--export", type=Path, default=EXPORT)
    args = parser.parse_args(argv)
    cases = mapped_cases(args.export)
    args.out.mkdir(parents=True, exist_ok=True)
    every = [c for found in cases.values() for c in found]
    (args.out / "cases.jsonl").write_bytes(b"\n".join(canonical_bytes(manifest_json(c)) for c in every) + b"\n")
    (args.out / "regions.json").write_text(json.dumps({digest_of(c): ["forward"] for c in every}, indent=1))
    for name, pairs in selections(cases).items():
        (args.out / f"{name}.json").write_text(json.dumps(pairs, indent=1))
        print(f"{name}: {len(pairs)} cases over {len({slug for slug, _ in pairs})} operations")
    print(f"{len(every)} cases of {len(cases)} operations -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
