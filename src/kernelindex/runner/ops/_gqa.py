"""Inputs and attention arithmetic shared by the GQA operations (``gqa``): FlashInfer-Bench's ragged causal
prefill and paged decode definitions, bf16, with the log-sum-exp returned in base 2 (as FlashInfer's
definitions return it: logsumexp of the scaled scores ÷ ln 2).

The export records each case's sizes (total tokens, sequences, pages) but not the traced index tensors
(``qo_indptr``, ``kv_indptr``, ``kv_indices``, ``kv_last_page_len``: safetensors files the export does not
carry). The runner draws them, fixed per case so every implementation and every check sees the same
batch: sequence lengths from uniformly random distinct cut points of the total (each at least 1), pages
distinct and in random order, last-page fill uniform in [1, page_size]. ``sm_scale`` is 1/√head_dim, the
value every traced case records (the export keeps the scalar's dtype, not its value).
"""

from __future__ import annotations

import math

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import Tensors
from kernelindex.runner.ops._common import decls, place, randn, shape

LN2 = math.log(2.0)
SPLIT_SEED = 20_261_201
# The float64 reference and our fp32 baseline score a chunk of query rows at a time: at most this many
# scores (1 GiB of float64) are held at once, so a 13,557-token causal sequence needs no 47 GB matrix.
CHUNK_SCORES = 1 << 27


class CaseNotSupported(ValueError):
    """The case's sizes cannot be filled as the definition requires; the message says which and why."""


def split(total: int, parts: int, seed: int) -> list[int]:
    """``parts`` lengths of at least 1 summing to ``total``: cut points drawn uniformly without repeats."""
    if not 1 <= parts <= total:
        raise CaseNotSupported(f"cannot split {total} tokens into {parts} non-empty sequences")
    gen = torch.Generator().manual_seed(seed)
    cuts = sorted((torch.randperm(total - 1, generator=gen)[: parts - 1] + 1).tolist())
    bounds = [0, *cuts, total]
    return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


def indptr(lengths: list[int]) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)


def _scale(workload: WorkloadCase) -> torch.Tensor:
    return torch.tensor(shape(workload, "q")[-1] ** -0.5, dtype=torch.float32)


def ragged_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    total_q, total_kv = shape(workload, "q")[0], shape(workload, "k")[0]
    sequences = shape(workload, "qo_indptr")[0] - 1
    if total_q != total_kv:
        raise CaseNotSupported(
            f"total_q {total_q} differs from total_kv {total_kv}: the runner pairs each sequence's queries with "
            "as many keys (a prefill without a cached prefix, as every traced case of these definitions is)")
    offsets = indptr(split(total_q, sequences, SPLIT_SEED + 1000 * total_q + sequences))
    values = {"q": randn(workload, "q", gen, device), "k": randn(workload, "k", gen, device),
              "v": randn(workload, "v", gen, device), "qo_indptr": offsets, "kv_indptr": offsets.clone(),
              "sm_scale": _scale(workload)}
    return place(values, workload, device)


def decode_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    batch, entries = shape(workload, "q")[0], shape(workload, "kv_indices")[0]
    pages, page_size = shape(workload, "k_cache")[:2]
    if entries > pages:
        raise CaseNotSupported(f"{entries} page-table entries but only {pages} pages: pages would repeat")
    seed = SPLIT_SEED + 1000 * entries + batch
    layout = torch.Generator().manual_seed(seed + 1)
    values = {"q": randn(workload, "q", gen, device), "k_cache": randn(workload, "k_cache", gen, device),
              "v_cache": randn(workload, "v_cache", gen, device), "kv_indptr": indptr(split(entries, batch, seed)),
              "kv_indices": torch.randperm(pages, generator=layout)[:entries].to(torch.int32),
              "sm_scale": _scale(workload)}
    if "kv_last_page_len" in decls(workload):
        values["kv_last_page_len"] = torch.randint(1, page_size + 1, (batch,), generator=layout, dtype=torch.int32)
    return place(values, workload, device)


