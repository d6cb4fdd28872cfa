"""The upstream gradient rule: a loss's backward starts from 1.0 (what loss.backward() sends), any
other output's from a fixed random tensor; the protocol of a loss's gradient regions says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernelindex import registry  # noqa: E402
from kernelindex.domain.manifests import manifest_json  # noqa: E402
from kernelindex.runner.correctness import upstream_gradients  # noqa: E402
from kernelindex.runner.records import protocol_manifest  # noqa: E402
from kernelindex.runner.regions import prepare_inputs, region_call  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402

VERIFIED = Path(registry.__file__).parent.parent / "data" / "verified"


def _inputs() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    return prepare_inputs({"x": torch.randn(4, 5, generator=gen), "w": torch.randn(4, 5, generator=gen)}, ("x",))


@pytest.mark.parametrize("region", ["backward", "forward+backward"])
def test_a_loss_backward_starts_from_exactly_one(region: str) -> None:
    inputs = _inputs()
    call = region_call(region, lambda: {"loss": (inputs["x"] * inputs["w"]).sum()}, inputs, ("x",))
    (grad,) = call()
    assert torch.equal(grad, inputs["w"])  # d(sum(x*w))/dx times an upstream of exactly 1.0


def test_a_tensor_output_keeps_a_fixed_random_upstream_gradient() -> None:
    inputs = _inputs()
    call = region_call("backward", lambda: {"y": inputs["x"] * inputs["w"]}, inputs, ("x",))
    first, again = call()[0], call()[0]
    assert torch.equal(first, again)
    upstream = first / inputs["w"]
    assert not torch.allclose(upstream, torch.ones_like(upstream))
    assert float(upstream.std()) > 0.1


def test_upstream_gradients_mixes_by_output() -> None:
    outputs = {"loss": torch.tensor(2.5), "y": torch.zeros(3, 4), "ids": torch.zeros(3, dtype=torch.int64)}
    upstream = upstream_gradients(outputs, list(outputs), seed=7)
    assert set(upstream) == {"loss", "y"}
    assert upstream["loss"].dim() == 0 and float(upstream["loss"]) == 1.0
    assert not torch.equal(upstream["y"], torch.ones(3, 4))


def _protocol(slug: str, region: str):  # the policy runner-5's v3 campaign ran with
    policy = TimingPolicy(time_budget_ns=500_000_000, hard_limit_ns=40_000_000_000)
    return protocol_manifest(registry.load_operation(slug), policy, 10, region)


def _shipped(bundle: str) -> dict[str, str]:
    lines = (VERIFIED / bundle / "manifests.jsonl").read_text().splitlines()
    protocols = [json.loads(line) for line in lines if '"BenchmarkProtocol"' in line]
    return {p["spec"]["timed_region"]: p for p in protocols}


@pytest.mark.parametrize("region", ["backward", "forward+backward"])
def test_a_loss_gradient_protocol_says_one_and_is_not_the_shipped_v3_protocol(region: str) -> None:
    protocol = protocol_manifest(registry.load_operation("jsd"), TimingPolicy(), 10, region)
    assert "upstream gradient 1.0" in protocol.spec.input_regeneration
    assert "loss.backward()" in protocol.spec.input_regeneration
    assert "upstream gradient 1.0" in (protocol.metadata.description or "")
    assert "fixed random upstream" not in (protocol.metadata.description or "")
    shipped = _shipped("h200-jsd-20261201-v3")[region]
    assert "1.0" not in shipped["spec"]["input_regeneration"]
    assert protocol.spec.input_regeneration != shipped["spec"]["input_regeneration"]


def test_other_protocols_keep_the_shipped_v3_identity() -> None:
    seen = set()
    for bundle, slug, regions in (("h200-softmax-20261201-v3-a", "softmax", None),
                                  ("h200-softmax-20261201-v3-b", "softmax", None),
                                  ("h200-jsd-20261201-v3", "jsd", ("forward",))):
        shipped = _shipped(bundle)
        for region in regions or shipped:
            seen.add((slug, region))
            ours = manifest_json(_protocol(slug, region))["spec"]
            assert ours == shipped[region]["spec"], (slug, region)  # same identity: same cohort
    assert {r for s, r in seen if s == "softmax"} == {"forward", "forward+backward"}  # softmax shipped no backward
