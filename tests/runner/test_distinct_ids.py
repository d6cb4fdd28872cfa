"""Issue 20 item 2, the runner's part: random ids repeat, so a gather reads fewer rows than it has ids;
the runner knows its timed inputs and records how many distinct ids they held (embedding's
``input_ids``), in every region's run, as the count of the very tensor it timed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from runner_fakes import FakeDevice  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.domain.manifests import build  # noqa: E402
from kernelindex.runner.campaign import verify_operation  # noqa: E402
from kernelindex.runner.definitions import Adapter  # noqa: E402
from kernelindex.runner.inputs import make_inputs  # noqa: E402
from kernelindex.runner.ops import embedding  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402
from kernelindex.runner.verify import TIMING_SEED  # noqa: E402

EMBEDDING = registry.load_operation("embedding")
POLICY = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                      time_budget_ns=100_000_000, host_calls=5)


class _Clocked(torch.autograd.Function):
    """Identity whose backward also costs device time on the fake clock (so every region is timed)."""

    @staticmethod
    def forward(ctx, x, clock):  # noqa: ANN001, ANN205 - autograd's signature
        ctx.clock = clock
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        ctx.clock.advance(40_000)
        return grad, None


def _adapter(device: FakeDevice) -> Adapter:
    def binder(adapter: Adapter, x: dict) -> object:
        def call() -> dict:
            device.clock.advance(20_000)
            return {"y": _Clocked.apply(torch.nn.functional.embedding(x["input_ids"], x["weight"]), device.clock)}
        return call

    return Adapter("baseline", "embedding", "test-embedding", "Test embedding", "pytorch", "python", "tests.runner",
                   "embedding", ("torch",), (), binder, role="baseline")


def test_every_embedding_run_records_the_distinct_ids_it_timed(embedding_case) -> None:
    device = FakeDevice(name="NVIDIA H200")
    environment = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": "NVIDIA H200"}})
    result = verify_operation(
        EMBEDDING, [embedding_case], None, device=device, environment=environment,
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device)],
    )
    ids = make_inputs(embedding.OPERATIONS[0], embedding_case, TIMING_SEED, torch.device("cpu"))["input_ids"]
    expected = int(ids.unique().numel())
    assert expected < ids.numel()  # 16 random ids over 32 rows repeat: the gather reads fewer rows
    runs = result.runs()
    assert {r.spec.timing.raw.get("distinct_input_ids") for r in runs} == {str(expected)}
    assert len(runs) == 3  # forward, backward, forward+backward
