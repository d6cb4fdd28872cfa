"""A minimal runnable Python snippet for one implementation on one concrete workload.

Tensors come from the workload's concrete shapes and dtypes, in the operation's input order;
the call follows the implementation's declared callable: a function is called, a
``torch.autograd.Function`` is ``.apply``-ed, and a module class is built from its constructor
template (``registry/constructors.yaml``: arguments from the workload's axes, the parameters made by
the module in the workload's dtype) and called with its forward inputs; a class without a template is
built with no arguments, and the snippet says so. Integer inputs (ids, targets) draw from ``[0, vocab)``.
"""

from __future__ import annotations

import keyword

from kernelindex import registry
from kernelindex.domain.expressions import evaluate
from kernelindex.policy.traffic import resolved_axes

TORCH_DTYPES = {
    "bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32", "fp64": "torch.float64",
    "fp8_e4m3": "torch.float8_e4m3fn", "fp8_e5m2": "torch.float8_e5m2",
    "int64": "torch.int64", "int32": "torch.int32", "int8": "torch.int8", "bool": "torch.bool",
}


def importable(module: str) -> bool:
    """A dotted Python module path (not a script path such as ``benchmark/scripts/x.py``)."""
    parts = module.split(".")
    return all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)


def _tensor_line(name: str, dtype: str, shape: list[int], high: int) -> str:
    torch_dtype = TORCH_DTYPES.get(dtype, f"torch.{dtype}")
    dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    if dtype.startswith("int"):
        return f"{name} = torch.randint(0, {high}, {dims}, dtype={torch_dtype}, device=\"cuda\")"
    if dtype == "bool":
        return f"{name} = torch.rand({dims}, device=\"cuda\") > 0.5"
    if dtype.startswith("fp8"):
        return f"{name} = torch.randn({dims}, device=\"cuda\").to({torch_dtype})"
    return f"{name} = torch.randn({dims}, dtype={torch_dtype}, device=\"cuda\")"


def _call(symbol: str, arguments: str) -> str:
    if symbol[:1].islower():
        return f"{symbol}({arguments})"
    if symbol.endswith("Function"):
        return f"{symbol}.apply({arguments})"
    return f"{symbol}()({arguments})"


def python_snippet(operation_spec: dict, workload_spec: dict, implementation_spec: dict,
                   install_command: str | None) -> str | None:
    """The snippet, or None when the callable is not an importable Python symbol."""
    call = implementation_spec.get("callable", {})
    module, symbol = call.get("module", ""), call.get("symbol", "")
    if not module or not symbol or not importable(module) or not symbol.isidentifier():
        return None
    axes = resolved_axes(operation_spec, workload_spec)
    concrete = {t["name"]: t for t in workload_spec.get("tensors", [])}
    high = int(axes.get("vocab", 2))
    lines = [f"# {install_command}" if install_command else "# install: no pinned install recorded", "import torch"]
    if module == "torch":
        lines.append("")
        qualified = f"torch.{symbol}"
    else:
        lines += [f"from {module} import {symbol}", ""]
        qualified = symbol
    template = registry.module_constructors().get(f"{module}.{symbol}")
    wanted = set(template.forward) if template else None
    names, parameter_dtype = [], None
    for decl in operation_spec.get("inputs", []):
        tensor = concrete.get(decl["name"])
        if tensor is None:
            continue
        if wanted is not None and decl["name"] not in wanted:
            parameter_dtype = parameter_dtype or tensor["dtype"]  # made by the module's constructor
            continue
        names.append(decl["name"])
        lines.append(_tensor_line(decl["name"], tensor["dtype"], list(tensor["shape"]), high))
    outputs = ", ".join(o["name"] for o in operation_spec.get("outputs", [])) or "out"
    lines.append("")
    if template:
        lines.append(f"module = {_construction(qualified, template, axes, parameter_dtype)}")
        lines.append(f"{outputs} = module({', '.join(names)})")
    else:
        if symbol[:1].isupper() and not symbol.endswith("Function"):
            lines.append(f"# {symbol} is a module class with no constructor template here: it is built with no "
                         "arguments; pass the ones its constructor needs")
        lines.append(f"{outputs} = {_call(qualified, ', '.join(names))}")
    lines.append("torch.cuda.synchronize()")
    return "\n".join(lines) + "\n"


def _construction(qualified: str, template: registry.ModuleConstructor, axes: dict[str, int],
                  parameter_dtype: str | None) -> str:
    """``LigerRMSNorm(4096).to(device="cuda", dtype=torch.bfloat16)``: the template's arguments evaluated
    on the workload's axes; the parameters moved to the GPU in the dtype the operation gives them."""
    arguments = [str(evaluate(a, axes)) for a in template.args]
    arguments += [f"{k}={v}" for k, v in template.kwargs.items()]
    built = f"{qualified}({', '.join(arguments)})"
    if parameter_dtype:
        return f"{built}.to(device=\"cuda\", dtype={TORCH_DTYPES.get(parameter_dtype, f'torch.{parameter_dtype}')})"
    return built
