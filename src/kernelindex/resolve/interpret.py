"""A request said back in words, and as the canonical query text that parses to the same request."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.vocabulary import Vocabulary, registry_vocabulary


def _declared_axes(operation: str | None, vocab: Vocabulary | None) -> list[str]:
    """The operation's axes in declared order: the vocabulary's, or (none given) the registry's spec of that
    one operation, read alone (the operation page's use box need not parse all 70 registry files)."""
    if vocab is not None:
        op = vocab.operations.get(operation or "")
        return list(op.axes) if op else []
    spec = registry.curated_operation(operation or "")
    return list(spec.spec.axes) if spec else []


def _axis_order(request: ResolveRequest, vocab: Vocabulary | None) -> list[str]:
    order = _declared_axes(request.operation, vocab)
    return [a for a in order if a in request.axes] + sorted(a for a in request.axes if a not in order)


def interpretation(request: ResolveRequest, vocab: Vocabulary | None = None) -> str:
    """``Operation Rotary position embedding (rope) · seq 2048 · hidden 8192 · gpu A100``."""
    vocab = vocab or registry_vocabulary()
    parts: list[str] = []
    op = vocab.operations.get(request.operation or "")
    parts.append(f"Operation {op.title} ({op.slug})" if op else "Any operation")
    parts += [f"{a} {request.axes[a]}" for a in _axis_order(request, vocab)]
    if request.dtype:
        parts.append(f"dtype {request.dtype}")
    if request.gpu:
        gpu = vocab.gpus.get(request.gpu)
        parts.append(f"gpu {gpu.short if gpu else request.gpu}")
    labels = [("arch", "arch"), ("mode", "mode"), ("language", "language"), ("implementation", "implementation"),
              ("license", "license"),
              ("source", "source")]
    parts += [f"{label} {getattr(request, f)}" for f, label in labels if getattr(request, f)]
    if request.trust:
        parts.append(f"evidence {request.trust} or better")
    if request.usable is not None:
        parts.append("usable as-is only" if request.usable else "not usable as-is only")
    return " · ".join(parts)


def _quoted(value: str) -> str:
    return f'"{value}"' if any(c.isspace() for c in value) else value


def canonical_query(request: ResolveRequest, vocab: Vocabulary | None = None) -> str:
    """``op:rope seq=2048 hidden=8192 gpu:a100-80gb`` — parses back to the same request (axes in the order
    ``vocab`` declares them; without one, the registry's)."""
    parts: list[str] = []
    if request.operation:
        parts.append(f"op:{request.operation}")
    parts += [f"{a}={request.axes[a]}" for a in _axis_order(request, vocab)]
    for field, key in [("dtype", "dtype"), ("gpu", "gpu"), ("arch", "arch"), ("mode", "mode"),
                       ("language", "lang"), ("implementation", "impl"), ("trust", "trust"), ("license", "license"),
                       ("source", "source")]:
        value = getattr(request, field)
        if value:
            parts.append(f"{key}:{_quoted(str(value))}")
    if request.usable is not None:
        parts.append(f"usable:{'yes' if request.usable else 'no'}")
    return " ".join(parts)
