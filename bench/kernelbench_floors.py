"""Precompute what floor-v1 needs for every KernelBench problem, so the web app never imports torch:
the tensors each problem reads and writes (names, dtypes, shapes: its inputs, its parameters and
buffers, its outputs) and its forward FLOPs as torch.utils.flop_counter.FlopCounterMode counts them.

Each problem runs in a fresh process on the meta device (shapes and FLOPs without arithmetic, so the
enlarged 2025 shapes cost nothing on a CPU); a problem the meta device cannot run (data-dependent
control flow) is run for real on the CPU when its inputs are small, otherwise recorded as not
counted, with the reason. Writes src/kernelindex/registry/sources/kernelbench/problems.json.

    .venv/bin/python bench/kernelbench_floors.py [--jobs 2] [--all]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "kernelindex" / "data" / "kernelbench" / "kernelbench.jsonl.zst"
OUT = ROOT / "src" / "kernelindex" / "registry" / "sources" / "kernelbench" / "problems.json"
TIME_LIMIT_S = 120
REAL_LIMIT_ELEMENTS = 64 * 2**20  # a CPU run for problems the meta device cannot take, when this small

CHILD = r'''
import inspect, json, math, sys, types
import torch
from torch.utils.flop_counter import FlopCounterMode

DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
          torch.int64: "int64", torch.int32: "int32", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
POOL = (lambda s: torch.randn(*s), lambda s: torch.rand(*s) * 2 - 1)

def rand_mix(*size, **kw):  # KernelBench's helper (older problem sets): a draw from a pool of distributions
    size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    return POOL[int(torch.randint(0, len(POOL), ()).item()) if torch.get_default_device().type != "meta" else 0](size)

torch.rand_mix = rand_mix
torch.rand_mix_like = lambda t, **kw: rand_mix(*t.shape)

def decl(name, t):
    return {"name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape)}

def run(source, device, limit):
    module = types.ModuleType("kernelbench_problem")
    with torch.device(device):
        exec(compile(source, "problem.py", "exec"), module.__dict__)
        init = module.get_init_inputs()
        model = module.Model(*init)
        inputs = module.get_inputs()
    if device == "cpu" and sum(t.numel() for t in inputs if isinstance(t, torch.Tensor)) > limit:
        raise RuntimeError("inputs too large for a CPU run")
    names = list(inspect.signature(model.forward).parameters)
    tensors, scalars = [], {}
    for i, value in enumerate(inputs):
        name = names[i] if i < len(names) and not names[i].startswith("*") else f"input{i}"
        if isinstance(value, torch.Tensor):
            tensors.append(decl(name, value))
        else:
            scalars[name] = value if isinstance(value, (int, float, bool, str)) else repr(value)
    params = [decl(n, p) for n, p in list(model.named_parameters()) + list(model.named_buffers())]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(*inputs)
    outs = out if isinstance(out, (tuple, list)) else [out]
    outputs = [decl("output" if len(outs) == 1 else f"output{i}", t) for i, t in enumerate(outs)
               if isinstance(t, torch.Tensor)]
    return {"inputs": tensors, "scalars": scalars, "parameters": params, "outputs": outputs,
            "flops": int(counter.get_total_flops()), "counted_on": device,
            "init_inputs": [v if isinstance(v, (int, float, bool, str)) else repr(v) for v in init]}

import signal

def expired(*_):
    raise TimeoutError(f"not counted within {sys.argv[2]} s")

signal.signal(signal.SIGALRM, expired)

def one(source):
    try:
        return run(source, "meta", 0)
    except Exception as meta_error:
        try:
            torch.manual_seed(0)
            result = run(source, "cpu", int(sys.argv[1]))
            result["meta_error"] = f"{type(meta_error).__name__}: {str(meta_error)[:200]}"
            return result
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]} (meta device: "
                             f"{type(meta_error).__name__}: {str(meta_error)[:200]})"}

for digest, source in json.loads(sys.stdin.read()).items():
    signal.alarm(int(sys.argv[2]))
    result = one(source)
    signal.alarm(0)
    print(json.dumps({"digest": digest, **result}), flush=True)
'''


def problems() -> dict[str, str]:
    text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(DATA.read_bytes())),
                            encoding="utf-8")
    return {line["digest"]: line["source"] for line in map(json.loads, text) if line["kind"] == "problem"}


def count(batch: dict[str, str]) -> dict[str, dict]:
    """One process per batch (importing torch costs seconds); a problem the process did not report
    (it crashed) is recorded with the process's last words."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(REAL_LIMIT_ELEMENTS), str(TIME_LIMIT_S)],
                          input=json.dumps(batch), capture_output=True, text=True)
    found = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            found[result.pop("digest")] = result
    last = done.stderr.strip().splitlines()[-1:] or ["no output"]
    return {d: found.get(d, {"error": f"the counting process ended (rc {done.returncode}): {last[0][:200]}"})
            for d in batch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--all", action="store_true", help="recount every problem, not only the missing ones")
    args = parser.parse_args()
    sources = problems()
    kept: dict[str, dict] = {}
    if OUT.exists() and not args.all:  # recount only what is missing or was not counted
        kept = {d: r for d, r in json.loads(OUT.read_text(encoding="utf-8"))["problems"].items()
                if d in sources and "error" not in r}
    digests = sorted(set(sources) - set(kept))
    batches = [{d: sources[d] for d in digests[i::args.batches]} for i in range(args.batches)]
    results: dict[str, dict] = dict(kept)
    with ThreadPoolExecutor(args.jobs) as pool:
        for found in pool.map(count, batches):
            results.update(found)
    import torch

    document = {
        "made_by": "bench/kernelbench_floors.py",
        "torch": torch.__version__,
        "method": "forward FLOPs counted by torch.utils.flop_counter.FlopCounterMode on the problem's own "
                  "inputs (get_inputs(), Model(*get_init_inputs())) on the meta device (shapes without "
                  "arithmetic), or on the CPU where the meta device cannot run the problem; bytes = every "
                  "input, parameter and buffer read once and every output written once",
        "problems": dict(sorted(results.items())),
    }
    OUT.write_text(json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    failed = {d: r["error"] for d, r in results.items() if "error" in r}
    print(f"{len(results)} problems, {len(failed)} not counted, "
          f"{sum('meta_error' in r for r in results.values())} counted on the CPU")
    for digest, error in failed.items():
        print(digest[:19], error)


if __name__ == "__main__":
    main()
