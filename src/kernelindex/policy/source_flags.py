"""A run its own source flags: a figure the source recorded beside it says the kernel's output was wrong too
often to call the implementation usable on that shape (issue 43 item 7). aiter's tuner writes the fraction of
output elements outside its tolerance (``err_ratio``; a MoE's two stages ``err1`` and ``err2``); above 5% the
row stays shown and ranked as the source measured it, but is not offered as usable today."""

from __future__ import annotations

from collections.abc import Mapping

from kernelindex.policy.reasons import Reason

AITER = "aiter-tuned-configs"
MISMATCH_LIMIT = 0.05  # the share of mismatching output elements above which a row is not usable as it stands
MISMATCH_FIELDS = ("err_ratio", "err1", "err2")
AVAILABILITY = "flagged by its source"


def _fraction(value: object) -> float | None:
    """The mismatch as a fraction: the GEMM tables write one (0.1825), the MoE tables a percentage ("16.7%")."""
    text = str(value).strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return None


def source_flag(source: str, raw: Mapping[str, object]) -> Reason | None:
    """Why the run's own source flags it, or None."""
    if source != AITER:
        return None
    worst = max(((name, f) for name in MISMATCH_FIELDS if (f := _fraction(raw.get(name, ""))) is not None),
                key=lambda pair: pair[1], default=None)
    if worst is None or worst[1] <= MISMATCH_LIMIT:
        return None
    return Reason("SOURCE_MISMATCH", f"aiter's tuner found {worst[1]:.1%} of this kernel's output elements outside its "
                  f"tolerance on this shape ({worst[0]}), above the {MISMATCH_LIMIT:.0%} KernelIndex accepts for "
                  "calling it usable; the figure is shown as the source measured it.")
