"""What the parser does with axes once the words have named an operation (or candidates): bind a shape
(``4096x1024``) to the operation's axes, give each bound axis the operation's own spelling (``batch`` is
FlashInfer's ``batch_size``), report numbers that name no axis, and drop axes the operation lacks."""

from __future__ import annotations

import re
from collections import Counter

from kernelindex.resolve.parse_state import State, Word
from kernelindex.resolve.request import suggest
from kernelindex.resolve.vocabulary import OperationEntry
from kernelindex.resolve.words import spelled_for

SHAPE = re.compile(r"^\d+(?:[x×]\d+){1,3}$", re.IGNORECASE)
# A GEMM's shape as engineers write it: M×N×K, or N×K (the weight: what names a definition, M being the
# tokens of a call).
_GEMM_SHAPES = {3: ("m", "n", "k"), 2: ("n", "k")}


def _entries(state: State) -> list[OperationEntry]:
    op = state.values.get("operation")
    slugs = [op] if isinstance(op, str) else list(state.candidates)
    return [e for s in slugs if (e := state.vocab.operations.get(s))]


def _shape_axes(entries: list[OperationEntry], dims: int) -> tuple[str, ...] | None:
    """The axes a shape of ``dims`` numbers binds for these operations, when they agree on one."""
    if entries and all(e.family == "gemm" for e in entries) and dims in _GEMM_SHAPES:
        return _GEMM_SHAPES[dims]
    shapes = {e.shape for e in entries}
    if len(shapes) == 1 and len(shape := shapes.pop()) == dims:
        return shape
    return None


def bind_shapes(state: State) -> None:
    entries = _entries(state)
    for w in state.shapes:
        numbers = [int(n) for n in re.split(r"[x×]", w.text, flags=re.IGNORECASE)]
        axes = _shape_axes(entries, len(numbers))
        if axes is None:
            shape = " × ".join(entries[0].shape) if entries else ""
            what = (f"{entries[0].slug}'s shape is {shape or 'not declared'}" if len(entries) == 1
                    else "no operation named agrees on which axes it would bind" if entries
                    else "no operation is named to bind it to")
            state.issue(w, "SHAPE_NOT_BOUND", f"'{w.text}' is a shape, but {what} — bind each axis, e.g. "
                        f"{'n=… k=…' if not entries else ' '.join(f'{a}=…' for a in entries[0].axes[:2])}")
            continue
        for axis, number in zip(axes, numbers, strict=True):
            if number >= 1:
                state.bind_axis(w, axis, number)


def respell_axes(state: State) -> None:
    """Each bound axis in the spelling of the operation (or of most candidates) it binds."""
    entries = _entries(state)
    if not entries:
        return
    for name in list(state.axes):
        spellings = Counter(found for e in entries if (found := spelled_for(name, e.axes)))
        if not spellings:
            continue
        target = spellings.most_common(1)[0][0]
        if target != name and target not in state.axes:
            state.axes[target] = state.axes.pop(name)
            state.axis_tokens[target] = state.axis_tokens.pop(name)


def report_bare_numbers(state: State) -> None:
    op = state.values.get("operation")
    axes = list(state.vocab.operations[op].axes) if isinstance(op, str) else []
    free = [a for a in axes if a not in state.axes] or axes
    for w in state.bare_numbers:
        word = w.text.strip("\"'")
        if free:
            state.issue(w, "BARE_NUMBER", f"'{word}' is a number without an axis; {op} has "
                        f"{', '.join(axes)} — bind it, e.g. {free[0]}={word}", f"{free[0]}={word}")
        else:
            state.issue(w, "BARE_NUMBER", f"'{word}' is a number without an axis; name the operation "
                        f"and bind it to one of its axes (axis=value)")


def check_axes(state: State) -> None:
    op = state.values.get("operation")
    if not isinstance(op, str):
        return
    allowed = state.vocab.operations[op].axes
    for name in list(state.axes):
        if name not in allowed:
            token = state.axis_tokens[name]
            del state.axes[name]
            state.tokens.remove(token)
            state.issue(Word(token.text, token.start, token.end), "AXIS_NOT_IN_OPERATION",
                        f"{op} has no axis '{name}'; its axes are {', '.join(allowed)}", suggest(name, list(allowed)))
