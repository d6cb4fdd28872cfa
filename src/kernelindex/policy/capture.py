"""A failed CUDA-graph capture, in words: what happened and what it means for the figure.

The runner records the exception verbatim (``timing.raw.capture_failure``, kept in the dossier);
pages say what it means instead of showing a CUDA error string."""

from __future__ import annotations

# (a fragment of the recorded message, what happened) — first match wins.
_KNOWN: tuple[tuple[str, str], ...] = (
    ("Cannot copy between CPU and CUDA tensors during CUDA graph capture",
     "the call copies data between host and GPU memory inside itself (it reads a value back to "
     "Python), which a CUDA graph cannot record"),
    ("cudaErrorStreamCaptureInvalidated",
     "an operation inside the call is not allowed while a CUDA graph is being recorded (typically "
     "the host waiting for the GPU, such as reading a value back to Python), so the recording was "
     "abandoned"),
    ("operation not permitted when stream is capturing",
     "the call synchronises with the GPU from the host (it waits for a result), which is not "
     "allowed while a CUDA graph is being recorded"),
)

PER_CALL_MEANING = ("so each call was timed on its own between CUDA events, with the L2 flushed before it: "
                    "the figure includes the host's launch of the call and any time the GPU waited for the "
                    "host, so it can sit above the GPU's own time for the call and vary from host to host")


def capture_failure_words(recorded: str) -> str:
    """What happened, in words, from the runner's recorded exception (never the raw text itself)."""
    for fragment, words in _KNOWN:
        if fragment in recorded:
            return words
    kind = recorded.split(":", 1)[0].strip()
    named = f" ({kind})" if kind.isidentifier() else ""
    return f"recording the call in a CUDA graph failed{named}; the runner's message is kept in the run's record"


def capture_failure_sentence(recorded: str) -> str:
    """One sentence: the call could not be captured, why, and what that means for a per-call figure."""
    return f"The call could not be captured in a CUDA graph: {capture_failure_words(recorded)}; {PER_CALL_MEANING}."


def cross_check_sentence(detail: str) -> str | None:
    """Runner v3's per-call-events cross-check says why graph capture failed (``cross_check.detail``);
    the figure is the device time, so only the cross-check is affected."""
    recorded = detail.split("; graph/device", 1)[0].strip()
    if not recorded or recorded.startswith("graph/device"):
        return None
    return (f"CUDA-graph capture failed: {capture_failure_words(recorded)}; so the cross-check was timed with "
            "per-call CUDA events, which include each call's launch (the device time is unaffected).")
