"""A KernelBench problem → an OperationSpec (its semantics: the file, shown with the license notice)
and a WorkloadCase (its one workload: the module constants and the concrete tensors).

The tensors (inputs, parameters and buffers, outputs) and the forward FLOPs come from
``registry/sources/kernelbench/problems.json``, which scripts/derive-kernelbench-floors computes with
PyTorch once, so that importing never runs a problem (nor imports torch). floor-v1 then reads the
inputs and parameters once and writes the outputs once; its compute part divides the counted FLOPs
by the GPU's peak: both are estimates made this way, and the operation says so.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from math import prod
from typing import Any

from kernelindex.domain.manifests import Manifest, OperationSpec, build, digest_of
from kernelindex.domain.specs import contiguous_strides
from kernelindex.sources.kernelbench.problem_file import ProblemFile

FLOPS_AXIS = "fwd_flops"
PARAMETERS = "parameters"
UPSTREAM = "https://github.com/ScalingIntelligence/KernelBench"
# Every shipped KernelBench OperationSpec carries this text, under the script's name when the specs were signed:
# changing a word changes every spec's digest, so it keeps naming bench/kernelbench_floors.py (now
# scripts/derive-kernelbench-floors, docs/sources-kernelbench.md).
FLOOR_NOTE = ("floor: FLOPs counted by torch.utils.flop_counter.FlopCounterMode on the problem's own inputs, bytes "
              "= its inputs, parameters and buffers read once and its outputs written once (KernelIndex "
              "bench/kernelbench_floors.py); an estimate, labelled as such")
TF32_NOTE = ("fp32 convolutions run on TF32 tensor cores under PyTorch's default (cuDNN TF32 on), so the compute "
             "floor of a convolution takes the TF32 rate")


class ProblemNotMapped(ValueError):
    """A problem whose tensors were not counted: its timings cannot be placed on a workload."""


@cache
def counted() -> dict[str, dict[str, Any]]:
    """problem digest → what scripts/derive-kernelbench-floors counted (tensors, FLOPs) or why it could not."""
    path = resources.files("kernelindex.registry").joinpath("sources", "kernelbench", "problems.json")
    return dict(json.loads(path.read_text(encoding="utf-8"))["problems"])


def problem_tensors(problem: ProblemFile, table: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What was counted for the problem (``table``: the registry's unless given), or ProblemNotMapped."""
    found = (counted() if table is None else table).get(problem.digest)
    if found is None:
        raise ProblemNotMapped(f"{problem.file}: not in registry/sources/kernelbench/problems.json (run "
                               "scripts/derive-kernelbench-floors)")
    if "error" in found:  # counted nothing: the operation and workload say so and carry no floor
        return {"inputs": [], "parameters": [], "outputs": [], "flops": None, "scalars": {}, **found}
    return found


def slug_of(problem: ProblemFile) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", problem.name.lower()).strip("-")
    return f"kernelbench-{problem.level}-{problem.number}-{words}"[:120].rstrip("-")


def title_of(problem: ProblemFile) -> str:
    return f"KernelBench {problem.ref} {problem.words}"


# Words of problem names that name no operation by themselves.
_NOT_NAMES = {"with", "for", "over", "and", "the", "input", "kernel", "square", "asymmetric", "standard",
              "dimension", "model", "irregular", "shapes", "large", "small", "new"}


def search_names(problem: ProblemFile) -> set[str]:
    """What search matches: "kernelbench 1/19", "kernelbench level 1 problem 19", "level 1" (each
    further word narrows), the file's name, its words and each word of it ("ConvTranspose2d" also
    as "ConvTranspose", so "level 2 conv transpose" finds the level-2 problems that hold one)."""
    names = {f"kernelbench {problem.ref}", f"kb {problem.ref}", f"kernelbench level {problem.level} problem "
             f"{problem.number}", f"{problem.number}_{problem.name}", problem.words, "kernelbench",
             f"kernelbench level {problem.level}", f"level {problem.level}"}
    for word in problem.words.split():
        if len(word) < 3 or word.isdigit() or word.lower() in _NOT_NAMES:
            continue
        names.add(word)
        bare = re.sub(r"\d+d$", "", word, flags=re.IGNORECASE)
        if len(bare) >= 3 and bare != word:
            names.add(bare)
    return names


def _parameter_groups(found: dict[str, Any]) -> list[dict[str, Any]]:
    """Parameters and buffers as one tensor per dtype: the bytes they cost, whatever their count."""
    groups: dict[str, int] = {}
    for tensor in found["parameters"]:
        groups[tensor["dtype"]] = groups.get(tensor["dtype"], 0) + prod(tensor["shape"])
    single = len(groups) == 1
    return [{"name": PARAMETERS if single else f"{PARAMETERS} ({dtype})", "dtype": dtype, "shape": [elements]}
            for dtype, elements in sorted(groups.items())]


