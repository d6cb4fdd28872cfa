"""The GQA operations' SDPA cuDNN and FlexAttention adapters (runner/ops/_gqa_more.py) on the CPU: cuDNN is
GPU-only, so its per-sequence / per-request calling, head repetition and base-2 lse are checked with a
stand-in for the cuDNN kernel (same signature, plain SDPA math inside); FlexAttention runs eagerly on the
CPU, so its document-causal and per-request block masks are checked for real. Both through the runner's own
correctness check against the float64 reference; a wrong mask must fail it."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from op_cases import case as registry_case  # noqa: E402
from op_cases import op  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.ops._gqa_more import cudnn_binder, flex_binder  # noqa: E402

RAGGED = "gqa-ragged-prefill-causal-h32-kv8-d128"
DECODE_PS64 = "gqa-paged-decode-h32-kv8-d128-ps64"
DECODE_PS1 = "gqa-paged-decode-h20-kv4-d128-ps1"
RAGGED_AXES = {"total_q": 45, "total_kv": 45, "len_indptr": 4}
DECODE_AXES = {"batch_size": 3, "num_kv_indices": 6, "num_pages": 9, "len_indptr": 4}


def case(slug: str, axes: dict[str, int]):  # noqa: ANN201 - a WorkloadCase
    constants = {name: int(axis.expression) for name, axis in registry.load_operation(slug).spec.axes.items()
                 if axis.role == "constant"}
    return registry_case(slug, {**constants, **axes}, "")


def stand_in_cudnn(q, k, v, bias, compute_lse, dropout, is_causal, debug, *, scale):  # noqa: ANN001, ANN201
    """The cuDNN kernel's contract on [1, H, L, D] inputs with equal head counts: (output, natural-log lse
    [1, H, L], …)."""
    assert bias is None and compute_lse and dropout == 0.0 and not debug and q.shape[1] == k.shape[1]
    scores = (q.float() @ k.float().transpose(-1, -2)) * scale
    if is_causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
    out = (scores.softmax(-1) @ v.float()).to(q.dtype)
    return out, torch.logsumexp(scores, -1), None, None, 0, 0, None, None, None


def _passes(slug: str, axes: dict[str, int], bind) -> object:  # noqa: ANN001
    adapter = next(a for a in op(slug).adapters() if a.key == "flex")
    adapter.start_case()
    return check(registry.load_operation(slug), case(slug, axes), op(slug), lambda x: bind(adapter, x),
                 in_place=False, device="cpu", trials=2)


@pytest.mark.parametrize(("slug", "axes"), [(RAGGED, RAGGED_AXES), (DECODE_PS64, DECODE_AXES),
                                            (DECODE_PS1, DECODE_AXES)])
def test_cudnn_calls_per_sequence_pass_the_runners_check(slug: str, axes: dict[str, int]) -> None:
    result = _passes(slug, axes, cudnn_binder(slug != RAGGED, kernel=lambda: stand_in_cudnn))
    assert result.passed, result.detail  # type: ignore[attr-defined]


def test_cudnn_without_the_causal_flag_fails() -> None:
    def not_causal(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return stand_in_cudnn(*args[:6], False, *args[7:], **kwargs)
    result = _passes(RAGGED, RAGGED_AXES, cudnn_binder(False, kernel=lambda: not_causal))
    assert not result.passed  # type: ignore[attr-defined]


@pytest.mark.parametrize(("slug", "axes"), [(RAGGED, RAGGED_AXES), (DECODE_PS64, DECODE_AXES)])
def test_flex_block_masks_pass_the_runners_check_eagerly(slug: str, axes: dict[str, int]) -> None:
    result = _passes(slug, axes, flex_binder(slug != RAGGED, compile_it=False))
    assert result.passed, result.detail  # type: ignore[attr-defined]


def test_flex_lse_is_base_2() -> None:
    """A single sequence of one token attends only itself: lse = q·k·scale ÷ ln 2."""
    adapter = next(a for a in op(RAGGED).adapters() if a.key == "flex")
    x = {"q": torch.randn(1, 32, 128), "k": torch.randn(1, 8, 128), "v": torch.randn(1, 8, 128),
         "qo_indptr": torch.tensor([0, 1], dtype=torch.int32), "sm_scale": torch.tensor(128**-0.5)}
    got = flex_binder(False, compile_it=False)(adapter, x)()
    want = (x["q"][0] * x["k"][0].repeat_interleave(4, 0)).sum(-1) * 128**-0.5 / math.log(2)
    assert torch.allclose(got["lse"][0], want, atol=1e-4)
    assert torch.allclose(got["output"][0], x["v"][0].repeat_interleave(4, 0), atol=1e-5)


def test_adapter_names_say_how_the_batch_is_called() -> None:
    ragged = {a.key: a.line for a in op(RAGGED).adapters()}
    decode = {a.key: a.line for a in op(DECODE_PS1).adapters()}
    assert ragged["sdpa-cudnn"] == "torch-sdpa-cudnn-per-sequence"
    assert ragged["flex"] == "torch-flex-attention-document-mask"
    assert decode["sdpa-cudnn"].endswith("-gather") and decode["flex"].endswith("-gather")
