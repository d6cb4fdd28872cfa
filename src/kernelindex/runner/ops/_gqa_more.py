"""The GQA operations' SDPA cuDNN and FlexAttention implementations (``gqa`` lists them beside flash-varlen):

- ``sdpa-cudnn``: PyTorch SDPA's cuDNN backend (``aten._scaled_dot_product_cudnn_attention``, the kernel
  ``scaled_dot_product_attention`` runs under ``SDPBackend.CUDNN_ATTENTION``; the private entry point because
  it returns the log-sum-exp). It takes a dense [batch, heads, length, dim] batch, so a ragged batch is **one
  call per sequence inside the timed call** — not padded: padding to the longest sequence would compute
  (and time) scores that no sequence has, up to batch × longest² against Σ length². K/V heads are repeated
  to the query heads once per call (the dense entry point is not given FlashInfer's head grouping). Paged
  decode gathers each request's pages into contiguous K/V in the call, then one call per request.
- ``flex``: FlexAttention (``torch.nn.attention.flex_attention``) compiled by ``torch.compile`` (its
  Triton kernel; eager runs an unfused reference). A ragged batch is one call over the packed tokens with
  a **document-causal block mask** (same sequence and key ≤ query), built when binding (as FlashInfer's
  plan step); GQA native (``enable_gqa``). Paged decode **gathers** the pages into contiguous K/V in the
  call (FlexAttention's paged support is an experimental class that rewrites its own cache layout, not
  FlashInfer's page table), then one call with a document mask: each request's one query sees its tokens.

Both return the log-sum-exp in base 2 (natural log ÷ ln 2) as [tokens, heads], as the definitions do.
The kernels are parameters of the binders, so the reshaping, per-sequence and masking logic is tested on
the CPU with a stand-in for cuDNN and FlexAttention in eager mode (tests/runner/test_ops_gqa_more.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelindex.runner.definitions import Adapter, Bound, Tensors
from kernelindex.runner.ops._common import compiled
from kernelindex.runner.ops._gqa import LN2, token_table

CUDNN = "aten._scaled_dot_product_cudnn_attention"
FLEX = "torch.nn.attention.flex_attention.flex_attention"
Kernel = Callable[..., Any]


def _bounds(offsets: torch.Tensor) -> list[int]:
    return [int(b) for b in offsets.cpu().tolist()]


def _heads_first(t: torch.Tensor) -> torch.Tensor:
    """[L, H, D] → [1, H, L, D] (a view)."""
    return t.transpose(0, 1)[None]


def _repeat_heads(k: torch.Tensor, v: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    group = heads // k.shape[1]
    return (k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)) if group > 1 else (k, v)


def _base2_tokens_first(lse_by_head: torch.Tensor) -> torch.Tensor:
    """[H, T] natural log → [T, H] base 2, contiguous."""
    out = torch.empty(lse_by_head.shape[::-1], dtype=torch.float32, device=lse_by_head.device)
    return torch.mul(lse_by_head.t(), 1.0 / LN2, out=out)


def cudnn_kernel() -> Kernel:
    return torch.ops.aten._scaled_dot_product_cudnn_attention


def _dense_calls(kernel: Kernel, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_bounds: list[int],
                 k_bounds: list[int], causal: bool, scale: float) -> Tensors:
    """One dense call per sequence (q rows q_bounds[i]:q_bounds[i+1] against k rows k_bounds[i]:…), K/V
    already at the query's head count; outputs and log-sum-exp concatenated in token order."""
    heads = q.shape[1]
    outs, lses = [], []
    for qa, qb, ka, kb in zip(q_bounds, q_bounds[1:], k_bounds, k_bounds[1:], strict=False):
        out, lse = kernel(_heads_first(q[qa:qb]), _heads_first(k[ka:kb]), _heads_first(v[ka:kb]), None, True,
                          0.0, causal, False, scale=scale)[:2]
        outs.append(out[0].transpose(0, 1))
        lses.append(lse.reshape(heads, qb - qa))
    return {"output": torch.cat(outs), "lse": _base2_tokens_first(torch.cat(lses, dim=1))}


def cudnn_binder(paged: bool, kernel: Callable[[], Kernel] = cudnn_kernel) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        run, q, scale = kernel(), x["q"], float(x["sm_scale"])
        if not paged:
            bounds = _bounds(x["qo_indptr"])

            def ragged() -> Tensors:
                k, v = _repeat_heads(x["k"], x["v"], q.shape[1])
                return _dense_calls(run, q, k, v, bounds, bounds, True, scale)
            return ragged
        ids, cu_k = token_table(x)
        heads_kv, head_dim = x["k_cache"].shape[2:]
        k_flat, v_flat = (x[n].view(-1, heads_kv, head_dim) for n in ("k_cache", "v_cache"))
        per_request, k_bounds = list(range(q.shape[0] + 1)), _bounds(cu_k)

        def decode() -> Tensors:
            k, v = _repeat_heads(k_flat.index_select(0, ids), v_flat.index_select(0, ids), q.shape[1])
            return _dense_calls(run, q, k, v, per_request, k_bounds, False, scale)
        return decode
    return bind