def _decls(tensors: list[dict[str, Any]], role: str | None = None) -> list[dict[str, Any]]:
    out = []
    for tensor in tensors:
        decl = {"name": tensor["name"], "dtype": tensor["dtype"],
                "shape": [f"{tensor['name']}[{i}]" for i in range(len(tensor["shape"]))]}
        out.append({**decl, "role": role} if role else decl)
    return out


def _uses_conv(found: dict[str, Any], source: str) -> bool:
    return "conv" in source.lower() and any(t["dtype"] == "fp32" for t in found["inputs"])


def signature(found: dict[str, Any]) -> tuple[tuple[str, str, int], ...] | None:
    """The structure of a problem's tensors (names, dtypes, ranks); None where they were not counted.
    The workloads of one operation must share it for the operation to declare its tensors."""
    if "error" in found:
        return None
    tensors = found["inputs"] + _parameter_groups(found) + found["outputs"]
    shapes = tuple((t["name"], t["dtype"], len(t["shape"])) for t in tensors)
    return (*shapes, ("counts FLOPs", "", int(counts_flops(found))))


def counts_flops(found: dict[str, Any]) -> bool:
    """FlopCounterMode counted work (matmuls, convolutions, attention); elementwise-only problems count
    none: their floor is the bandwidth floor, and they carry no FLOP axis."""
    return "error" not in found and bool(found.get("flops"))


def operation_manifest(problem: ProblemFile, source: str, slug: str, links: dict[str, str],
                       found: dict[str, Any]) -> OperationSpec:
    """``found``: the counted tensors every workload of the operation shares, or an "error" saying why
    there are none (then the operation declares no tensors and has no floor)."""
    axes: dict[str, Any] = {name: {"role": "variable"} for name in sorted(problem.axes)}
    if counts_flops(found):
        axes[FLOPS_AXIS] = {"role": "variable", "description": "forward FLOPs as FlopCounterMode counts them"}
    body: dict[str, Any] = {
        "family": problem.family,
        "semantics": source,
        "axes": axes,
        "inputs": _decls(found["inputs"]) + _decls(_parameter_groups(found), "parameter"),
        "outputs": _decls(found["outputs"]),
        "reference": f"KernelBench {problem.file}: Model(*get_init_inputs())(*get_inputs()) in PyTorch "
                     "(KernelBench (ScalingIntelligence/KernelBench), MIT)",
        "flops": FLOPS_AXIS if counts_flops(found) else None,
        "constraints": [FLOOR_NOTE] + ([TF32_NOTE] if _uses_conv(found, source) else []),
    }
    if "error" in found:
        body.update(inputs=[], outputs=[], flops=None, constraints=[
            f"no floor: the problem's tensors and FLOPs were not counted ({found['error']})"])
    aliases = search_names(problem)
    metadata = {
        "name": slug,
        "title": title_of(problem),
        "description": f"KernelBench level {problem.level} problem {problem.number} ({problem.words}): the "
                       "problem's PyTorch module is its semantics, shown as the file says it.",
        "aliases": sorted(aliases),
        "labels": {"imported_from": "kernelbench", "kernelbench_level": str(problem.level),
                   "kernelbench_problem": str(problem.number)},
        "links": {"KernelBench": UPSTREAM, **links},
    }
    return build("OperationSpec", body, metadata)


def _concrete(tensor: dict[str, Any]) -> dict[str, Any]:
    shape = list(tensor["shape"])
    return {"name": tensor["name"], "dtype": tensor["dtype"], "shape": shape, "strides": contiguous_strides(shape)}


def workload_manifest(problem: ProblemFile, operation: OperationSpec, found: dict[str, Any]) -> Manifest:
    if "error" in found:
        return build("WorkloadCase", {"operation": digest_of(operation), "axes": dict(problem.axes), "dtypes": {},
                                      "tensors": [], "params": {**problem.params,
                                                                "inputs drawn by": problem.input_recipe}},
                     {"title": " · ".join(f"{k} = {v}" for k, v in problem.axes.items()) or "no shape constants",
                      "labels": {"kernelbench_file_digest": problem.digest}})
    tensors = [_concrete(t) for t in found["inputs"] + _parameter_groups(found) + found["outputs"]]
    dtypes = {t["name"]: t["dtype"] for t in found["inputs"]}
    if _uses_conv(found, operation.spec.semantics):
        dtypes["convolution math (cuDNN default)"] = "tf32"
    params: dict[str, int | float | str | bool] = dict(problem.params)
    params.update({f"input {k}": v for k, v in found.get("scalars", {}).items()})
    params["inputs drawn by"] = problem.input_recipe
    label = " · ".join(f"{k} = {v}" for k, v in problem.axes.items()) or "no shape constants"
    return build(
        "WorkloadCase",
        {"operation": digest_of(operation),
         "axes": {**problem.axes, **({FLOPS_AXIS: int(found["flops"])} if counts_flops(found) else {})},
         "dtypes": dtypes, "tensors": tensors, "params": params},
        {"title": label, "description": f"the shapes and inputs of KernelBench {problem.file}",
         "labels": {"kernelbench_file_digest": problem.digest}},
    )
