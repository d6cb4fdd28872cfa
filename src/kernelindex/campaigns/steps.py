"""A campaign's steps as words on a command line, and what each one means. Pure: no device, no files.

- ``probe``: the GPU's v4 ceilings (read, write, copy at every size) and its shortest call, once per machine;
  every later step of the machine reuses them, so all its bundles share one environment.
- ``compare``: ``campaigns/stream_compare.py`` over ``KI_COMPARE``'s calls (docs/runner.md's table).
- ``OP[:SKIP:MAX[:SUFFIX[:REGIONS[:LIMIT[:HARD[:IMPL]]]]]]``: one operation's cases SKIP+1 … SKIP+MAX of the
  campaign's case folder (MAX 0: all), only REGIONS (comma-separated; empty: every region the case lists), at
  most LIMIT s (default 300), HARD s per case-region before the minimum samples stops it (default 40), only the
  adapters IMPL (comma-separated keys; empty: all); its bundle is ``GPU-OP-DATE-v4SUFFIX``.
- ``OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]]``: the operations OPS (comma-separated, one process, a bundle each) on
  the cases the selection file ``SELECTION.json`` of the GEMM & attention case folder names, adapters IMPL.
- ``gemm-cublas``, ``gemm-xla``, ``gemm-autotune``, ``gemm-triton``, ``attention``, ``attention-flex``,
  ``fi-decode``, ``fi-prefill``: a batch, expanded into selection steps over the operations of its selection (for
  ``fi-decode`` and ``fi-prefill`` those whose name starts ``gqa-paged-decode-`` or ``gqa-ragged-prefill-``), a few
  operations a process. ``BATCH:OPS[:IMPL]`` narrows it to the operations OPS (comma-separated; empty: all of the
  batch's) and the adapters IMPL (empty: the batch's).
- ``fi-setup``: unpack the carried FlashInfer (``carry --flashinfer``) beside the carried folder, once per machine.
- ``fi-build``: build FlashInfer's decode and prefill kernel modules and check each adapter once (about 140 s on 16
  cores); the built modules come back for the lane's other GPU (``carry --flashinfer-kernels``).
- ``kernelbench:LEVELS:IMPLS[:SKIP:MAX]``: KernelBench problems of LEVELS, each in its own process, bundled per
  level and implementation set after the step.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LIMIT_S = 300
DEFAULT_HARD_S = 40
PROTOCOL_SUFFIX = "-v4"
FLASHINFER_STEPS = ("fi-setup", "fi-build")


@dataclass(frozen=True)
class Batch:
    """Selection steps over the operations of ``selection`` whose name starts with ``prefix``."""

    selection: str
    impl: str
    suffix: str
    limit_s: int
    per_process: int
    prefix: str = ""


BATCHES: dict[str, Batch] = {
    "gemm-cublas": Batch("gemm", "baseline", "-cublas", 240, 4),
    "gemm-xla": Batch("gemm-compile", "xla-jax", "-xla", 240, 8),
    "attention": Batch("attention", "baseline,flash-varlen,efficient-varlen,sdpa-cudnn", "", 240, 3),
    "attention-flex": Batch("attention", "flex", "-flex", 300, 3),
    "gemm-autotune": Batch("gemm-compile", "torch-compile-max-autotune", "-autotune", 400, 2),
    "gemm-triton": Batch("gemm-compile", "torch-compile-triton", "-triton", 400, 2),
    # FlashInfer's wrappers (campaigns/flashinfer.py brings the library; fi-setup and fi-build come first)
    "fi-decode": Batch("attention", "flashinfer-decode,flashinfer-paged-prefill", "-flashinfer", 300, 3,
                       "gqa-paged-decode-"),
    "fi-prefill": Batch("attention", "flashinfer-ragged-prefill", "-flashinfer", 300, 3, "gqa-ragged-prefill-"),
}


class StepError(ValueError):
    """A step's words do not parse; the message names the step and the grammar."""


@dataclass(frozen=True)
class Step:
    text: str  # as given: the done file and the ledger name steps by it
    kind: str  # probe | compare | fi-setup | fi-build | operation | selection | kernelbench
    operations: tuple[str, ...] = ()
    skip: int = 0
    most: int = 0
    suffix: str = ""
    regions: str = ""
    limit_s: int = DEFAULT_LIMIT_S
    hard_s: int = DEFAULT_HARD_S
    impl: str = ""
    selection: str = ""
    levels: str = ""

    @property
    def label(self) -> str:
        """The step's summary and cut record name (one per step of a machine)."""
        if self.kind == "kernelbench":
            return f"kernelbench-{self.levels.replace(',', '+')}-{self.impl.replace(',', '-')}"
        more = f"+{len(self.operations) - 1}" if len(self.operations) > 1 else ""
        return f"{self.operations[0]}{more}{self.suffix}" if self.operations else self.kind

    @property
    def bundle_suffix(self) -> str:
        return f"{PROTOCOL_SUFFIX}{self.suffix}"


