"""``ki use`` snippets for module classes: built from their constructor templates with the workload's
axes. The plain-PyTorch ones are executed here on CPU; Liger's need a GPU, so their text is checked."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from kernelindex import registry
from kernelindex.domain.expressions import evaluate
from kernelindex.policy.traffic import resolved_axes
from kernelindex.readmodel.snippets import python_snippet

# (operation, callable module, symbol, axes): small workloads, so the snippets run in milliseconds on CPU.
PLAIN_PYTORCH = [
    ("embedding", "torch.nn", "Embedding", {"batch": 2, "seq": 3, "vocab": 11, "hidden": 8}),
    ("rms-norm", "torch.nn", "RMSNorm", {"rows": 4, "hidden": 8}),
    ("layer-norm", "torch.nn", "LayerNorm", {"rows": 4, "hidden": 8}),
    ("group-norm", "torch.nn", "GroupNorm", {"batch": 2, "channels": 6, "hidden": 5, "channels_per_group": 2}),
    ("softmax", "torch.nn", "Softmax", {"rows": 3, "hidden": 7}),
    ("cross-entropy", "torch.nn", "CrossEntropyLoss", {"batch": 2, "seq": 3, "vocab": 11}),
]


def _specs(operation: str, axes: dict[str, int], dtype: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The operation's spec and a workload spec with its tensors at concrete shapes, derived from the
    operation's declarations (independently of the snippet code)."""
    spec = registry.operations()[operation].model_dump(mode="json")["spec"]
    full = resolved_axes(spec, {"axes": axes})
    tensors = [{"name": d["name"], "dtype": dtype if d["dtype"] == "T" else d["dtype"],
                "shape": [evaluate(dim, full) for dim in d["shape"]]} for d in spec["inputs"]]
    return spec, {"axes": axes, "tensors": tensors}


def _snippet(operation: str, module: str, symbol: str, axes: dict[str, int], dtype: str = "fp32") -> str:
    spec, workload = _specs(operation, axes, dtype)
    snippet = python_snippet(spec, workload, {"callable": {"module": module, "symbol": symbol}}, "pip install x")
    assert snippet is not None
    return snippet


def test_every_plain_pytorch_template_is_executed_here() -> None:
    plain = {name for name in registry.module_constructors() if name.startswith("torch.")}
    assert plain == {f"{module}.{symbol}" for _, module, symbol, _ in PLAIN_PYTORCH}


@pytest.mark.parametrize(("operation", "module", "symbol", "axes"), PLAIN_PYTORCH, ids=[p[0] for p in PLAIN_PYTORCH])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_plain_pytorch_snippets_run_on_cpu(operation: str, module: str, symbol: str, axes: dict[str, int],
                                           dtype: str) -> None:
    snippet = _snippet(operation, module, symbol, axes, dtype)
    cpu = snippet.replace('"cuda"', '"cpu"').replace("torch.cuda.synchronize()", "")
    scope: dict[str, Any] = {}
    exec(compile(cpu, f"<{operation} snippet>", "exec"), scope)  # noqa: S102 - the snippet under test
    spec = registry.operations()[operation].model_dump(mode="json")["spec"]
    full = resolved_axes(spec, {"axes": axes})
    for out in spec["outputs"]:
        assert list(scope[out["name"]].shape) == [evaluate(d, full) for d in out["shape"]]
        if out["dtype"] == "T":
            assert scope[out["name"]].dtype == {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]


def test_liger_module_snippets_build_the_module_from_the_workload() -> None:
    embedding = _snippet("embedding", "liger_kernel.transformers.experimental.embedding", "LigerEmbedding",
                         {"batch": 8, "seq": 2048, "vocab": 1024, "hidden": 4096}, "bf16")
    assert "from liger_kernel.transformers.experimental.embedding import LigerEmbedding" in embedding
    assert 'module = LigerEmbedding(1024, 4096).to(device="cuda", dtype=torch.bfloat16)' in embedding
    assert "y = module(input_ids)" in embedding and "weight = " not in embedding
    rms = _snippet("rms-norm", "liger_kernel.transformers.rms_norm", "LigerRMSNorm", {"rows": 2048, "hidden": 4096},
                   "bf16")
    assert 'module = LigerRMSNorm(4096).to(device="cuda", dtype=torch.bfloat16)' in rms and "y = module(x)" in rms
    compile(rms, "<rms snippet>", "exec")


def test_a_class_without_a_template_says_so() -> None:
    snippet = _snippet("relu-squared", "liger_kernel.transformers.relu_squared", "LigerReLUSquared",
                       {"rows": 4, "hidden": 8})
    assert "no constructor template" in snippet and "y = LigerReLUSquared()(x)" in snippet
