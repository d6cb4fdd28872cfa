"""Shared pieces of the operation modules: case tensors, placement, and adapter constructors.

No ``OPERATIONS`` here; the operation modules (``losses``, ``fused_linear``, ...) import from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import torch

from kernelindex import registry
from kernelindex.domain.manifests import WorkloadCase
from kernelindex.domain.specs import ConcreteTensor
from kernelindex.runner.adapters import compiled as compiled  # re-exported for the operation modules
from kernelindex.runner.adapters import ours
from kernelindex.runner.definitions import Adapter, Bound, Tensors
from kernelindex.runner.inputs import TORCH_DTYPES

DTYPES = {**TORCH_DTYPES, "bool": torch.bool, "int8": torch.int8}
LIGER = ("liger-kernel", "torch", "triton")
OUR_BASELINE_TITLE = "PyTorch reference baseline (KernelIndex)"

Binder = Callable[[Adapter, Tensors], Bound]


def decls(workload: WorkloadCase) -> dict[str, ConcreteTensor]:
    return {t.name: t for t in workload.spec.tensors}


def shape(workload: WorkloadCase, name: str) -> tuple[int, ...]:
    return tuple(decls(workload)[name].shape)


def dtype(workload: WorkloadCase, name: str) -> torch.dtype:
    declared = decls(workload)[name].dtype
    try:
        return DTYPES[declared]
    except KeyError:
        raise ValueError(f"tensor {name}: dtype {declared!r} has no torch equivalent in the runner") from None


def param(workload: WorkloadCase, name: str, default: Any) -> Any:
    """A workload parameter (``bias``, ``ignore_index``, ``kernel_size`` ...) or the source's default."""
    return workload.spec.params.get(name, default)


PARAM_PREFIX = "param:"


def with_params(inputs: Tensors, workload: WorkloadCase, defaults: dict[str, Any]) -> Tensors:
    """Add the workload parameters the call needs (``ignore_index``, ``kernel_size`` ...) to the inputs as
    0-d CPU tensors named ``param:<name>``: binders read them once when binding, never inside a timed call,
    and the reference reads them from its copy of the inputs. They are not operation inputs."""
    for name, default in defaults.items():
        value = param(workload, name, default)
        kind = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float64
        inputs[PARAM_PREFIX + name] = torch.tensor(value, dtype=kind)
    return inputs


def params_of(x: Tensors) -> dict[str, Any]:
    return {name.removeprefix(PARAM_PREFIX): t.item() for name, t in x.items() if name.startswith(PARAM_PREFIX)}


def place(values: dict[str, torch.Tensor], workload: WorkloadCase, device: torch.device) -> Tensors:
    """Copy each value into a tensor with the case's declared shape, dtype and strides."""
    placed = {}
    for name, value in values.items():
        decl = decls(workload)[name]
        out = torch.empty_strided(tuple(decl.shape), tuple(decl.strides), dtype=dtype(workload, name), device=device)
        out.copy_(value)
        placed[name] = out
    return placed


def randn(
    workload: WorkloadCase, name: str, gen: torch.Generator, device: torch.device, scale: float = 1.0
) -> torch.Tensor:
    return torch.randn(shape(workload, name), generator=gen, device=device, dtype=torch.float32) * scale


def targets(
    count_shape: tuple[int, ...], vocab: int, gen: torch.Generator, device: torch.device,
    *, ignore_index: int | None = None, ignored_fraction: float = 0.1,
) -> torch.Tensor:
    """Class ids uniform in [0, vocab); with ``ignore_index``, about ``ignored_fraction`` of them ignored."""
    ids = torch.randint(0, vocab, count_shape, generator=gen, device=device)
    if ignore_index is not None:
        drop = torch.rand(count_shape, generator=gen, device=device) < ignored_fraction
        drop.view(-1)[0] = False  # at least one counted target
        ids = torch.where(drop, torch.full_like(ids, ignore_index), ids)
    return ids


def at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """Half-precision values upcast to float32 for a numerically safe reduction; float32/64 as they are."""
    return t.float() if t.element_size() < 4 else t


