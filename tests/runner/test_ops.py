"""Every operation the runner defines, on the CPU: its float64 reference, and each adapter that runs
here (plain PyTorch baselines; Transformers, Liger and torch.compile need their packages or a GPU)
passes correctness of its outputs and of every gradient; a wrong gradient is caught."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import small_workload  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.definitions import REGIONS  # noqa: E402
from kernelindex.runner.inputs import make_inputs  # noqa: E402
from kernelindex.runner.ops import operations  # noqa: E402

OPS = operations()
SMALL = {
    "rope": {"seq": 8, "hidden": 32, "q_heads": 4, "kv_heads": 2},
    "llama4-rope": {"seq": 8, "hidden": 32, "q_heads": 4, "kv_heads": 2},
    "embedding": {"batch": 2, "seq": 4, "vocab": 16, "hidden": 8},
    "rms-norm": {"rows": 6, "hidden": 32},
    "fused-add-rms-norm": {"rows": 6, "hidden": 32},
    "layer-norm": {"rows": 6, "hidden": 32},
    "group-norm": {"batch": 2, "channels": 8, "hidden": 16, "channels_per_group": 4},
    "megatron-rms-norm": {"seq": 4, "batch": 2, "hidden": 32},
    "softmax": {"rows": 6, "hidden": 32},
    "sparsemax": {"batch": 2, "seq": 3, "hidden": 32},
    "relu-squared": {"rows": 6, "hidden": 32},
    "swiglu-mlp": {"batch": 2, "seq": 4, "hidden": 16, "intermediate": 32},
    "geglu-mlp": {"batch": 2, "seq": 4, "hidden": 16, "intermediate": 32},
    "megatron-swiglu": {"seq": 4, "batch": 2, "intermediate": 16},
}
MINE = sorted(SMALL)


def _case(slug: str, dtype: str = "fp32"):
    return small_workload(slug, SMALL[slug], dtype)


@pytest.mark.parametrize("slug", MINE)
def test_operation_is_defined_with_gradients_and_regions(slug: str) -> None:
    op = OPS[slug]
    assert op.regions == REGIONS and op.grad_inputs and op.unavailable is None
    keys = [a.key for a in op.adapters()]
    assert keys == ["baseline", "liger", "torch-compile"]
    lines = {a.line for a in op.adapters()}
    assert len(lines) == 3 and all(a.operation == slug for a in op.adapters())


@pytest.mark.parametrize("slug", MINE)
def test_inputs_are_random_and_follow_the_case(slug: str) -> None:
    case = _case(slug)
    decls = {t.name: t for t in case.spec.tensors}
    first, second = (make_inputs(OPS[slug], case, seed, "cpu") for seed in (1, 2))
    for name in registry.load_operation(slug).spec.inputs:
        x = first[name.name]
        assert tuple(x.shape) == tuple(decls[name.name].shape) and tuple(x.stride()) == tuple(decls[name.name].strides)
        if x.is_floating_point():
            assert not torch.equal(x, second[name.name]) and bool(x.abs().sum() > 0)


@pytest.mark.parametrize("slug", MINE)
def test_runnable_adapters_pass_outputs_and_gradients(slug: str) -> None:
    operation, case, op = registry.load_operation(slug), _case(slug), OPS[slug]
    ran = 0
    for adapter in op.adapters():
        if adapter.key != "baseline" or adapter.missing() is not None:
            continue  # Liger and torch.compile need a GPU here; Transformers may be absent
        result = check(operation, case, op, adapter.bind, in_place=adapter.in_place, device="cpu", gradients=True)
        assert result.passed and result.gradient_passed, result.detail or result.gradient_detail
        assert result.gradient_error is not None and result.gradient_error < 1e-5
        ran += 1
    reference_only = op.adapters()[0].project == "transformers"
    assert ran == 1 or reference_only


class _DoubledGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_a_wrong_gradient_fails_the_gradient_verdict_only() -> None:
    from kernelindex.runner.ops.activations import relu_squared

    slug = "relu-squared"
    op, operation, case = OPS[slug], registry.load_operation(slug), _case(slug)

    def bind(x):
        return lambda: {"y": relu_squared(_DoubledGradient.apply(x["x"]))}

    result = check(operation, case, op, bind, in_place=False, device="cpu", gradients=True)
    assert result.passed and result.passed_for("forward")
    assert result.gradient_passed is False and not result.passed_for("backward")
    assert "gradient of x" in result.detail_for("backward") and "exceeds tolerance" in result.detail_for("backward")


def test_a_missing_gradient_fails() -> None:
    slug = "relu-squared"
    op, operation, case = OPS[slug], registry.load_operation(slug), _case(slug)

    def bind(x):  # detached: the output does not depend on x for autograd
        return lambda: {"y": torch.relu(x["x"].detach()).square()}

    result = check(operation, case, op, bind, in_place=False, device="cpu", gradients=True)
    assert result.gradient_passed is False and "produced none" in result.gradient_detail


def test_bf16_baselines_pass_under_the_specs_tolerance() -> None:
    for slug in ("fused-add-rms-norm", "sparsemax", "megatron-swiglu", "layer-norm", "group-norm"):
        operation, case, op = registry.load_operation(slug), _case(slug, "bf16"), OPS[slug]
        baseline = op.adapters()[0]
        result = check(operation, case, op, baseline.bind, in_place=False, device="cpu", gradients=True)
        assert result.passed and result.gradient_passed, (slug, result.detail, result.gradient_detail)


def test_eps_other_than_the_benchmarks_is_refused() -> None:
    from kernelindex.runner.ops.norms import check_eps

    case = _case("rms-norm")
    check_eps(case)
    other = case.model_copy(update={"spec": case.spec.model_copy(update={"params": {"eps": 1e-5}})})
    with pytest.raises(ValueError, match="eps"):
        check_eps(other)
