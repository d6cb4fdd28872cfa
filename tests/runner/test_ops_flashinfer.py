"""FlashInfer's adapters on the GQA definitions (runner/ops/_flashinfer.py) on the CPU. FlashInfer's kernels need
the GPU, so the wrappers are replaced by stand-ins of the same signatures (constructor on a workspace, ``plan`` with
the host page table, ``run(…, return_lse=True)``) that attend from what was planned: the adapters' layouts (NHD
cache, page table, last-page lengths, one query per request, causal ragged batches), their plan-once-per-layout
reuse and the plan record the run keeps are checked through the runner's own correctness check against the
float64 reference. A stand-in that drops what an adapter must pass (the last-page lengths, the causal flag) fails
it. On a machine with FlashInfer and a GPU the real wrappers run (the last test)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import case as registry_case  # noqa: E402
from op_cases import op  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.definitions import Adapter  # noqa: E402
from kernelindex.runner.ops import _flashinfer  # noqa: E402
from kernelindex.runner.ops._gqa import attend  # noqa: E402

RAGGED = "gqa-ragged-prefill-causal-h32-kv8-d128"
DECODE_PS64 = "gqa-paged-decode-h32-kv8-d128-ps64"
DECODE_PS1 = "gqa-paged-decode-h20-kv4-d128-ps1"
RAGGED_AXES = {"total_q": 45, "total_kv": 45, "len_indptr": 4}
DECODE_AXES = {"batch_size": 3, "num_kv_indices": 6, "num_pages": 9, "len_indptr": 4}


def case(slug: str, axes: dict[str, int]):  # noqa: ANN201 - a WorkloadCase
    constants = {name: int(axis.expression) for name, axis in registry.load_operation(slug).spec.axes.items()
                 if axis.role == "constant"}
    return registry_case(slug, {**constants, **axes}, "")


class _Wrapper:
    """What the stand-ins share: the workspace check, the plan kept, the calls counted."""

    plans = 0

    def __init__(self, workspace: torch.Tensor, layout: str) -> None:
        assert layout == "NHD" and workspace.dtype == torch.uint8 and workspace.numel() == _flashinfer.WORKSPACE_BYTES
        self._backend = "stand-in"

    def _planned(self, **kw: Any) -> None:
        assert all(not isinstance(t, torch.Tensor) or t.device.type == "cpu" for t in kw.values())
        type(self).plans += 1
        self.p = SimpleNamespace(**kw)


def _paged_tokens(cache: torch.Tensor, indptr: torch.Tensor, indices: torch.Tensor, last: torch.Tensor,
                  b: int) -> torch.Tensor:
    pages = indices[int(indptr[b]):int(indptr[b + 1])].long()
    page_size = cache.shape[1]
    return cache[pages].flatten(0, 1)[: (len(pages) - 1) * page_size + int(last[b])]


def _outputs(parts: list[tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.cat([o for o, _ in parts]).to(dtype), torch.cat([s for _, s in parts])


class StandInDecode(_Wrapper):
    def plan(self, indptr, indices, last, heads, heads_kv, head_dim, page_size, **kw):  # noqa: ANN001, ANN003, ANN201
        self._planned(indptr=indptr, indices=indices, last=last, scale=kw["sm_scale"], page_size=page_size)

    def run(self, q, cache, *, return_lse):  # noqa: ANN001, ANN201
        assert return_lse
        p, (k, v) = self.p, cache
        parts = [attend(q[b:b + 1].float(), _paged_tokens(k, p.indptr, p.indices, p.last, b).float(),
                        _paged_tokens(v, p.indptr, p.indices, p.last, b).float(), p.scale, causal=False)
                 for b in range(p.indptr.numel() - 1)]
        return _outputs(parts, q.dtype)


class StandInPagedPrefill(StandInDecode):
    def plan(self, qo_indptr, indptr, indices, last, heads, heads_kv, head_dim, page_size, **kw):  # noqa: ANN001, ANN003, ANN201
        assert qo_indptr.tolist() == list(range(indptr.numel())) and kw["causal"] is False
        super().plan(indptr, indices, last, heads, heads_kv, head_dim, page_size, **kw)


class StandInRagged(_Wrapper):
    def plan(self, qo_indptr, kv_indptr, heads, heads_kv, head_dim, **kw):  # noqa: ANN001, ANN003, ANN201
        self._planned(qo=qo_indptr.tolist(), kv=kv_indptr.tolist(), causal=kw["causal"], scale=kw["sm_scale"])

    def run(self, q, k, v, *, return_lse):  # noqa: ANN001, ANN201
        p = self.p
        parts = [attend(q[a:b].float(), k[c:d].float(), v[c:d].float(), p.scale, causal=p.causal)
                 for a, b, c, d in zip(p.qo, p.qo[1:], p.kv, p.kv[1:], strict=False)]
        return _outputs(parts, q.dtype)


class IgnoresLastPage(StandInDecode):
    def plan(self, indptr, indices, last, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN201
        super().plan(indptr, indices, torch.full_like(last, args[-1]), *args, **kw)


class NeverCausal(StandInRagged):
    def plan(self, *args, **kw):  # noqa: ANN002, ANN003, ANN201
        super().plan(*args, **{**kw, "causal": False})


def library(decode: type = StandInDecode, ragged: type = StandInRagged) -> Any:
    lib = SimpleNamespace(BatchDecodeWithPagedKVCacheWrapper=decode,
                          BatchPrefillWithPagedKVCacheWrapper=StandInPagedPrefill,
                          BatchPrefillWithRaggedKVCacheWrapper=ragged)
    return lambda: lib


def _adapter(slug: str, key: str, lib: Any) -> Adapter:
    adapter = next(a for a in _flashinfer.flashinfer_adapters(slug, slug != RAGGED, library=lib) if a.key == key)
    adapter.start_case()
    return adapter


def _check(slug: str, axes: dict[str, int], adapter: Adapter):  # noqa: ANN202
    return check(registry.load_operation(slug), case(slug, axes), op(slug), adapter.bind, in_place=False,
                 device="cpu", trials=2)


@pytest.mark.parametrize(("slug", "axes", "key"), [
    (RAGGED, RAGGED_AXES, "flashinfer-ragged-prefill"), (DECODE_PS64, DECODE_AXES, "flashinfer-decode"),
    (DECODE_PS1, DECODE_AXES, "flashinfer-decode"), (DECODE_PS64, DECODE_AXES, "flashinfer-paged-prefill")])
def test_the_layouts_each_definition_declares_pass_the_runners_check(slug: str, axes: dict[str, int],
                                                                     key: str) -> None:
    result = _check(slug, axes, _adapter(slug, key, library()))
    assert result.passed, result.detail


def test_a_decode_that_reads_whole_last_pages_fails() -> None:
    result = _check(DECODE_PS64, DECODE_AXES, _adapter(DECODE_PS64, "flashinfer-decode", library(IgnoresLastPage)))
    assert not result.passed


def test_a_prefill_that_is_not_causal_fails() -> None:
    result = _check(RAGGED, RAGGED_AXES, _adapter(RAGGED, "flashinfer-ragged-prefill", library(ragged=NeverCausal)))
    assert not result.passed


def test_one_plan_per_layout_reused_by_other_input_sets_and_recorded() -> None:
    """The checks bind three input sets of one page table (FlashInfer plans once per batch); each bind reports
    the plan its call runs on, and a new case plans again."""
    StandInDecode.plans = 0
    adapter = _adapter(DECODE_PS64, "flashinfer-decode", library())
    assert _check(DECODE_PS64, DECODE_AXES, adapter).passed
    assert StandInDecode.plans == 2  # the module-loading plan and the timed one, once for the layout
    record = adapter.bind_plan()
    assert record is not None and record.ns > 0 and "backend stand-in" in record.method
    adapter.start_case()
    assert adapter.bind_plan() is None
    _check(DECODE_PS64, DECODE_AXES, adapter)
    assert StandInDecode.plans == 4


def test_names_as_a_user_knows_them() -> None:
    adapters = {a.key: a for a in op(DECODE_PS64).adapters()}
    decode = adapters["flashinfer-decode"]
    assert decode.title.startswith("FlashInfer ") and decode.title.endswith(" batch decode, paged KV")
    assert (decode.project, decode.symbol, decode.packages[0]) == ("flashinfer", "BatchDecodeWithPagedKVCacheWrapper",
                                                                   "flashinfer-python")
    assert {a.key for a in op(RAGGED).adapters()} >= {"flashinfer-ragged-prefill"}


def test_without_flashinfer_the_adapters_say_what_is_missing() -> None:
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        missing = next(a for a in op(RAGGED).adapters() if a.key == "flashinfer-ragged-prefill").missing()
        assert missing is not None and "flashinfer" in missing
    else:
        pytest.skip("FlashInfer is installed here")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="FlashInfer's kernels need a CUDA GPU")
@pytest.mark.parametrize(("slug", "axes", "key"), [
    (RAGGED, RAGGED_AXES, "flashinfer-ragged-prefill"), (DECODE_PS64, DECODE_AXES, "flashinfer-decode"),
    (DECODE_PS1, DECODE_AXES, "flashinfer-paged-prefill")])
def test_flashinfer_passes_on_the_gpu(slug: str, axes: dict[str, int], key: str) -> None:
    adapter = next(a for a in op(slug).adapters() if a.key == key)
    if adapter.missing():
        pytest.skip(adapter.missing() or "")
    adapter.start_case()
    result = check(registry.load_operation(slug), case(slug, axes), op(slug), adapter.bind, in_place=False,
                   device="cuda", trials=2)
    assert result.passed, result.detail


def test_a_run_records_the_plans_host_cost_beside_its_figure_and_its_page_shows_it() -> None:
    from dataclasses import replace

    from runner_fakes import FakeDevice

    from kernelindex.domain.manifests import build
    from kernelindex.readmodel.samples import run_secondary
    from kernelindex.runner.campaign import outcome_rows, verify_operation
    from kernelindex.runner.timing import TimingPolicy

    device = FakeDevice()

    class Timed(StandInDecode):
        def run(self, *args: Any, **kwargs: Any) -> Any:
            device.clock.advance(40_000)  # the fake device's clock moves only when a call says so
            return super().run(*args, **kwargs)

    fake = _adapter(DECODE_PS64, "flashinfer-decode", library(Timed))
    adapter = replace(fake, packages=("torch",), modules=())  # its revision would name FlashInfer's version
    policy = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                          time_budget_ns=100_000_000, host_calls=5)
    environment = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": "Fake GPU"}})
    result = verify_operation(registry.load_operation(DECODE_PS64), [case(DECODE_PS64, DECODE_AXES)], None,
                              device=device, environment=environment, runner={"name": "test", "key_id":
                                                                                    "sha256:" + "0" * 64},
                              policy=policy, calls_per_sample=10, campaign="test", adapters=[adapter])
    [outcome] = result.cases[0].impls
    assert outcome.status == "passed", outcome.error
    timing = outcome.run.spec.timing
    assert timing.secondary["plan_ns"] > 0 and "backend stand-in" in timing.raw["plan_method"]
    assert outcome_rows(result)[0]["plan_ns"] == timing.secondary["plan_ns"]
    shown = {f["key"]: f for f in run_secondary(timing.model_dump(mode="json"))}
    assert shown["plan_ns"]["name"] == "plan time (host)"
    assert "second of two" in shown["plan_ns"]["note"] and "outside the timed call" in shown["plan_ns"]["note"]