def loss_as(dtype: torch.dtype, loss: torch.Tensor) -> Tensors:
    """``{"loss": loss}`` in the declared dtype. Liger's fused losses return a float32 loss for bf16 inputs
    where the operation declares the inputs' dtype; the cast of a scalar is one negligible extra kernel."""
    return {"loss": loss if loss.dtype == dtype else loss.to(dtype)}


# Float64 references of LM-sized cases (65,536 tokens × a 128,256 vocab) would need tens of GB per copy of
# the logits: they are computed a chunk of rows at a time, each chunk recomputed in the backward
# (activation checkpointing), so only one chunk's float64 intermediates (about 1 GiB) are held at once.
REFERENCE_CHUNK_ELEMENTS = 1 << 27


def chunked_sum(
    fn: Callable[..., Any], per_row: Sequence[torch.Tensor], shared: Sequence[torch.Tensor] = (), *, row_elements: int
) -> Any:
    """Σ over chunks of the leading dimension of ``fn(*row_chunks, *shared)`` (a tensor or a tuple of them)."""
    from torch.utils.checkpoint import checkpoint

    step = max(1, REFERENCE_CHUNK_ELEMENTS // max(1, row_elements))
    total: Any = None
    for start in range(0, per_row[0].shape[0], step):
        part = checkpoint(fn, *(t[start:start + step] for t in per_row), *shared, use_reentrant=False)
        if total is None:
            total = part
        elif isinstance(part, tuple):
            total = tuple(a + b for a, b in zip(total, part, strict=True))
        else:
            total = total + part
    return total


def chunked_cat(
    fn: Callable[..., torch.Tensor], per_row: Sequence[torch.Tensor], shared: Sequence[torch.Tensor] = (), *,
    row_elements: int,
) -> torch.Tensor:
    """``fn(*row_chunks, *shared)`` over chunks of the leading dimension, concatenated back along it."""
    from torch.utils.checkpoint import checkpoint

    step = max(1, REFERENCE_CHUNK_ELEMENTS // max(1, row_elements))
    parts = [checkpoint(fn, *(t[start:start + step] for t in per_row), *shared, use_reentrant=False)
             for start in range(0, per_row[0].shape[0], step)]
    return torch.cat(parts)


def _chunk_token_logps(x: torch.Tensor, ids: torch.Tensor, weight: torch.Tensor, *bias: torch.Tensor) -> torch.Tensor:
    logits = x.double() @ weight.T
    if bias:
        logits = logits + bias[0]
    return logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def reference_token_logps(
    x: torch.Tensor, weight: torch.Tensor, ids: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """Float64 log-softmax(x @ weight^T + bias) at ``ids`` (each in range), one chunk of rows at a time;
    ``x`` is [rows, ..., hidden] and ``ids`` [rows, ...]."""
    shared = [weight.double()] + ([] if bias is None else [bias.double()])
    per_row_tokens = ids[0].numel() if ids.dim() > 1 else 1
    return chunked_cat(_chunk_token_logps, [x, ids], shared, row_elements=per_row_tokens * weight.shape[0])


def bind_loss(make: Callable[[], Callable[..., torch.Tensor]], *names: str) -> Binder:
    """Binder of a PyTorch loss: ``loss = make()`` when it binds, then ``{"loss": loss(x[name], ...)}`` over the
    inputs ``names`` in order (``make``: ``lambda: torch_jsd``, ``lambda: torch.nn.KLDivLoss(...)``)."""
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        args, loss = [x[name] for name in names], make()
        return lambda: {"loss": loss(*args)}
    return bind


def bind_compiled_loss(make: Callable[[], Callable[..., torch.Tensor]], *names: str) -> Binder:
    """``bind_loss`` of ``torch.compile(make())``, compiled once per case (``compiled``)."""
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        args, loss = [x[name] for name in names], compiled(adapter, make)
        return lambda: {"loss": loss(*args)}
    return bind


def liger_callable(adapter: Adapter) -> Callable[..., Any]:
    """The Liger adapter's ``module.symbol``, imported when it binds (listing the adapter needs no Liger)."""
    return getattr(importlib.import_module(adapter.module), adapter.symbol)


def call_binders(call: Callable[[Callable[..., Any], Tensors], Bound],
                 make: Callable[[], Callable[..., Any]]) -> tuple[Binder, Binder, Binder]:
    """Baseline, torch.compile and Liger binders of an operation whose implementations are all called alike,
    ``call(fn, x)``: with ``make()``, with ``compiled(adapter, make)``, and with ``liger_callable(adapter)``."""
    def baseline(adapter: Adapter, x: Tensors) -> Bound:
        return call(make(), x)

    def compile_(adapter: Adapter, x: Tensors) -> Bound:
        return call(compiled(adapter, make), x)

    def liger_(adapter: Adapter, x: Tensors) -> Bound:
        return call(liger_callable(adapter), x)
    return baseline, compile_, liger_


def bind_liger_loss(*names: str, **kwargs: Any) -> Binder:
    """Binder of a Liger loss module: the adapter's ``module.symbol`` class made with ``kwargs`` when it binds
    (imported then, so listing the adapter needs no Liger), called on the inputs ``names`` like ``bind_loss``."""
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        loss = liger_callable(adapter)(**kwargs)
        args = [x[name] for name in names]
        return lambda: {"loss": loss(*args)}
    return bind


def liger(slug: str, line: str, module: str, symbol: str, binder: Binder, *, in_place: bool = False) -> Adapter:
    language = "python" if ".chunked_loss" in module else "triton"  # chunked losses are torch.compile'd PyTorch
    # The adapter declares what the registry says of its line (registry/region_work.yaml, the one declaration
    # the pages read too): whether its forward also computes the gradients.
    forward_gradient = line in registry.forward_computes_gradient()
    return Adapter("liger", slug, line, "Liger", "liger-kernel", language, module, symbol, LIGER, (module,), binder,
                   in_place=in_place, forward_computes_gradient=forward_gradient)


def pytorch_baseline(slug: str, line: str, title: str, module: str, symbol: str, binder: Binder) -> Adapter:
    """A baseline that is a PyTorch library callable (``torch.nn.CrossEntropyLoss``, ...)."""
    return Adapter("baseline", slug, line, title, "pytorch", "python", module, symbol, ("torch",), (), binder,
                   role="baseline")


def our_baseline(slug: str, module: str, symbol: str, binder: Binder, *, why: str | None = None) -> Adapter:
    """KernelIndex's own plain-PyTorch baseline (``adapters.ours``), for operations whose source baseline lives
    only inside a benchmark script (written from the semantics, never copied from the script). ``why``: a
    sentence the implementation page adds (megatron-cross-entropy: why Megatron's own baseline is absent)."""
    adapter = ours(slug, f"{module.rsplit('.', 1)[-1]}.{symbol}", binder, OUR_BASELINE_TITLE)
    if why:
        adapter.description = f"{adapter.description} {why}."
    return adapter


def torch_compile(slug: str, baseline_symbol: str, binder: Binder) -> Adapter:
    return Adapter("torch-compile", slug, f"torch-compile-{slug}", "torch.compile", "pytorch", "python", "torch",
                   f"compile({baseline_symbol})", ("torch", "triton"), ("torch._inductor",), binder)


def ours_liger_compile(slug: str, module: str, symbol: str, ours_binder: Binder, liger_at: tuple[str, str],
                       liger_binder: Binder, compile_binder: Binder) -> list[Adapter]:
    """The three lines of an operation whose source is Liger: our baseline ``module.symbol``, Liger's callable
    ``liger_at`` (module, symbol) on the line ``liger-kernel-<slug>``, and torch.compile of our baseline."""
    liger_module, liger_symbol = liger_at
    return [
        our_baseline(slug, module, symbol, ours_binder),
        liger(slug, f"liger-kernel-{slug}", liger_module, liger_symbol, liger_binder),
        torch_compile(slug, f"{module}.{symbol}", compile_binder),
    ]
