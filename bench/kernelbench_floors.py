"""Precompute what floor-v1 needs for every KernelBench problem, so the web app never imports torch:
the tensors each problem reads and writes (names, dtypes, shapes: its inputs, its parameters and
buffers, its outputs) and its forward FLOPs as torch.utils.flop_counter.FlopCounterMode counts them.

Each problem is built and called once on the meta device (``Model(*get_init_inputs())`` and
``get_inputs()`` under ``torch.device("meta")``): shapes and FLOPs without arithmetic, so the
enlarged 2025 shapes cost nothing on a CPU. A problem the meta device cannot run (data-dependent
control flow) is recorded as not counted, with the reason; its timings are then refused by the
importer, never placed on a guessed workload. Resumable: problems already counted are kept.
Writes src/kernelindex/registry/sources/kernelbench/problems.json.

    .venv/bin/python bench/kernelbench_floors.py [--all]
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import signal
import time
import types
from pathlib import Path
from typing import Any

import torch
import zstandard
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "kernelindex" / "data" / "kernelbench" / "kernelbench.jsonl.zst"
OUT = ROOT / "src" / "kernelindex" / "registry" / "sources" / "kernelbench" / "problems.json"
DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
          torch.int64: "int64", torch.int32: "int32", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
TIME_LIMIT_S = 20  # per problem: a long unrolled recurrence (LSTM, GRU) dispatches tens of thousands of ops
METHOD = ("forward FLOPs counted by torch.utils.flop_counter.FlopCounterMode on the problem's own inputs "
          "(get_inputs(), Model(*get_init_inputs())) on the meta device (shapes without arithmetic); bytes = every "
          "input, parameter and buffer read once and every output written once")


def _rand_mix(*size: Any, **kwargs: Any) -> torch.Tensor:
    """Shapes only (the meta device draws nothing): KernelBench's helper for the older sets."""
    shape = size[0] if len(size) == 1 and isinstance(size[0], tuple | list | torch.Size) else size
    return torch.empty(*shape, dtype=kwargs.get("dtype"))


torch.rand_mix = _rand_mix  # type: ignore[attr-defined]  # as KernelBench's package registers it
torch.rand_mix_like = lambda t, **kw: _rand_mix(*t.shape)  # type: ignore[attr-defined]  # idem


def _decl(name: str, t: torch.Tensor) -> dict[str, Any]:
    return {"name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape)}


def count(source: str) -> dict[str, Any]:
    module = types.ModuleType("kernelbench_problem")
    with torch.device("meta"):
        exec(compile(source, "problem.py", "exec"), module.__dict__)  # noqa: S102 - the problem is code
        init = module.get_init_inputs()
        model = module.Model(*init)
        inputs = module.get_inputs()
    names = list(inspect.signature(model.forward).parameters)
    tensors, scalars = [], {}
    for i, value in enumerate(inputs):
        name = names[i] if i < len(names) and not names[i].startswith("*") else f"input{i}"
        if isinstance(value, torch.Tensor):
            tensors.append(_decl(name, value))
        else:
            scalars[name] = value if isinstance(value, int | float | bool | str) else repr(value)
    params = [_decl(n, p) for n, p in list(model.named_parameters()) + list(model.named_buffers())]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(*inputs)
    outs = out if isinstance(out, tuple | list) else [out]
    outputs = [_decl("output" if len(outs) == 1 else f"output{i}", t) for i, t in enumerate(outs)
               if isinstance(t, torch.Tensor)]
    return {"inputs": tensors, "scalars": scalars, "parameters": params, "outputs": outputs,
            "flops": int(counter.get_total_flops()), "counted_on": "meta"}


def problems() -> dict[str, str]:
    text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(DATA.read_bytes())),
                            encoding="utf-8")
    return {line["digest"]: line["source"] for line in map(json.loads, text) if line["kind"] == "problem"}


def save(results: dict[str, dict[str, Any]]) -> None:
    document = {"made_by": "bench/kernelbench_floors.py", "torch": torch.__version__, "method": METHOD,
                "problems": dict(sorted(results.items()))}
    OUT.write_text(json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")


def _expired(*_: object) -> None:
    raise TimeoutError(f"not counted within {TIME_LIMIT_S} s (FlopCounterMode dispatches every op of an unrolled "
                       "recurrence)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="recount every problem, not only the missing ones")
    args = parser.parse_args()
    sources = problems()
    results: dict[str, dict[str, Any]] = {}
    if OUT.exists() and not args.all:
        results = {d: r for d, r in json.loads(OUT.read_text(encoding="utf-8"))["problems"].items()
                   if d in sources and "error" not in r}
    start = time.monotonic()
    signal.signal(signal.SIGALRM, _expired)
    for index, digest in enumerate(sorted(set(sources) - set(results)), start=1):
        signal.alarm(TIME_LIMIT_S)
        try:
            results[digest] = count(sources[digest])
        except TimeoutError as exc:
            results[digest] = {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - any failure is the reason this problem is not counted
            results[digest] = {"error": f"the meta device cannot run it: {type(exc).__name__}: {str(exc)[:200]}"}
        finally:
            signal.alarm(0)
        if index % 50 == 0:
            save(results)
            print(f"{index} counted, {time.monotonic() - start:.0f} s", flush=True)
    save(results)
    failed = {d: r["error"] for d, r in results.items() if "error" in r}
    print(f"{len(results)} problems, {len(failed)} not counted")
    for digest, error in sorted(failed.items()):
        print(digest[:19], error)


if __name__ == "__main__":
    main()
