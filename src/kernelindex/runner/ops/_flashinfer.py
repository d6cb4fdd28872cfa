"""FlashInfer's attention wrappers on the GQA definitions (``gqa`` lists them beside PyTorch's kernels):

- ``flashinfer-decode``: ``BatchDecodeWithPagedKVCacheWrapper`` on the paged-decode definitions, reading the
  definition's page table and NHD cache ([pages, page_size, kv_heads, head_dim]) as they are;
- ``flashinfer-paged-prefill``: ``BatchPrefillWithPagedKVCacheWrapper`` on the same definitions, each request one
  query (qo_indptr 0, 1, …, batch), not causal: the prefill kernels over the same page table, as serving engines
  run a decode step on tensor cores;
- ``flashinfer-ragged-prefill``: ``BatchPrefillWithRaggedKVCacheWrapper`` on the ragged causal prefill
  definitions (qo_indptr = kv_indptr, causal, bottom-right aligned as the definitions are).

``plan()`` and the workspace are outside the timed call, as a serving engine plans once per batch and runs every
layer on that plan: the bind makes the wrapper, allocates its 128 MiB float workspace (FlashInfer's recommended
size, zeroed) and plans twice — the first loads the kernel module (FlashInfer compiles it just in time, once per
campaign: the campaign step fi-build builds them before the runs), the second is the plan's host cost, which the run
records beside its figure (``plan_ns``, ``timing.raw.plan_method``). Binds of other input sets with the same page
table (the checks' trials, protocol v4's rotation sets) reuse the planned wrapper, as a model's layers do; the
call is ``run(…, return_lse=True)``, its output and log-sum-exp (base 2, as the definitions return it) allocated
by FlashInfer in the call. ``backend="auto"``: FlashInfer picks its kernels (FA3 on Hopper for the prefill where
it has them); the plan's record names the backend it chose.

The library is a parameter of the binders, so the layouts, plans and reuse are tested on the CPU with a stand-in of
the wrappers' signatures (tests/runner/test_ops_flashinfer.py); the kernels themselves run on the GPU only.
"""

from __future__ import annotations

import hashlib
import importlib
import time
from collections.abc import Callable
from typing import Any

import torch

from kernelindex.policy.library_lines import FLASHINFER_PROJECT, flashinfer_line, flashinfer_title
from kernelindex.runner.definitions import Adapter, Bound, PlanRecord, Tensors

DIST = "flashinfer-python"
PINNED = "0.7.4"  # the version ki runner campaign carry --flashinfer brings to the GPU machine
WORKSPACE_BYTES = 128 << 20
PLANS = "flashinfer-plans"  # Adapter.state: layout digest → (wrapper, its plan record)
Library = Callable[[], Any]


def flashinfer() -> Any:
    return importlib.import_module("flashinfer")


def _version() -> str:
    try:
        return importlib.metadata.version(DIST)
    except importlib.metadata.PackageNotFoundError:
        return PINNED