def token_table(x: Tensors) -> tuple[torch.Tensor, torch.Tensor]:
    """Where each sequence's cached tokens are: (token ids into the flattened cache [pages · page_size],
    int64; token offsets per sequence, int32), on the cache's device. Host work, done when binding."""
    page_size = x["k_cache"].shape[1]
    starts = x["kv_indptr"].cpu().tolist()
    pages = x["kv_indices"].cpu().long()
    last = x["kv_last_page_len"].cpu().tolist() if "kv_last_page_len" in x else [page_size] * (len(starts) - 1)
    ids, lengths = [], []
    for seq, (lo, hi) in enumerate(zip(starts, starts[1:], strict=False)):
        tokens = (pages[lo:hi, None] * page_size + torch.arange(page_size)).flatten()
        keep = (hi - lo - 1) * page_size + last[seq]
        ids.append(tokens[:keep])
        lengths.append(keep)
    device = x["k_cache"].device
    return torch.cat(ids).to(device), indptr(lengths).to(device)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
           causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """One sequence: q [Lq, H, D], k/v [Lk, Hkv, D] (query head h reads key head h // (H / Hkv)) → output
    [Lq, H, D] and base-2 log-sum-exp [Lq, H], in q's dtype. Causal: query i sees keys up to i + Lk − Lq."""
    heads, q_len, k_len = q.shape[1], q.shape[0], k.shape[0]
    group = heads // k.shape[1]
    keys = k.repeat_interleave(group, dim=1).transpose(0, 1)  # [H, Lk, D]
    values = v.repeat_interleave(group, dim=1).transpose(0, 1)
    step = max(1, CHUNK_SCORES // (heads * k_len))
    outputs, lses = [], []
    for start in range(0, q_len, step):
        scores = q[start:start + step].transpose(0, 1) @ keys.transpose(1, 2) * scale  # [H, c, Lk]
        if causal:
            rows = torch.arange(start, start + scores.shape[1], device=q.device).unsqueeze(1) + (k_len - q_len)
            scores = scores.masked_fill(torch.arange(k_len, device=q.device) > rows, float("-inf"))
        lses.append((torch.logsumexp(scores, dim=-1) / LN2).transpose(0, 1))
        outputs.append((scores.softmax(-1) @ values).transpose(0, 1))
    return torch.cat(outputs), torch.cat(lses)


def ragged_attention(x: Tensors, dtype: torch.dtype) -> Tensors:
    """The ragged causal prefill computed in ``dtype``, sequence by sequence."""
    scale = float(x["sm_scale"])
    q, k, v = (x[n].to(dtype) for n in ("q", "k", "v"))
    q_ptr, kv_ptr = x["qo_indptr"].cpu().tolist(), x["kv_indptr"].cpu().tolist()
    parts = [attend(q[a:b], k[c:d], v[c:d], scale, causal=True)
             for a, b, c, d in zip(q_ptr, q_ptr[1:], kv_ptr, kv_ptr[1:], strict=False)]
    return {"output": torch.cat([o for o, _ in parts]), "lse": torch.cat([s for _, s in parts])}


def decode_attention(x: Tensors, dtype: torch.dtype, tokens: tuple[torch.Tensor, torch.Tensor] | None = None,
                     *, gather_each: bool = False) -> Tensors:
    """The paged decode computed in ``dtype``: each request's one query against its pages' tokens, gathered
    from the cache for all requests at once, or with ``gather_each`` a request at a time (the float64
    reference: the largest traced decode, 3.1 M cached tokens of 8 KV heads × 128, gathers 23.5 GiB of
    keys and as much of values at once in float64 — out of memory on an H200 beside its inputs)."""
    ids, starts = tokens if tokens is not None else token_table(x)
    scale, bounds = float(x["sm_scale"]), starts.cpu().tolist()
    heads_kv, head_dim = x["k_cache"].shape[2:]
    k_all = x["k_cache"].reshape(-1, heads_kv, head_dim)
    v_all = x["v_cache"].reshape(-1, heads_kv, head_dim)
    q = x["q"].to(dtype)
    spans = list(zip(bounds, bounds[1:], strict=False))
    if gather_each:  # a generator: one request's gather alive at a time
        keys_values = ((k_all[ids[lo:hi]].to(dtype), v_all[ids[lo:hi]].to(dtype)) for lo, hi in spans)
    else:
        k, v = k_all[ids].to(dtype), v_all[ids].to(dtype)
        keys_values = ((k[lo:hi], v[lo:hi]) for lo, hi in spans)
    parts = [attend(q[b:b + 1], k_b, v_b, scale, causal=False) for b, (k_b, v_b) in enumerate(keys_values)]
    return {"output": torch.cat([o for o, _ in parts]), "lse": torch.cat([s for _, s in parts])}
