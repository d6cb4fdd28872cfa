"""Losses over logits and distributions (cross-entropy, megatron-cross-entropy, kl-div, jsd, tvd) and the
fused LM-head losses: inputs honour the case, the float64 reference agrees with the baseline in value and
gradient (float32 under the operation's tolerance, float64 tightly), adapters report what is missing."""

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

CASES = {
    "cross-entropy": {"batch": 2, "seq": 3, "vocab": 11},
    "megatron-cross-entropy": {"seq": 3, "batch": 2, "vocab": 13},
    "kl-div": {"batch": 2, "seq": 3, "vocab": 9},
    "jsd": {"batch": 2, "seq": 3, "vocab": 9},
    "tvd": {"batch": 2, "seq": 3, "vocab": 9},
    "fused-linear-cross-entropy": {"bt": 6, "hidden": 8, "vocab": 17},
    "fused-linear-jsd": {"bt": 6, "hidden": 8, "vocab": 17},
}


@pytest.mark.parametrize("slug", sorted(CASES))
def test_inputs_honour_the_case(slug: str) -> None:
    inputs = assert_inputs_honour_case(slug, case(slug, CASES[slug], "bf16"))
    if "target" in inputs and inputs["target"].dtype == torch.int64:
        vocab = CASES[slug]["vocab"]
        kept = inputs["target"][inputs["target"] != -100]
        assert kept.numel() > 0 and int(kept.min()) >= 0 and int(kept.max()) < vocab


@pytest.mark.parametrize("slug", sorted(CASES))
@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_reference_matches_the_baseline(slug: str, dtype: str) -> None:
    assert_baseline_matches_reference(slug, case(slug, CASES[slug], dtype))


def test_cross_entropy_targets_include_ignored_rows() -> None:
    workload = case("cross-entropy", {"batch": 4, "seq": 64, "vocab": 50}, "fp32")
    assert bool((fresh_inputs("cross-entropy", workload)["target"] == -100).any())


def test_distributions_are_normalised() -> None:
    kl = fresh_inputs("kl-div", case("kl-div", CASES["kl-div"], "fp32"))
    assert torch.allclose(kl["input"].exp().sum(-1), torch.ones(6), atol=1e-5)
    assert torch.allclose(kl["target"].sum(-1), torch.ones(6), atol=1e-5)
    tvd = fresh_inputs("tvd", case("tvd", CASES["tvd"], "fp32"))
    assert torch.allclose(tvd["q"].sum(-1), torch.ones(6), atol=1e-5)


def test_a_wrong_loss_is_far_outside_the_tolerance() -> None:
    """The comparison the tests rely on can fail: a mean over all rows (ignored ones included) is wrong."""
    workload = case("cross-entropy", {"batch": 4, "seq": 64, "vocab": 50}, "fp32")
    x = fresh_inputs("cross-entropy", workload)
    wrong = torch.nn.functional.cross_entropy(x["logits"], x["target"].clamp(min=0))
    right = op("cross-entropy").reference(x)["loss"]
    assert abs(wrong.double() - right) / right > 10 * 1e-5  # ten times the fp32 tolerance


@pytest.mark.parametrize("slug", sorted(CASES))
def test_every_adapter_names_a_catalog_line_or_its_own(slug: str) -> None:
    adapters = op(slug).adapters()
    assert adapters[0].role == "baseline"
    assert [a.key for a in adapters][-1] == "torch-compile"
    liger = next(a for a in adapters if a.key == "liger")
    assert liger.line.startswith("liger-kernel-") and liger.title == "Liger"
    if adapters[0].project == "kernelindex-baselines":
        assert adapters[0].title == "PyTorch reference baseline (KernelIndex)"


def test_liger_reports_missing_packages_cleanly() -> None:
    pytest.importorskip("torch")
    for slug in CASES:
        liger = next(a for a in op(slug).adapters() if a.key == "liger")
        reason = liger.missing()
        try:
            import liger_kernel  # noqa: F401
        except ImportError:
            assert reason is not None and "liger" in reason.lower()


def test_megatron_cross_entropy_falls_back_to_our_baseline_with_the_reason() -> None:
    from kernelindex.runner.ops.megatron_ce import megatron_missing

    reason = megatron_missing()
    baseline = op("megatron-cross-entropy").adapters()[0]
    if reason is None:
        assert baseline.line == "megatron-lm-vocab-parallel-cross-entropy"
    else:
        assert "megatron-core" in reason
        assert baseline.project == "kernelindex-baselines"
        assert reason in (baseline.description or "")



def test_our_baselines_say_who_wrote_them() -> None:
    from kernelindex import registry
    from kernelindex.runner import records

    adapter = op("jsd").adapters()[0]
    manifest = records.implementation_manifest(adapter, registry.load_operation("jsd"))
    assert manifest.metadata.title == "PyTorch reference baseline (KernelIndex)"
    assert manifest.metadata.description.startswith(
        "PyTorch reference baseline, written by KernelIndex from the operation's semantics")
    assert manifest.spec.role == "baseline" and manifest.spec.callable.symbol == "losses.torch_jsd"
    assert manifest.metadata.name == "kernelindex-jsd"
    liger = records.implementation_manifest(op("jsd").adapters()[1], registry.load_operation("jsd")) \
        if op("jsd").adapters()[1].missing() is None else None
    assert liger is None or liger.metadata.description is None


def test_cross_entropy_may_overwrite_its_logits_only_when_declared_in_place() -> None:
    """Like Liger's kernel, which writes the logits' gradient into the logits: allowed by the operation's
    ``overwrites`` for an implementation declared in place, refused for one declared read-only."""
    from kernelindex import registry
    from kernelindex.runner.correctness import check

    def bind(x: dict) -> object:
        def call() -> dict:
            loss = torch.nn.functional.cross_entropy(x["logits"].detach(), x["target"], ignore_index=-100)
            with torch.no_grad():
                x["logits"].mul_(0.5)
            return {"loss": loss}
        return call

    operation, definition = registry.load_operation("cross-entropy"), op("cross-entropy")
    workload = case("cross-entropy", CASES["cross-entropy"], "fp32")
    allowed = check(operation, workload, definition, bind, in_place=True, device="cpu")
    assert allowed.passed and allowed.mutated_inputs == ["logits"], allowed.detail
    refused = check(operation, workload, definition, bind, in_place=False, device="cpu")
    assert not refused.passed and "mutated input logits" in refused.detail