def _int(step: str, word: str, what: str, default: int) -> int:
    if not word:
        return default
    if not word.isdigit():
        raise StepError(f"step {step!r}: {what} {word!r} is not a whole number")
    return int(word)


def parse(step: str) -> Step:
    """One step's words; a StepError names what does not fit the grammar (module docstring)."""
    if step in ("probe", "compare", *FLASHINFER_STEPS):
        return Step(step, step)
    words = step.split(":")
    if words[0] == "kernelbench":
        if len(words) < 3 or not words[1] or not words[2]:
            raise StepError(f"step {step!r}: kernelbench:LEVELS:IMPLS[:SKIP:MAX] "
                            "(e.g. kernelbench:1:eager,torch-compile)")
        return Step(step, "kernelbench", levels=words[1], impl=words[2],
                    skip=_int(step, (words + [""])[3], "SKIP", 0), most=_int(step, (words + ["", ""])[4], "MAX", 0))
    if len(words) > 1 and words[1] and not words[1].isdigit():  # OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]]
        words += [""] * (5 - len(words))
        if len(words) > 5 or not words[2]:
            raise StepError(f"step {step!r}: not OP:SKIP:… (SKIP {words[1]!r} is not a whole number) nor "
                            "OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]] (IMPL missing)")
        return Step(step, "selection", operations=tuple(words[0].split(",")), selection=words[1], impl=words[2],
                    suffix=words[3], limit_s=_int(step, words[4], "LIMIT", DEFAULT_LIMIT_S))
    if len(words) > 8 or not words[0] or "," in words[0]:
        raise StepError(f"step {step!r}: OP[:SKIP:MAX[:SUFFIX[:REGIONS[:LIMIT[:HARD[:IMPL]]]]]] (one operation)")
    words += [""] * (8 - len(words))
    return Step(step, "operation", operations=(words[0],), skip=_int(step, words[1], "SKIP", 0),
                most=_int(step, words[2], "MAX", 0), suffix=words[3], regions=words[4],
                limit_s=_int(step, words[5], "LIMIT", DEFAULT_LIMIT_S), hard_s=_int(step, words[6], "HARD",
                                                                                     DEFAULT_HARD_S),
                impl=words[7])


def expand(step: str, selection_operations: dict[str, list[str]]) -> list[str]:
    """A batch (``BATCH[:OPS[:IMPL]]``) → its selection steps (``selection_operations``: selection → its
    operations, sorted); any other step as it is."""
    name, *words = step.split(":")
    if name not in BATCHES:
        return [step]
    if len(words) > 2:
        raise StepError(f"step {step!r}: {name}[:OPS[:IMPL]] (operations and adapters, comma-separated)")
    batch = BATCHES[name]
    ops = [op for op in selection_operations.get(batch.selection, []) if op.startswith(batch.prefix)]
    chosen, impl = (words + ["", ""])[:2]
    if chosen:
        unknown = sorted(set(chosen.split(",")) - set(ops))
        if unknown:
            raise StepError(f"step {step!r}: {', '.join(unknown)} not in the batch {name} (its selection "
                            f"{batch.selection!r} of the carry's cases-gemm/ holds {len(ops)} of its operations)")
        ops = [op for op in ops if op in chosen.split(",")]
    impl = impl or batch.impl
    return [f"{','.join(ops[i:i + batch.per_process])}:{batch.selection}:{impl}:{batch.suffix}:{batch.limit_s}"
            for i in range(0, len(ops), batch.per_process)]


def gpu_tag(product: str) -> str:
    """The bundles' prefix for the GPU the machine reports (a call for one kind may run on another)."""
    for tag in ("h100", "h200", "b200", "a100"):
        if tag in product.lower():
            return tag
    return "gpu"


def steps_for_gpu(product: str, environ: dict[str, str], lines: list[str]) -> tuple[str, list[str], str]:
    """The steps of the GPU the machine reports, for a call that names none (a call for one kind may land on
    another): ``TAG_STEPS`` from the environment (``H200_STEPS``), else the ``TAG STEP…`` line of the carry's
    steps file. Returns (tag, steps, where they came from); a StepError says what to give when there are none."""
    tag = gpu_tag(product) if product else "none"
    variable = f"{tag.upper()}_STEPS"
    if environ.get(variable, "").split():
        return tag, environ[variable].split(), variable
    for line in lines:
        words = line.split()
        if words and words[0].lower() == tag and words[1:]:
            return tag, words[1:], f"the steps file's {tag} line"
    raise StepError(f"no steps for this machine's GPU ({product or 'none found by nvidia-smi'}, tag {tag}): give "
                    f"them after the seconds, in {variable}, or in the carry (ki runner campaign carry --steps "
                    f"{tag}=\"probe …\")")
