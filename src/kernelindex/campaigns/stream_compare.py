"""Each figure by each method, for the same calls on the same GPU (issue 42 item 6: docs/runner.md's table).

The campaign step ``compare`` runs it on the GPU machine over ``KI_COMPARE``'s calls (cases prepared by
``ki runner campaign carry``); by hand, from the carried folder:

    python3 -m kernelindex.campaigns.stream_compare --cases cases --out $OUT/stream-compare.json \\
        rope:liger:forward:seq=2048,hidden=8192 rms-norm:baseline:forward:... ...

A call is ``OPERATION:IMPLEMENTATION:REGION:WORKLOAD`` (the workload as ``ki verify --workloads`` takes it). For
each: protocol v4's stream time (graph, R rotating sets), the same K calls eagerly, the graph without rotation
(R = 1: the L2 keeps what the last call left), v3's kernel busy time and span (CUPTI, after an L2 flush), v3's
graph-replay cross-check, and triton's do_bench median. Prints a markdown table; writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from kernelindex.campaigns.measure import load_cases


def _median(sampler: Any, replays: int) -> float:
    sampler.sample()
    return statistics.median(t for _ in range(replays) for t in sampler.sample())


def _calls(spec: str, cases: Path) -> tuple[list[Any], Any, Any]:
    from kernelindex.runner.adapters import select
    from kernelindex.runner.campaign import operation_def, select_workloads
    from kernelindex.runner.inputs import make_inputs
    from kernelindex.runner.regions import prepare_inputs, region_call
    from kernelindex.runner.verify import TIMING_SEED

    slug, key, region, selector = spec.split(":", 3)
    op = operation_def(slug)
    workload = select_workloads(load_cases(cases, slug)[0], selector)[0]
    adapter = select(op, [key])[0]
    adapter.start_case()

    def one(seed: int) -> tuple[Any, Any]:
        inputs = make_inputs(op, workload, seed, "cuda")
        grads = op.grads_of(inputs)
        prepare_inputs(inputs, grads)
        return region_call(region, adapter.bind(inputs), inputs, grads), inputs
    first, inputs = one(TIMING_SEED)
    return [first, lambda seed: one(seed)[0], inputs], workload, adapter


def measure(spec: str, cases: Path, replays: int) -> dict[str, Any]:
    from kernelindex.runner.cuda import CudaDevice, do_bench_median_ns
    from kernelindex.runner.rotation import rotation
    from kernelindex.runner.stream import EagerStreamSampler, stream_sampler
    from kernelindex.runner.stream_setup import footprint_bytes
    from kernelindex.runner.verify import TIMING_SEED

    device = CudaDevice()
    (first, another, inputs), workload, adapter = _calls(spec, cases)
    with device.timing_context():
        result = first()
        rot = rotation(footprint_bytes(inputs, result), device.l2_bytes, device.free_bytes())
        del result
        calls = [first, *(another(TIMING_SEED + i) for i in range(1, rot.sets))]
        graph = stream_sampler(calls, rot, device.stream)
        row: dict[str, Any] = {"call": spec, "title": adapter.title, "sets": rot.sets, "calls_per_replay":
                               rot.calls_per_replay, "footprint_bytes": rot.footprint_bytes,
                               "capture": graph.capture, "stream_ns": _median(graph, replays)}
        row["stream_eager_ns"] = _median(EagerStreamSampler(calls, rot, "compared"), replays)
        hot = type(rot)(sets=1, calls_per_replay=rot.calls_per_replay, footprint_bytes=rot.footprint_bytes,
                        l2_bytes=rot.l2_bytes)
        row["stream_no_rotation_ns"] = _median(stream_sampler(calls[:1], hot, device.stream), replays)
        del graph, calls
        device.release()
        busy, samples, span = device.kernel_busy(first, batches=4)
        row.update(kernel_busy_ns=busy, span_ns=span)
        method, check, why = device.cross_check(first)
        row.update(cross_check_method=method, cross_check_ns=check, capture_failure=why)
        row["do_bench_ns"] = do_bench_median_ns(first)
    device.release()
    return row


COLUMNS = (("stream_ns", "stream time (v4, ranked)"), ("stream_eager_ns", "same K calls eagerly"),
           ("stream_no_rotation_ns", "graph, no rotation"), ("kernel_busy_ns", "kernel busy (v3 union)"),
           ("span_ns", "span (v3)"), ("cross_check_ns", "v3 cross-check"), ("do_bench_ns", "do_bench median"))


def table(rows: list[dict[str, Any]]) -> str:
    head = "| call | R × K | " + " | ".join(name for _, name in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for r in rows:
        cells = [f"{r[k] / 1000:,.2f} µs" if isinstance(r.get(k), (int, float)) else "—" for k, _ in COLUMNS]
        head = f"| {r['call']} ({r['title']}) | {r['sets']} × {r['calls_per_replay']} | "
        lines.append(head + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("calls", nargs="+")
    p.add_argument("--cases", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--replays", type=int, default=30)
    args = p.parse_args(argv)
    rows = []
    for spec in args.calls:
        try:
            rows.append(measure(spec, args.cases, args.replays))
        except Exception as exc:  # noqa: BLE001 - one failing call must not lose the others
            print(f"{spec}: {type(exc).__name__}: {exc}", flush=True)
        args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
