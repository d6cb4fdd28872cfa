"""What a run records of its implementation's compilation, beside (never in) the timed figure.

- An ahead-of-time compile its bind did (XLA): ``compile_ns`` with ``timing.raw.compile_method``.
- ``torch.compile``: the compiled function's first call in the correctness checks (cold for the case's shapes)
  is ``compile_ns``, with ``timing.raw.compile_measured``; the timed region's first call after a clean dynamo
  state found Inductor's in-process caches warm and is ``first_call_ns``.
- Anything else: the region's first call, ``first_call_ns``.
"""

from __future__ import annotations

from typing import Any

from kernelindex.runner.definitions import CompileRecord

# timing.raw["compile_measured"]: where a torch.compile run's compile_ns was taken (readmodel/samples.py words it)
CHECKS_COMPILE = "first call of the correctness checks"


def compile_figures(key: str, ahead_of_time: CompileRecord | None, checks_ns: int | None,
                    first_call_ns: float | None, raw: dict[str, Any]) -> dict[str, int]:
    """The secondary figures of a run's compilation; what they cover goes into ``raw``."""
    figures: dict[str, int] = {}
    if ahead_of_time is not None:
        figures["compile_ns"] = ahead_of_time.ns
        raw["compile_method"] = ahead_of_time.method
    elif checks_ns is not None:
        figures["compile_ns"] = checks_ns
        raw["compile_measured"] = CHECKS_COMPILE
    if first_call_ns is not None:
        # A torch.compile adapter without the checks' figure (a binder that compiles outside ``compiled``).
        compiles = ahead_of_time is None and checks_ns is None and key.startswith("torch-compile")
        figures["compile_ns" if compiles else "first_call_ns"] = round(first_call_ns)
    return figures
