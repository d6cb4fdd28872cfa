"""Runner protocol v4's ceilings: the GPU's read-only, write-only and copy bandwidth at sizes from 1 MiB to
4 GiB, timed exactly as runs are (stream time: K calls over rotating buffers in one CUDA graph, so a small size
is streamed from HBM, not from the L2), and the shortest call the GPU runs in a stream (the latency term of a
floor). ``policy/ceilings.mix_ceiling`` reads the table for a run's read/write mix at its size.

The kernels: read = a row sum of a float32 buffer into 4 bytes a row, the faster of 64 KiB and 4 KiB rows (with
64 KiB rows a 64 MiB buffer is 1,024 rows, a few uneven waves on 132 SMs, and cuBLAS's GEMV read 64 MiB 4–7%
faster on the H100 than that kernel did: a ceiling is the best simple reader, not one shape of it); write = a fill
with 1.0; copy = an elementwise negation from one buffer into another (a kernel: a captured ``copy_`` becomes a
memcpy node, which ran at about 65% of a kernel's bandwidth on the H200, the campaign ledgers,
src/kernelindex/data/ledgers/).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

from kernelindex.policy.ceilings import CeilingFigure
from kernelindex.runner.rotation import Rotation, rotation
from kernelindex.runner.stream_setup import StreamDevice
from kernelindex.runner.timing import Call

STREAM_CEILING_SIZES = (1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30)
READ_ROWS = (16384, 1024)  # float32 elements per row of the read kernels (64 KiB, 4 KiB): the faster one counts


def _kernel(kind: str, nbytes: int, gen: torch.Generator, row: int = READ_ROWS[0]) -> Call:
    if kind == "copy":
        src = torch.rand(nbytes // 8, device="cuda", generator=gen)
        dst = torch.empty_like(src)
        return lambda: torch.neg(src, out=dst)
    if kind == "read":
        data = torch.rand(nbytes // 4, device="cuda", generator=gen).view(-1, row)
        sums = torch.empty(data.shape[0], device="cuda")
        return lambda: torch.sum(data, dim=1, out=sums)
    data = torch.empty(nbytes // 4, device="cuda")
    return lambda: data.fill_(1.0)


def _median_replay(device: StreamDevice, calls: list[Call], rot: Rotation, replays: int) -> float:
    sampler = device.stream_sampler(calls, rot)
    sampler.sample()
    return statistics.median(t for _ in range(replays) for t in sampler.sample())


def stream_bandwidth(device: StreamDevice, kind: str, nbytes: int, replays: int = 15) -> float:
    """Bytes read + written per second by the ``kind`` kernel streaming ``nbytes`` a call, as a run is timed (for
    read, the faster of its row widths)."""
    if kind == "read":
        return max(_stream_bandwidth(device, kind, nbytes, replays, row) for row in READ_ROWS)
    return _stream_bandwidth(device, kind, nbytes, replays, READ_ROWS[0])


def _stream_bandwidth(device: StreamDevice, kind: str, nbytes: int, replays: int, row: int) -> float:
    rot = rotation(nbytes, device.l2_bytes, device.free_bytes())
    gen = torch.Generator(device="cuda")
    gen.manual_seed(nbytes)
    calls = [_kernel(kind, nbytes, gen, row) for _ in range(rot.sets)]
    seconds = _median_replay(device, calls, rot, replays) * 1e-9
    del calls
    torch.cuda.empty_cache()
    # read sums 4 bytes per row besides its buffer; counted, as a run's compulsory bytes would be
    return (nbytes + (nbytes // (4 * row)) * 4 if kind == "read" else nbytes) / seconds


def stream_ceiling_table(device: StreamDevice, sizes: tuple[int, ...] = STREAM_CEILING_SIZES,
                         on_figure: Callable[[CeilingFigure], None] | None = None) -> list[CeilingFigure]:
    """Every kernel at every size the device can hold (a size it cannot is left out, never guessed)."""
    figures: list[CeilingFigure] = []
    for nbytes in sizes:
        for kind in ("read", "write", "copy"):
            try:
                figure = CeilingFigure(kind, nbytes, stream_bandwidth(device, kind, nbytes))
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                continue
            figures.append(figure)
            if on_figure is not None:
                on_figure(figure)
    return figures


def min_call_ns(device: StreamDevice, calls_per_replay: int = 256, replays: int = 15) -> float:
    """The stream time of the smallest call there is (one kernel adding 1 to one float): what any call costs a
    stream at least on this GPU, the latency term of every floor."""
    one = torch.zeros(1, device="cuda")
    rot = Rotation(sets=1, calls_per_replay=calls_per_replay, footprint_bytes=4, l2_bytes=device.l2_bytes)
    return _median_replay(device, [lambda: one.add_(1.0)], rot, replays)
