"""FlashInfer-Bench's GQA attention definitions: ``gqa-ragged-prefill-causal-*`` (ragged batch, causal) and
``gqa-paged-decode-*`` (one query per request, paged KV cache), bf16, outputs ``output`` and ``lse`` (base 2).

The operations are the registry's copies of the imported definitions (the same digests). Inputs, the
drawn index tensors and the float64 reference are in ``_gqa``. Implementations, each named for
what its timed call does:

- ``baseline``: ours, plain PyTorch in float32 (scores, mask, log-sum-exp, softmax, ·V), a sequence at a time;
- ``flash-varlen``: PyTorch's FlashAttention-2 kernel (``aten._flash_attention_forward``, the kernel of
  SDPA's flash backend) in its variable-length form: the whole ragged batch in one call, GQA native, its
  log-sum-exp returned; the base-2 conversion is one multiply in the call;
- ``efficient-varlen``: PyTorch's memory-efficient kernel (``aten._efficient_attention_forward``, SDPA's
  efficient backend) in its variable-length form; it needs as many K/V heads as query heads, so K and V are
  repeated per query group inside the timed call, and its padded per-sequence log-sum-exp is gathered.

Paged decode: neither kernel reads FlashInfer's page table (PyTorch's flash kernel takes a block table only
for pages of 256 tokens or more), so both **gather the pages into contiguous K/V inside the timed call**
(their names say so) and then attend, each request one query. The token ids of the gather are computed from
the page table when binding (host work, as FlashInfer's plan step is outside its run).

SDPA's cuDNN backend (``sdpa-cudnn``, one call per sequence) and FlexAttention (``flex``, compiled, a
document-causal block mask) are in ``_gqa_more``; FlashInfer's batch decode and prefill wrappers (where FlashInfer
is installed: the campaign step fi-setup brings it to the GPU machine) in ``_flashinfer``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernelindex import registry
from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import our_baseline
from kernelindex.runner.ops._flashinfer import flashinfer_adapters
from kernelindex.runner.ops._gqa import (
    LN2,
    decode_attention,
    decode_inputs,
    ragged_attention,
    ragged_inputs,
    token_table,
)
from kernelindex.runner.ops._gqa_more import more_adapters

MODULE = "kernelindex.runner.ops.gqa"
FLASH = "aten._flash_attention_forward"
EFFICIENT = "aten._efficient_attention_forward"
CAUSAL_FROM_TOP_LEFT = 1  # the efficient kernel's custom_mask_type; with equal query and key lengths, causal


def _slugs(prefix: str) -> list[str]:
    return sorted(slug for slug in registry.operations() if slug.startswith(prefix))


def ragged_reference(x: Tensors) -> Tensors:
    return ragged_attention(x, torch.float64)


def decode_reference(x: Tensors) -> Tensors:
    return decode_attention(x, torch.float64, gather_each=True)


def _as_declared(found: Tensors, dtype: torch.dtype) -> Tensors:
    return {"output": found["output"].to(dtype), "lse": found["lse"].float()}


def _bind_ours_ragged(adapter: Adapter, x: Tensors) -> Bound:
    return lambda: _as_declared(ragged_attention(x, torch.float32), x["q"].dtype)


def _bind_ours_decode(adapter: Adapter, x: Tensors) -> Bound:
    tokens = token_table(x)
    return lambda: _as_declared(decode_attention(x, torch.float32, tokens), x["q"].dtype)


def _base2(lse_by_head: torch.Tensor) -> torch.Tensor:
    """[H, T] natural-log log-sum-exp → [T, H] base 2, written contiguous in one kernel."""
    out = torch.empty(lse_by_head.shape[::-1], dtype=torch.float32, device=lse_by_head.device)
    return torch.mul(lse_by_head.t(), 1.0 / LN2, out=out)


def _lengths(offsets: torch.Tensor) -> list[int]:
    bounds = offsets.cpu().tolist()
    return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


def _flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor, cu_k: torch.Tensor,
           max_q: int, max_k: int, causal: bool, scale: float) -> Tensors:
    out, lse = torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal, False,
                                                       scale=scale)[:2]
    return {"output": out, "lse": _base2(lse)}


class _EfficientLse:
    """Where each token's log-sum-exp sits in the efficient kernel's padded [sequences, H, max_q] answer."""

    def __init__(self, cu_q: torch.Tensor) -> None:
        lengths = _lengths(cu_q)
        device = cu_q.device
        self.sequence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths)).to(device)
        self.position = torch.cat([torch.arange(n) for n in lengths]).to(device)

    def __call__(self, lse: torch.Tensor) -> torch.Tensor:
        return lse.permute(0, 2, 1)[self.sequence, self.position] * (1.0 / LN2)


def _efficient(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor, cu_k: torch.Tensor,
               max_q: int, max_k: int, causal: bool, scale: float, lse_at: _EfficientLse) -> Tensors:
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, dim=1) if group > 1 else t for t in (k, v))
    out, lse = torch.ops.aten._efficient_attention_forward(
        q[None], k[None], v[None], None, cu_q, cu_k, max_q, max_k, 0.0, CAUSAL_FROM_TOP_LEFT if causal else 0,
        True, scale=scale)[:2]
    return {"output": out[0], "lse": lse_at(lse)}


def _bind_ragged(kernel: str) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        q, k, v, cu_q, cu_k = (x[n] for n in ("q", "k", "v", "qo_indptr", "kv_indptr"))
        max_q, max_k, scale = max(_lengths(cu_q)), max(_lengths(cu_k)), float(x["sm_scale"])
        if kernel == "flash":
            return lambda: _flash(q, k, v, cu_q, cu_k, max_q, max_k, True, scale)
        lse_at = _EfficientLse(cu_q)
        return lambda: _efficient(q, k, v, cu_q, cu_k, max_q, max_k, True, scale, lse_at)
    return bind


def _bind_decode(kernel: str) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        ids, cu_k = token_table(x)
        q, scale = x["q"], float(x["sm_scale"])
        heads_kv, head_dim = x["k_cache"].shape[2:]
        k_flat, v_flat = (x[n].view(-1, heads_kv, head_dim) for n in ("k_cache", "v_cache"))
        cu_q = torch.arange(q.shape[0] + 1, dtype=torch.int32, device=q.device)
        max_k = max(_lengths(cu_k))
        lse_at = _EfficientLse(cu_q)

        def call() -> Tensors:
            k, v = k_flat.index_select(0, ids), v_flat.index_select(0, ids)  # the gather is timed
            if kernel == "flash":
                return _flash(q, k, v, cu_q, cu_k, 1, max_k, False, scale)
            return _efficient(q, k, v, cu_q, cu_k, 1, max_k, False, scale, lse_at)
        return call
    return bind


def _kernel_adapter(slug: str, kernel: str, paged: bool) -> Adapter:
    symbol = FLASH if kernel == "flash" else EFFICIENT
    gather = "pages gathered into contiguous K/V in the call, then " if paged else ""
    words = {"flash": f"{gather}PyTorch's FlashAttention-2 kernel, variable-length form (SDPA's flash backend)",
             "efficient": f"{gather}PyTorch's memory-efficient kernel, variable-length form (SDPA's efficient "
                          "backend); K/V heads repeated to the query heads in the call"}[kernel]
    title = {"flash": "FlashAttention-2 varlen (PyTorch)", "efficient": "memory-efficient attention varlen (PyTorch)"}
    binder = (_bind_decode if paged else _bind_ragged)(kernel)
    return Adapter(f"{kernel}-varlen", slug, f"torch-{kernel}-varlen{'-gather' if paged else ''}",
                   title[kernel] + (" after a page gather" if paged else ""), "pytorch", "cuda", "torch.ops",
                   symbol, ("torch",), ("torch",), binder, description=words + ".")


def _operation(slug: str, paged: bool) -> OperationDef:
    def adapters() -> list[Adapter]:
        ours = our_baseline(slug, MODULE, "decode_attention" if paged else "ragged_attention",
                            _bind_ours_decode if paged else _bind_ours_ragged,
                            why="computed in float32, a sequence at a time, from the definition's semantics")
        return [ours, _kernel_adapter(slug, "flash", paged), _kernel_adapter(slug, "efficient", paged),
                *more_adapters(slug, paged), *flashinfer_adapters(slug, paged)]

    make: Callable[[WorkloadCase, torch.Generator, torch.device], Tensors] = decode_inputs if paged else ragged_inputs
    return OperationDef(slug, make, decode_reference if paged else ragged_reference, adapters)


OPERATIONS = [
    *(_operation(slug, paged=False) for slug in _slugs("gqa-ragged-prefill-causal-")),
    *(_operation(slug, paged=True) for slug in _slugs("gqa-paged-decode-")),
]