def flex_function() -> Kernel:
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention


def _documents(bounds: list[int], device: torch.device) -> torch.Tensor:
    lengths = torch.tensor([b - a for a, b in zip(bounds, bounds[1:], strict=False)])
    return torch.repeat_interleave(torch.arange(len(lengths)), lengths).to(device)


def flex_binder(paged: bool, compile_it: bool = True) -> Callable[[Adapter, Tensors], Bound]:
    """``compile_it=False``: FlexAttention's eager (unfused reference) path, for checking the masks on a CPU."""
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        from torch.nn.attention.flex_attention import create_block_mask

        run = compiled(adapter, flex_function) if compile_it else flex_function()
        q, scale, device = x["q"], float(x["sm_scale"]), x["q"].device
        if not paged:
            doc = _documents(_bounds(x["qo_indptr"]), device)
            total = q.shape[0]

            def document_causal(b: Any, h: Any, qi: Any, ki: Any) -> Any:
                return (doc[qi] == doc[ki]) & (qi >= ki)
            mask = create_block_mask(document_causal, None, None, total, total, device=device)
            k, v = x["k"], x["v"]
            return lambda: _flex_call(run, q, k, v, mask, scale)
        ids, cu_k = token_table(x)
        doc_k = _documents(_bounds(cu_k), device)

        def own_tokens(b: Any, h: Any, qi: Any, ki: Any) -> Any:
            return doc_k[ki] == qi
        mask = create_block_mask(own_tokens, None, None, q.shape[0], ids.shape[0], device=device)
        heads_kv, head_dim = x["k_cache"].shape[2:]
        k_flat, v_flat = (x[n].view(-1, heads_kv, head_dim) for n in ("k_cache", "v_cache"))
        return lambda: _flex_call(run, q, k_flat.index_select(0, ids), v_flat.index_select(0, ids), mask, scale)
    return bind


def _ask_for_lse() -> dict[str, Any]:
    """``return_aux=AuxRequest(lse=True)`` where torch has it (``return_lse`` is deprecated there)."""
    try:
        from torch.nn.attention.flex_attention import AuxRequest
    except ImportError:
        return {"return_lse": True}
    return {"return_aux": AuxRequest(lse=True)}


def _flex_call(run: Kernel, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any, scale: float) -> Tensors:
    out, aux = run(_heads_first(q), _heads_first(k), _heads_first(v), block_mask=mask, scale=scale,
                   enable_gqa=True, **_ASK_FOR_LSE)
    lse = aux.lse if hasattr(aux, "lse") else aux
    return {"output": out[0].transpose(0, 1).contiguous(), "lse": _base2_tokens_first(lse[0])}


_ASK_FOR_LSE = _ask_for_lse()


CUDNN_WORDS = {
    False: "PyTorch SDPA's cuDNN backend (the kernel of SDPBackend.CUDNN_ATTENTION), a dense entry point: one call "
           "per sequence inside the timed call (not padded); K/V heads repeated to the query heads in the call",
    True: "pages gathered into contiguous K/V in the call, then PyTorch SDPA's cuDNN backend, one call per "
          "request; K/V heads repeated to the query heads in the call",
}
FLEX_WORDS = {
    False: "FlexAttention compiled by torch.compile (its Triton kernel): the packed batch in one call with a "
           "document-causal block mask built when binding; GQA native",
    True: "pages gathered into contiguous K/V in the call, then FlexAttention compiled by torch.compile, one call "
          "with a block mask giving each request's query its own tokens; GQA native",
}


def more_adapters(slug: str, paged: bool) -> list[Adapter]:
    """The cuDNN and FlexAttention adapters of one GQA operation; paged lines end in ``-gather``."""
    cudnn_line = "torch-sdpa-cudnn-per-request-gather" if paged else "torch-sdpa-cudnn-per-sequence"
    after = " after a page gather" if paged else ""
    return [
        Adapter("sdpa-cudnn", slug, cudnn_line, f"SDPA cuDNN backend (PyTorch){after}", "pytorch", "cuda",
                "torch.ops", CUDNN, ("torch",), ("torch",), cudnn_binder(paged), description=CUDNN_WORDS[paged] + "."),
        Adapter("flex", slug, "torch-flex-attention-gather" if paged else "torch-flex-attention-document-mask",
                f"FlexAttention (torch.compile){after}", "pytorch", "triton", "torch.nn.attention.flex_attention",
                f"compile({FLEX})", ("torch", "triton"), ("torch._inductor", "torch.nn.attention.flex_attention"),
                flex_binder(paged), description=FLEX_WORDS[paged] + "."),
    ]