def _layout_digest(*parts: torch.Tensor | int | float | bool | torch.dtype) -> str:
    """What a plan depends on: the index tensors' values and the head/scale settings."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.detach().cpu().contiguous().numpy().tobytes() if isinstance(part, torch.Tensor) else
                 repr(part).encode())
        h.update(b"|")
    return h.hexdigest()


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _planned(adapter: Adapter, key: str, device: torch.device, make: Callable[[torch.Tensor], Any],
             plan: Callable[[Any], None]) -> Any:
    """The wrapper planned for this layout: made (workspace included) and planned on the first bind of the case,
    reused after. The second of two plans is timed: the first loads the kernel module."""
    plans = adapter.state.setdefault(PLANS, {})
    if key not in plans:
        wrapper = make(torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=device))
        plan(wrapper)
        _synchronize(device)
        start = time.perf_counter_ns()
        plan(wrapper)
        ns = time.perf_counter_ns() - start
        _synchronize(device)
        backend = getattr(wrapper, "_backend", "unknown")
        plans[key] = (wrapper, PlanRecord(ns, f"wall time of the wrapper's plan() on the host (the second of two on "
                                              f"this layout; the first loads the kernel module), backend {backend}"))
    wrapper, record = plans[key]
    adapter.record_plan(record)
    return wrapper


def _decode_layout(x: Tensors) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int, int, int, float]:
    """Host copies of the page table (the plan reads them on the host) and the sizes."""
    pages, page_size, heads_kv, head_dim = x["k_cache"].shape
    indptr, indices = x["kv_indptr"].cpu(), x["kv_indices"].cpu()
    batch = indptr.numel() - 1
    last = (x["kv_last_page_len"].cpu() if "kv_last_page_len" in x
            else torch.full((batch,), page_size, dtype=torch.int32))
    return indptr, indices, last, x["q"].shape[1], heads_kv, head_dim, page_size, float(x["sm_scale"])


def _lse_output(out: Any) -> Tensors:
    output, lse = out
    return {"output": output, "lse": lse}


def decode_binder(library: Library = flashinfer) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        lib = library()
        indptr, indices, last, heads, heads_kv, head_dim, page_size, scale = _decode_layout(x)
        q, cache = x["q"], (x["k_cache"], x["v_cache"])
        key = _layout_digest(indptr, indices, last, heads, heads_kv, head_dim, page_size, scale, q.dtype)

        def plan(w: Any) -> None:
            w.plan(indptr, indices, last, heads, heads_kv, head_dim, page_size, pos_encoding_mode="NONE",
                   sm_scale=scale, q_data_type=q.dtype, kv_data_type=cache[0].dtype)
        wrapper = _planned(adapter, key, q.device, lambda ws: lib.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD"), plan)
        return lambda: _lse_output(wrapper.run(q, cache, return_lse=True))
    return bind


def paged_prefill_binder(library: Library = flashinfer) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        lib = library()
        indptr, indices, last, heads, heads_kv, head_dim, page_size, scale = _decode_layout(x)
        q, cache = x["q"], (x["k_cache"], x["v_cache"])
        qo_indptr = torch.arange(indptr.numel(), dtype=torch.int32)  # one query per request
        key = _layout_digest(qo_indptr, indptr, indices, last, heads, heads_kv, head_dim, page_size, scale, q.dtype)

        def plan(w: Any) -> None:
            w.plan(qo_indptr, indptr, indices, last, heads, heads_kv, head_dim, page_size, causal=False,
                   pos_encoding_mode="NONE", sm_scale=scale, q_data_type=q.dtype, kv_data_type=cache[0].dtype)
        wrapper = _planned(adapter, key, q.device, lambda ws: lib.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD"), plan)
        return lambda: _lse_output(wrapper.run(q, cache, return_lse=True))
    return bind


def ragged_prefill_binder(library: Library = flashinfer) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        lib = library()
        q, k, v = x["q"], x["k"], x["v"]
        qo_indptr, kv_indptr = x["qo_indptr"].cpu(), x["kv_indptr"].cpu()
        heads, (heads_kv, head_dim), scale = q.shape[1], k.shape[1:], float(x["sm_scale"])
        key = _layout_digest(qo_indptr, kv_indptr, heads, heads_kv, head_dim, scale, q.dtype)

        def plan(w: Any) -> None:
            w.plan(qo_indptr, kv_indptr, heads, heads_kv, head_dim, causal=True, pos_encoding_mode="NONE",
                   sm_scale=scale, q_data_type=q.dtype, kv_data_type=k.dtype)
        wrapper = _planned(adapter, key, q.device, lambda ws: lib.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD"), plan)
        return lambda: _lse_output(wrapper.run(q, k, v, return_lse=True))
    return bind


PLAN_WORDS = ("plan() and the 128 MiB workspace are made when binding, outside the timed call, and reused by input "
              "sets of the same page table (the plan's host cost is recorded beside the run)")


def flashinfer_adapters(slug: str, paged: bool, library: Library = flashinfer) -> list[Adapter]:
    """The FlashInfer adapters of a GQA definition, on the lines FlashInfer-Bench's own FlashInfer solutions of the
    definition share (policy/library_lines: one line per wrapper and definition)."""
    version = _version()

    def adapter(key: str, wrapper: str, binder: Callable[[Adapter, Tensors], Bound], what: str) -> Adapter:
        return Adapter(key, slug, flashinfer_line(wrapper, slug), flashinfer_title(wrapper, version),
                       FLASHINFER_PROJECT, "cuda", "flashinfer", wrapper, (DIST, "torch"), ("flashinfer",), binder,
                       description=f"{what}; {PLAN_WORDS}. backend='auto': FlashInfer picks the kernels.")
    if paged:
        return [
            adapter("flashinfer-decode", "BatchDecodeWithPagedKVCacheWrapper", decode_binder(library),
                    "FlashInfer's batch decode over the definition's page table and NHD cache"),
            adapter("flashinfer-paged-prefill", "BatchPrefillWithPagedKVCacheWrapper", paged_prefill_binder(library),
                    "FlashInfer's batch prefill over the definition's page table, one query per request, not causal"),
        ]
    return [adapter("flashinfer-ragged-prefill", "BatchPrefillWithRaggedKVCacheWrapper", ragged_prefill_binder(library),
                    "FlashInfer's batch prefill over the ragged batch (packed tokens, qo_indptr = kv_indptr), causal")]
