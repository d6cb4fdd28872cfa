"""dyt and poly-norm (operations Liger-Kernel benchmarks only on the B200), on the CPU:
inputs honour the case (dyt's beta only where the case's module has it), the float64 reference agrees with
the baseline in value and every gradient, a wrong or missing gradient is caught, the backward floors count
only what a backward needs, and the adapters name the catalog's lines."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import (  # noqa: E402
    assert_baseline_matches_reference,
    assert_inputs_honour_case,
    case,
    fresh_inputs,
    op,
)

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.definitions import REGIONS  # noqa: E402

ROWS = {"rows": 6, "hidden": 32}
LINES = {
    "dyt": ("kernelindex-dyt", "liger-kernel-dyt", "torch-compile-dyt"),
    "poly-norm": ("kernelindex-poly-norm", "liger-kernel-poly-norm", "torch-compile-poly-norm"),
}


def _dyt(beta: bool, dtype: str = "fp32"):
    return case("dyt", ROWS, dtype, {"beta": beta})


def _poly(dtype: str = "fp32"):
    return case("poly-norm", ROWS, dtype, {"eps": 1e-6})


def _check(slug: str, workload, bind, *, in_place: bool = False):  # noqa: ANN001, ANN202
    return check(registry.load_operation(slug), workload, op(slug), bind, in_place=in_place, device="cpu",
                 gradients=True)


@pytest.mark.parametrize("slug", sorted(LINES))
def test_adapters_name_the_catalog_lines_and_our_baselines_say_so(slug: str) -> None:
    definition = op(slug)
    assert definition.regions == REGIONS and definition.unavailable is None
    adapters = definition.adapters()
    assert [a.key for a in adapters] == ["baseline", "liger", "torch-compile"]
    assert tuple(a.line for a in adapters) == LINES[slug]
    catalog_lines = registry.source_mapping("liger")["implementations"]
    assert adapters[1].line in catalog_lines and adapters[1].title == "Liger" and adapters[1].language == "triton"
    # the source's baseline lives in a Liger script: ours, and the page says so
    assert adapters[0].project == "kernelindex-baselines" and adapters[0].role == "baseline"
    assert adapters[0].description.startswith("PyTorch reference baseline, written by KernelIndex")


def test_liger_adapters_report_a_missing_package_cleanly() -> None:
    try:
        import liger_kernel  # noqa: F401
    except ImportError:
        for slug in LINES:
            reason = op(slug).adapters()[1].missing()
            assert reason is not None and "liger" in reason.lower()


# --- dyt ----------------------------------------------------------------------------------------------


def test_dyt_inputs_follow_the_case_and_carry_beta_only_when_the_module_has_it() -> None:
    without = assert_inputs_honour_case("dyt", _dyt(False))
    assert "beta" not in without and op("dyt").grads_of(without) == ("x", "alpha", "gamma")
    with_beta = fresh_inputs("dyt", _dyt(True, "bf16"))
    beta, gamma = with_beta["beta"], with_beta["gamma"]
    assert beta.shape == gamma.shape and beta.dtype == gamma.dtype == torch.bfloat16 and bool(beta.abs().sum() > 0)
    assert op("dyt").grads_of(with_beta) == ("x", "alpha", "gamma", "beta")


def test_dyt_refuses_a_case_that_does_not_say_whether_beta_is_added() -> None:
    with pytest.raises(ValueError, match="params.beta"):
        fresh_inputs("dyt", case("dyt", ROWS, "fp32"))


@pytest.mark.parametrize("beta", [False, True])
@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_dyt_reference_matches_the_baseline(beta: bool, dtype: str) -> None:
    assert_baseline_matches_reference("dyt", _dyt(beta, dtype))


@pytest.mark.parametrize("beta", [False, True])
def test_dyt_baseline_passes_the_runner_check_in_bf16(beta: bool) -> None:
    baseline = op("dyt").adapters()[0]
    result = _check("dyt", _dyt(beta, "bf16"), baseline.bind)
    assert result.passed and result.gradient_passed, result.detail or result.gradient_detail
    assert ("beta" in result.detail) is beta


def test_dyt_beta_matters_and_its_gradient_is_checked() -> None:
    from kernelindex.runner.ops.tanh_poly_norms import dyt

    def ignores_beta(x: dict) -> object:
        return lambda: {"y": dyt(x["x"], x["alpha"], x["gamma"], x["beta"].detach())}

    def drops_beta(x: dict) -> object:
        return lambda: {"y": dyt(x["x"], x["alpha"], x["gamma"])}

    no_gradient = _check("dyt", _dyt(True), ignores_beta)
    assert no_gradient.passed and no_gradient.gradient_passed is False
    assert "gradient of beta: the implementation produced none" in no_gradient.gradient_detail
    assert not _check("dyt", _dyt(True), drops_beta).passed


class _Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # noqa: ANN001, ANN205
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        return grad * 2


def test_a_wrong_parameter_gradient_is_caught() -> None:
    from kernelindex.runner.ops.tanh_poly_norms import dyt, poly_norm

    def dyt_wrong_gamma(x: dict) -> object:
        return lambda: {"y": dyt(x["x"], x["alpha"], _Doubled.apply(x["gamma"]), x["beta"])}

    def poly_wrong_weight(x: dict) -> object:
        return lambda: {"y": poly_norm(x["x"], _Doubled.apply(x["weight"]), x["bias"])}

    for slug, workload, bind, name in (("dyt", _dyt(True), dyt_wrong_gamma, "gamma"),
                                       ("poly-norm", _poly(), poly_wrong_weight, "weight")):
        result = _check(slug, workload, bind)
        assert result.passed and result.gradient_passed is False, slug
        assert f"gradient of {name}" in result.gradient_detail and "exceeds tolerance" in result.gradient_detail


# --- poly-norm ----------------------------------------------------------------------------------------


def test_poly_norm_inputs_follow_the_case() -> None:
    inputs = assert_inputs_honour_case("poly-norm", _poly("bf16"))
    assert inputs["weight"].dtype == inputs["bias"].dtype == torch.float32  # fixed fp32 in the spec


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_poly_norm_reference_matches_the_baseline(dtype: str) -> None:
    assert_baseline_matches_reference("poly-norm", _poly(dtype))


def test_poly_norm_baseline_passes_in_bf16_and_uses_the_cases_eps() -> None:
    baseline = op("poly-norm").adapters()[0]
    result = _check("poly-norm", _poly("bf16"), baseline.bind)
    assert result.passed and result.gradient_passed, result.detail or result.gradient_detail
    inputs = fresh_inputs("poly-norm", case("poly-norm", ROWS, "fp64", {"eps": 10.0}))
    loose = op("poly-norm").reference(inputs)["y"]
    tight = op("poly-norm").reference(fresh_inputs("poly-norm", _poly("fp64")))["y"]
    assert not torch.allclose(loose, tight, rtol=1e-3)


# --- floors -------------------------------------------------------------------------------------------


def test_backward_floors_read_only_what_the_backward_needs() -> None:
    from kernelindex.policy.traffic import compulsory_traffic

    def reads(slug: str, workload) -> set[str]:  # noqa: ANN001
        spec = registry.load_operation(slug).model_dump(mode="json")["spec"]
        traffic = compulsory_traffic(spec, workload.spec.model_dump(mode="json"), "backward", slug)
        return {t.name for t in traffic if t.direction == "read"}

    assert reads("poly-norm", _poly()) == {"upstream gradient of y", "x", "weight"}
    assert reads("dyt", _dyt(True)) == {"upstream gradient of y", "x", "alpha", "gamma"}


def test_dyt_cases_with_and_without_beta_get_distinct_labels() -> None:
    """The run's external id and title come from the case label; the 2026-12-01 dyt bundle gave 72 runs
    36 ids because the label left out params."""
    from kernelindex.runner.verify import case_label

    assert case_label(_dyt(True)) != case_label(_dyt(False))
    assert case_label(_dyt(True)) == "rows=6 hidden=32 beta=True fp32"
