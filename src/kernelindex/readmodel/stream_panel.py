"""Runner protocol v4 on the run page (issue 42 item 6): stream time, kernel busy time, the cross-check and the
ceiling check (``readmodel/ceiling_checks``) side by side, saying which one ranks and why."""

from __future__ import annotations

from typing import Any

from kernelindex.policy.device_time import STREAM_TIME
from kernelindex.readmodel.operation_data import Run


def _ranks_sentence(run: Run) -> str:
    stream = run.spec.timing.stream
    assert stream is not None
    how = (f"{stream.calls_per_replay} calls back to back over {stream.rotation_sets} rotating input/output "
           f"set{'s' if stream.rotation_sets != 1 else ''} of {stream.footprint_bytes / 2**20:,.1f} MiB each")
    kept = (f" The model's parameters and buffers ({stream.unrotated_bytes / 2**20:,.1f} MiB) are not rotated: one "
            "model, called as a layer is, so weights that fit the L2 may stay there between calls."
            if stream.unrotated_bytes else "")
    if stream.capture == "eager":
        why = ("the call must not be captured in a CUDA graph (the reason below)"
               if (stream.capture_failure or "").startswith("graph capture not attempted") else
               "the call cannot be captured in a CUDA graph (it synchronises with the host)")
        return (f"Stream time ranks: {how}, run eagerly between two CUDA events because {why}, so its stalls on "
                f"this host are in the figure; per call = elapsed time / calls.{kept}")
    return (f"Stream time ranks: {how}, captured in one CUDA graph and the replay timed whole; per call = replay "
            "time / calls. Each call starts with its own tensors out of the L2 and pays its write-back inside the "
            "replay. Kernel busy time leaves out that write-back and the gaps between the call's kernels, so it is "
            f"shown, never ranked.{kept}")


def stream_panel(run: Run) -> dict[str, Any] | None:
    """The run page's v4 panel (None for runs of other protocols)."""
    timing = run.spec.timing
    if timing.method != STREAM_TIME or timing.stream is None or timing.median_ns is None:
        return None
    busy = timing.kernel_busy
    check = run.ceiling_check
    panel: dict[str, Any] = {
        "ranks": _ranks_sentence(run), "capture": timing.stream.capture,
        "capture_failure": timing.stream.capture_failure,
        "kernel_busy_ns": busy.median_ns if busy else None,
        "stream_over_busy": timing.median_ns / busy.median_ns if busy and busy.median_ns else None,
        "ceiling": None,
    }
    if check is not None:
        panel["ceiling"] = {
            "implied_gbps": check.implied_bytes_per_s / 1e9, "ceiling_gbps": check.ceiling_bytes_per_s / 1e9,
            "ratio": check.ratio, "exceeds": check.exceeds,
            "write_share": check.write_bytes / (check.read_bytes + check.write_bytes),
            "sentence": ("Faster than the bandwidth this GPU's runner measured for the same read/write mix at the "
                         "same size, by more than 3%: the figure is shown but holds no record until explained."
                         if check.exceeds else
                         "Within the bandwidth this GPU's runner measured for the same read/write mix at the same "
                         "size."),
        }
    return panel
