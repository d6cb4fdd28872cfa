"""Every adapter of the operations in ``kernelindex.runner.ops`` (losses, distillation, preference, GRPO,
attention, MoE, dyt, poly-norm, qwen2vl-mrope) against the float64 reference on the GPU: forward value
without autograd (and which inputs the call wrote), then value and every checked gradient with autograd.
One small case per operation; skipped cleanly without a CUDA GPU, and per adapter where its package is
missing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import assert_baseline_matches_reference, case, fresh_inputs, op, tensor_inputs  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import relative_error, tolerance_for  # noqa: E402
from kernelindex.runner.definitions import Adapter  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

LM = {"hidden": 256, "vocab": 4096}
PAIRED = {"batch": 4, "seq": 64, **LM}
GPU_CASES = {
    "cross-entropy": ({"batch": 2, "seq": 64, "vocab": 4096}, "fp32", {}),
    "megatron-cross-entropy": ({"seq": 64, "batch": 2, "vocab": 4096}, "bf16", {"tensor_parallel_size": 1}),
    "kl-div": ({"batch": 2, "seq": 64, "vocab": 4096}, "fp32", {}),
    "jsd": ({"batch": 1, "seq": 128, "vocab": 4096}, "fp32", {}),
    "tvd": ({"batch": 2, "seq": 64, "vocab": 4096}, "fp32", {}),
    "fused-linear-cross-entropy": ({"bt": 256, **LM}, "bf16", {}),
    "fused-linear-jsd": ({"bt": 256, **LM}, "bf16", {}),
    "distill-cosine-loss": ({"bt": 256, **LM}, "bf16",
                            {"bias": False, "weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}),
    "distill-jsd-loss": ({"bt": 256, **LM}, "bf16",
                         {"bias": False, "weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}),
    "fused-linear-cpo-loss": (PAIRED, "bf16", {}),
    "fused-linear-orpo-loss": (PAIRED, "bf16", {}),
    "fused-linear-simpo-loss": (PAIRED, "bf16", {}),
    "fused-linear-kto-loss": (PAIRED, "bf16", {"bias": True, "beta": 0.1, "ignore_index": 42}),
    "fused-linear-grpo-loss-token": (PAIRED, "bf16", {"importance_sampling_level": "token"}),
    "fused-linear-grpo-loss-sequence": (PAIRED, "bf16", {"importance_sampling_level": "sequence"}),
    "multi-token-attention": ({"batch": 2, "in_channels": 4, "out_channels": 4, "seq": 64, "kernel_size": 3,
                               "groups": 1}, "bf16", {"bias": True}),
    "sparse-multi-token-attention": ({"batch": 2, "in_channels": 4, "out_channels": 4, "seq": 64, "kernel_size": 3,
                                      "groups": 1}, "fp32", {"bias": True}),
    "fused-neighborhood-attention": ({"batch": 2, "seq": 64, "hidden": 512, "heads": 8}, "fp32",
                                     {"kernel_size": 7, "dilation": 2, "bias": True}),
    "fused-moe": ({"tokens": 64, "experts": 8, "hidden": 256, "intermediate": 128, "top_k": 2}, "bf16", {}),
    "dyt": ({"rows": 256, "hidden": 1024}, "bf16", {"beta": True}),
    "poly-norm": ({"rows": 256, "hidden": 1024}, "bf16", {"eps": 1e-6}),
    "qwen2vl-mrope": ({"seq": 128, "hidden": 1024, "q_heads": 8, "kv_heads": 2}, "bf16", {}),
}
PAIRS = [(slug, adapter.key) for slug in GPU_CASES for adapter in op(slug).adapters()]


def _adapter(slug: str, key: str) -> Adapter:
    adapter = next(a for a in op(slug).adapters() if a.key == key)
    reason = adapter.missing()
    if reason is not None:
        pytest.skip(reason)
    return adapter


@pytest.mark.parametrize(("slug", "key"), PAIRS)
def test_adapter_matches_the_reference_on_the_gpu(slug: str, key: str) -> None:
    adapter = _adapter(slug, key)
    axes, dtype, params = GPU_CASES[slug]
    workload = case(slug, axes, dtype, params)
    inputs = fresh_inputs(slug, workload, device="cuda")
    before = {name: t.clone() for name, t in inputs.items()}
    expected = op(slug).reference(before)
    adapter.start_case()
    with torch.no_grad():
        outputs = adapter.binder(adapter, inputs)()
    torch.cuda.synchronize()
    tol = tolerance_for(registry.load_operation(slug), workload)
    errors = {name: relative_error(outputs[name], expected[name]) for name in expected}
    wrote = sorted(name for name, t in tensor_inputs(inputs).items() if not torch.equal(t, before[name]))
    worst = assert_baseline_matches_reference(slug, workload, key=key, device="cuda")
    print(f"\nSMOKE {slug} {key}: forward error {max(errors.values()):.3g}, with autograd worst {worst:.3g}, "
          f"tolerance {tol:g}, wrote inputs {wrote or 'none'}, declared in place {adapter.in_place}")
    assert max(errors.values()) <= tol, errors
    assert not wrote or adapter.in_place, f"{key} wrote {wrote} without declaring it"
