"""What the peak memory of one call counts (issue 20 item 8).

``torch.cuda.max_memory_allocated`` after a reset sees only what the call allocates. A call can hand
back tensors allocated before it and kept — a fused loss's backward returns the gradient its forward
computed (tvd backward: 8.6 GB, 0 new bytes) — so the result tensors allocated before the call are
added. Tensors of the call's inputs are never counted: an in-place kernel writes into them and
allocates nothing, and still says 0 (``IN_PLACE_NOTE``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import torch

METHOD = "allocated above the start, plus result tensors allocated before the call and kept"
IN_PLACE_NOTE = "0 bytes: the call writes into its inputs (in place) and allocates nothing"


def _tensors(value: object) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _storages(values: Iterable[object]) -> dict[int, int]:
    """Distinct storages (by address) and their sizes in bytes."""
    found: dict[int, int] = {}
    for value in values:
        for tensor in _tensors(value):
            storage = tensor.untyped_storage()
            found[storage.data_ptr()] = storage.nbytes()
    return found


def storage_bytes(values: Iterable[object]) -> int:
    """Bytes of the distinct storages the values hold (tensors, or mappings and sequences of them)."""
    return sum(_storages(values).values())


def result_storage_bytes(result: object, inputs: Iterable[object] = ()) -> int:
    """Bytes of the distinct storages the call's result holds, leaving out its inputs' storages."""
    excluded = _storages(inputs)
    return sum(size for address, size in _storages([result]).items() if address not in excluded)


def peak_with_kept_results(peak_above_start: int, grown: int, result_bytes: int) -> int:
    """The call's peak: what it allocated at most above the start, plus the part of its result that
    was allocated before it (the result's bytes the held memory did not grow by)."""
    return peak_above_start + max(0, result_bytes - max(grown, 0))
