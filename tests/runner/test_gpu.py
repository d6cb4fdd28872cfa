"""GPU-only checks of the CUDA device: skipped cleanly where there is no CUDA GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def device():
    from kernelindex.runner.cuda import CudaDevice

    return CudaDevice(calls_per_sample=5)


def test_graph_replay_samples_a_call(device) -> None:
    src = torch.randn(1 << 24, device="cuda")
    dst = torch.empty_like(src)
    sampler = device.sampler(lambda: dst.copy_(src))
    assert sampler.method == "cuda_graph_replay", device.capture_errors
    samples = sampler.sample()
    assert len(samples) == 5 and all(s > 0 for s in samples)
    assert torch.equal(dst, src)


def test_the_stream_graph_keeps_every_set_alive_and_replays_after_a_release(device) -> None:
    """Protocol v4: the graph holds the R sets it was captured over; the caller dropping them and the cache being
    emptied (every cross-check does) must not free what a replay reads (an illegal memory access on the H100)."""
    import gc
    import weakref

    from kernelindex.runner.rotation import rotation
    from kernelindex.runner.stream import stream_sampler

    def one_set():
        src = torch.randn(1 << 18, device="cuda")
        dst = torch.empty_like(src)
        return (lambda: torch.neg(src, out=dst)), weakref.ref(src)
    made = [one_set() for _ in range(4)]
    calls, refs = [c for c, _ in made], [r for _, r in made]
    rot = rotation(1 << 20, 1 << 20)
    sampler = stream_sampler(calls[:rot.sets], rot, device.stream)
    assert sampler.capture == "cuda_graph"
    del calls, made
    gc.collect()
    device.release()
    assert all(r() is not None for r in refs[:rot.sets])
    assert all(t > 0 for t in sampler.sample())
    torch.cuda.synchronize()


def test_copy_bandwidth_is_plausible(device) -> None:
    from kernelindex.runner.cuda import copy_bandwidth

    assert copy_bandwidth(device, nbytes=1 << 28) > 1e11


def test_poisoned_allocator_exposes_an_unwritten_output(device, embedding_case) -> None:
    from kernelindex import registry
    from kernelindex.runner.correctness import check
    from kernelindex.runner.ops import operations

    def unwritten(x):
        shape = (*x["input_ids"].shape, x["weight"].shape[1])
        return lambda: {"y": torch.empty(shape, dtype=x["weight"].dtype, device="cuda")}

    op = registry.load_operation("embedding")
    result = check(op, embedding_case, operations()["embedding"], unwritten, in_place=False, device="cuda",
                   poison=device.poison)
    assert not result.passed


def test_embedding_baseline_verifies(device, embedding_case) -> None:
    from kernelindex import registry
    from kernelindex.domain.manifests import build
    from kernelindex.runner.campaign import outcome_rows, verify_operation
    from kernelindex.runner.timing import TimingPolicy

    op = registry.load_operation("embedding")
    env = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": device.name}})
    result = verify_operation(op, [embedding_case], ["baseline"], device=device, environment=env,
                              runner={"name": "t", "key_id": "sha256:" + "0" * 64},
                              policy=TimingPolicy(time_budget_ns=200_000_000), calls_per_sample=5, campaign="t")
    (row,) = outcome_rows(result)
    assert row["status"] in ("passed", "suspected_reward_hack"), row
    assert row["median_ns"] > 0 and row["method"] == "cuda_graph_replay"


def test_capture_failure_falls_back_to_events(device) -> None:  # last: a failed capture taints the default RNG
    def synchronizing_call():
        torch.cuda.synchronize()  # not allowed while capturing

    sampler = device.sampler(synchronizing_call)
    assert sampler.method == "per_call_events"
    assert len(sampler.sample()) == 5
