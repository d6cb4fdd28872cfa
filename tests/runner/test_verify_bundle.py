"""End to end on the CPU: verify with a fake device clock, write a signed bundle, tamper with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from op_cases import ROPE_ORDER, small_workload  # noqa: E402
from runner_fakes import FakeDevice  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.domain.canonical import bytes_digest  # noqa: E402
from kernelindex.domain.manifests import build  # noqa: E402
from kernelindex.runner.campaign import outcome_rows, verify_operation, write_result_bundle  # noqa: E402
from kernelindex.runner.definitions import Adapter  # noqa: E402
from kernelindex.runner.reference import rotate_half  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402
from kernelindex.trust import keys  # noqa: E402
from kernelindex.trust.bundles import BundleError, verify_directory  # noqa: E402

ROPE = registry.load_operation("rope")
POLICY = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                      time_budget_ns=100_000_000, host_calls=5)


def _rope(x):
    cos, sin = x["cos"].unsqueeze(1), x["sin"].unsqueeze(1)
    return {"q_out": x["q"] * cos + rotate_half(x["q"]) * sin, "k_out": x["k"] * cos + rotate_half(x["k"]) * sin}


class _Clocked(torch.autograd.Function):
    """Identity whose backward costs twice the forward's device time on the fake clock (and may
    scale the gradient, to model a wrong backward)."""

    @staticmethod
    def forward(ctx, x, clock, ns, grad_scale):
        ctx.clock, ctx.ns, ctx.grad_scale = clock, ns, grad_scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        if ctx.ns is not None:
            ctx.clock.advance(ctx.ns)  # per output: q_out and k_out, 2x the forward in all
        return grad * ctx.grad_scale, None, None, None


def _adapter(device: FakeDevice, key: str, device_ns: float | None, *, wrong: bool = False,
             crash: bool = False, role: str = "candidate", grad_scale: float = 1.0,
             forward_computes_gradient: bool = False) -> Adapter:
    def binder(adapter, x):
        def call():
            if crash:
                raise RuntimeError("kernel launch failed")
            if device_ns is not None:
                device.clock.advance(device_ns)
            out = _rope(x)
            if wrong:
                return {k: torch.zeros_like(v) for k, v in out.items()}
            return {k: _Clocked.apply(v, device.clock, device_ns, grad_scale) for k, v in out.items()}
        return call

    return Adapter(key, "rope", f"test-{key}", f"Test {key}", "pytorch", "python", "tests.runner", key,
                   ("torch",), (), binder, role=role, forward_computes_gradient=forward_computes_gradient)


def _environment(product: str) -> object:
    return build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": product},
                                          "copy_bandwidth_bytes_per_s": 4.3e12})


@pytest.fixture
def runner_key(tmp_path: Path):  # test_cut_bundle.py's
    private, public, key = keys.generate("test-runner", tmp_path / "keys")
    return private, key


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory):
    """One verification of seven implementations on the CPU (about 10 s on a busy machine), read by every test
    here: none changes the result; each writes its bundle into its own directory."""
    private, _, key = keys.generate("test-runner", tmp_path_factory.mktemp("keys"))
    rope_case = small_workload("rope", {"seq": 16, "hidden": 64, "q_heads": 4, "kv_heads": 2}, "fp32", ROPE_ORDER)
    device = FakeDevice(name="NVIDIA H200")
    adapters = [
        _adapter(device, "baseline", 50_000, role="baseline"),
        _adapter(device, "fast", 20_000),
        _adapter(device, "cheater", 1),
        _adapter(device, "wrong", 10_000, wrong=True),
        _adapter(device, "crash", 10_000, crash=True),
        _adapter(device, "wrong-gradient", 30_000, grad_scale=1.5),
        _adapter(device, "scales-only", 1, forward_computes_gradient=True),
    ]
    result = verify_operation(
        ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": key.name, "key_id": key.key_id}, policy=POLICY, calls_per_sample=10, campaign="test",
        adapters=adapters, do_bench=lambda call: 12_345.0,
    )
    return result, private, key


def test_regions_time_what_they_say(verified) -> None:
    result, _, _ = verified
    rows = {(r["region"], r["implementation"]): r for r in outcome_rows(result)}
    # Forward 50 µs; the backward of the fake costs 2 x 50 µs and runs alone; forward+backward both.
    assert rows[("forward", "baseline")]["median_ns"] == 50_000
    assert rows[("backward", "baseline")]["median_ns"] == 100_000
    assert rows[("forward+backward", "baseline")]["median_ns"] == 150_000
    floors = result.cases[0].floors
    # The tiny case moves nanoseconds of bytes: every region's floor is the H200's shortest call (1.13 µs).
    assert floors["forward+backward"] == floors["forward"] == floors["backward"] == 1130.0
    protocols = {run.spec.protocol for run in result.runs()}
    assert len(protocols) == 3  # one protocol per region


def test_a_wrong_gradient_is_incorrect_for_the_backward_regions_only(verified) -> None:
    result, _, _ = verified
    rows = {(r["region"], r["implementation"]): r for r in outcome_rows(result)}
    assert rows[("forward", "wrong-gradient")]["status"] == "passed"
    for region in ("backward", "forward+backward"):
        row = rows[(region, "wrong-gradient")]
        assert row["status"] == "incorrect_numerical" and row["median_ns"] is None
        assert "gradient of q" in row["detail"] and "exceeds tolerance" in row["detail"]
    run = next(r for r in result.runs() if r.spec.source.external_id.endswith("/backward/wrong-gradient"))
    assert run.spec.correctness.passed is False and run.spec.correctness.relative_error >= 0.4


def test_statuses_follow_correctness_timing_and_floor(verified) -> None:
    result, _, _ = verified
    rows = {r["implementation"]: r for r in outcome_rows(result) if r["region"] == "forward"}
    assert rows["baseline"]["status"] == "passed"
    assert rows["baseline"]["median_ns"] == 50_000
    assert rows["fast"]["median_ns"] == 20_000
    assert rows["cheater"]["status"] == "suspected_reward_hack"  # 1 ns is below the H200 datasheet floor
    assert rows["wrong"]["status"] == "incorrect_numerical" and rows["wrong"]["median_ns"] is None
    assert rows["crash"]["status"] == "runtime_error" and "kernel launch failed" in rows["crash"]["detail"]
    assert rows["scales-only"]["status"] == "suspected_reward_hack"  # its forward is held to the floor
    run = next(r for r in result.runs() if r.spec.source.external_id.endswith("/forward/baseline"))
    timing = run.spec.timing
    assert timing.samples >= 100 and timing.host_ns == 4_000 and timing.method == "fake_graph_replay"
    assert timing.secondary["do_bench_median_ns"] == 12_345
    assert timing.ci95_low_ns <= timing.median_ns <= timing.ci95_high_ns
    assert run.spec.correctness.checked and run.spec.correctness.passed
    assert run.spec.runner.name == "test-runner"
    assert run.spec.source.name == "kernelindex-runner"


def test_bundle_round_trip(verified, tmp_path: Path) -> None:
    result, private, key = verified
    bundle = write_result_bundle(result, tmp_path / "bundle", private, key.name)
    again = verify_directory(tmp_path / "bundle")
    assert again.digest == bundle.digest and again.key_id == key.key_id
    assert again.counts()["BenchmarkRun"] == 21  # 7 implementations x 3 regions
    kinds = {m.kind for m in again.manifests}
    assert {"OperationSpec", "WorkloadCase", "SoftwareProject", "ImplementationRevision", "BenchmarkProtocol",
            "ExecutionEnvironment", "Source"} <= kinds
    for run in again.runs():
        if run.spec.timing.samples_digest:
            name = run.spec.timing.samples_digest.removeprefix("sha256:")
            data = (tmp_path / "bundle" / "samples" / f"{name}.json").read_bytes()
            assert bytes_digest(data) == run.spec.timing.samples_digest
            assert len(json.loads(data)["device_ns"]) == run.spec.timing.samples


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_every_flipped_byte_is_refused(verified, tmp_path: Path) -> None:
    result, private, key = verified
    root = tmp_path / "bundle"
    write_result_bundle(result, root, private, key.name)
    for path in _files(root):
        original = path.read_bytes()
        for offset in (0, len(original) // 2, len(original) - 1):
            tampered = bytearray(original)
            tampered[offset] ^= 0x01
            path.write_bytes(bytes(tampered))
            with pytest.raises(BundleError):
                verify_directory(root)
            path.write_bytes(original)
    verify_directory(root)  # intact again


def test_extra_or_missing_file_is_refused(verified, tmp_path: Path) -> None:
    result, private, key = verified
    root = tmp_path / "bundle"
    write_result_bundle(result, root, private, key.name)
    (root / "samples" / "extra.json").write_text("{}")
    with pytest.raises(BundleError, match="not covered by the signature"):
        verify_directory(root)
    (root / "samples" / "extra.json").unlink()
    victim = next((root / "samples").iterdir())
    victim.unlink()
    with pytest.raises(BundleError, match="missing"):
        verify_directory(root)


def test_resigned_by_another_key_is_detected(verified, tmp_path: Path) -> None:
    result, private, key = verified
    root = tmp_path / "bundle"
    write_result_bundle(result, root, private, key.name)
    other_private, _, _ = keys.generate("mallory", tmp_path / "other")
    forged = keys.load_private_key(other_private)
    sig = json.loads((root / "bundle.sig").read_text())
    digest = json.loads((root / "bundle.json").read_text())["digest"]
    public = keys.public_key_hex(forged)
    sig.update(public_key=public, key_id=keys.key_id_of(public), signature=forged.sign(digest.encode()).hex())
    from kernelindex.domain.canonical import canonical_bytes

    (root / "bundle.sig").write_bytes(canonical_bytes(sig))
    with pytest.raises(BundleError, match="key id"):
        verify_directory(root)


def test_non_empty_output_directory_is_refused(verified, tmp_path: Path) -> None:
    result, private, key = verified
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(BundleError, match="not empty"):
        write_result_bundle(result, tmp_path / "busy", private, key.name)


def test_a_backward_that_only_scales_the_forwards_gradient_is_not_held_to_the_backward_floor(verified) -> None:
    """Liger's losses compute the gradient in their forward; from upstream gradient 1.0 their backward
    launches a few µs of work. The backward floor counts traffic such a backward skips, so it is not a
    reward hack; an implementation without the declaration is still held to the floor."""
    result, _, _ = verified
    rows = {(r["region"], r["implementation"]): r for r in outcome_rows(result)}
    assert rows[("backward", "scales-only")]["status"] == "passed"
    assert rows[("backward", "scales-only")]["median_ns"] < result.cases[0].floors["backward"]
    assert rows[("backward", "cheater")]["status"] == "suspected_reward_hack"
