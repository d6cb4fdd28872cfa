"""The structured resolve request: what the text query parses into and what ``POST /api/v1/resolve`` takes.

Both paths go through :func:`normalise_request`, so ``rotary`` / ``A100`` / ``bfloat16`` in JSON mean
exactly what they mean in a text query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, StringConstraints
from rapidfuzz import fuzz, process

from kernelindex.domain.numbers import NumberError, parse_integer
from kernelindex.resolve.vocabulary import (
    BOOLEANS,
    LANGUAGES,
    MODES,
    TRUST_LEVELS,
    Vocabulary,
    dtype_words,
    normalise,
)
from kernelindex.resolve.words import DTYPE_WORDS, query_dtype

AXIS_NAME = r"^[a-z][a-z0-9_]{0,39}$"
AxisName = Annotated[str, StringConstraints(pattern=AXIS_NAME)]
# A JSON integer: "2048" (text) and 2048.0 are refused, not converted (pydantic's lax int takes "2_048").
AxisValue = Annotated[int, Strict(), Field(ge=1, le=2**53)]
SOME_TEXT = r"\S"  # a filter value has at least one non-space character (an empty one names nothing)
Mode = Literal["forward", "backward", "forward+backward", "forward-no-grad"]
Trust = Literal["reported", "reproducible", "verified", "replicated"]
MAX_AXES = 16
_LICENSE = re.compile(r"^[A-Za-z0-9.+\-() ]{1,100}$")
_SOURCE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_IMPLEMENTATION = re.compile(r"^[a-z0-9][a-z0-9 ._+-]{0,59}$")
_ARCH = re.compile(r"^sm_?(\d{2,3}[a-z]?)$")


class ResolveRequest(BaseModel):
    """One exact-workload question. Unset fields are wildcards; ``trust``, ``usable``, ``license``,
    ``language``, ``implementation`` and ``source`` hide rows and never re-rank them."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_max_length=120)

    operation: Annotated[str, StringConstraints(min_length=1, max_length=120, pattern=SOME_TEXT)] | None = Field(
        None, description="Operation slug or alias (rope, rotary, layer norm …)."
    )
    axes: dict[AxisName, AxisValue] = Field(
        default_factory=dict, max_length=MAX_AXES, description="Axis bindings, e.g. {\"seq\": 2048}.",
        json_schema_extra={"propertyNames": {"pattern": AXIS_NAME}, "additionalProperties": False},
    )
    dtype: str | None = Field(None, max_length=40, pattern=SOME_TEXT, description="bf16, fp32, bfloat16 …")
    gpu: str | None = Field(None, max_length=80, pattern=SOME_TEXT, description="GPU slug or name: a100, H100 …")
    arch: str | None = Field(None, max_length=20, pattern=SOME_TEXT, description="Compute capability, e.g. sm_90.")
    mode: str | None = Field(None, max_length=40, pattern=SOME_TEXT,
                             description="forward, backward, forward+backward or forward-no-grad.")
    language: str | None = Field(None, max_length=40, pattern=SOME_TEXT,
                                 description="Implementation language: triton, cuda, python …")
    implementation: str | None = Field(
        None, max_length=60, pattern=SOME_TEXT,
        description="Part of an implementation's name (flash, flashinfer, liger …): other rows are hidden.")
    trust: str | None = Field(None, max_length=40, pattern=SOME_TEXT, description="Minimum evidence level.")
    usable: StrictBool | None = Field(None, description="Only rows usable as-is (true) or not usable (false).")
    license: str | None = Field(None, max_length=100, pattern=SOME_TEXT,
                                description="Concluded license (SPDX), e.g. BSD-2-Clause.")
    source: str | None = Field(None, max_length=100, pattern=SOME_TEXT,
                               description="Source name, e.g. liger-kernel-benchmarks.")


@dataclass(frozen=True)
class ValueProblem:
    field: str
    value: str
    message: str
    suggestion: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"field": self.field, "value": self.value, "message": self.message, "suggestion": self.suggestion}


def suggest(word: str, choices: list[str], cutoff: float = 60) -> str | None:
    if not word or not choices:
        return None
    found = process.extractOne(word.lower(), choices, scorer=fuzz.ratio, score_cutoff=cutoff)
    return found[0] if found else None


@dataclass(frozen=True)
class OperationPick:
    slugs: tuple[str, ...]
    how: str  # slug | alias | title | family | fuzzy | text
    # Every operation the phrase names, however (the slugs are those of the best kind only): what a further
    # word narrows earlier candidates by ("level 2 gemm": the level-2 problems whose alias is "Gemm", though
    # "gemm" alone means the GEMM family).
    named: tuple[str, ...] = ()

    @property
    def unique(self) -> str | None:
        return self.slugs[0] if len(self.slugs) == 1 else None


def pick_operation(phrase: str, vocab: Vocabulary, *, fuzzy: bool = True, close: bool = True) -> OperationPick | None:
    """exact slug > synonym > alias > title > family (a plural too: "layer norms") > text inside a name >
    close spelling. A close spelling comes back as ``how="fuzzy"``: the grammar suggests it, never picks it."""
    hits = vocab.operation_hits(phrase)
    key = normalise(phrase)
    if not hits and key.endswith("s") and len(key) > 4:
        hits = vocab.operation_names.get(key[:-1], ())
    if hits:
        best = hits[0].how
        return OperationPick(tuple(h.slug for h in hits if h.how == best), best, tuple(h.slug for h in hits))
    if not fuzzy or len(key) < 4:
        return None
    containing = sorted({h.slug for name, hs in vocab.operation_names.items() if key in name for h in hs})
    if containing:
        return OperationPick(tuple(containing), "text")
    found = process.extractOne(key, list(vocab.operation_names), scorer=fuzz.ratio, score_cutoff=80) if close else None
    if found:
        slugs = tuple(dict.fromkeys(h.slug for h in vocab.operation_names[found[0]]))
        hint = found[0] if vocab.operation_names[found[0]][0].how in ("synonym", "family") else slugs[0]
        return OperationPick(slugs[:12], "fuzzy", (hint,))
    return None


def _operation(value: str, vocab: Vocabulary) -> tuple[str | None, ValueProblem | None]:
    pick = pick_operation(value, vocab)
    if pick and pick.how == "fuzzy":
        return None, ValueProblem("operation", value, f"no operation is called '{value}'", pick.named[0])
    if pick and pick.unique:
        return pick.unique, None
    if pick:
        return None, ValueProblem("operation", value, f"'{value}' matches several operations: "
                                  f"{', '.join(pick.slugs)}", pick.slugs[0])
    return None, ValueProblem("operation", value, f"no operation is called '{value}'",
                              suggest(value, sorted(vocab.operations)))


def _gpu(value: str, vocab: Vocabulary) -> tuple[str | None, ValueProblem | None]:
    slug = vocab.gpu(value)
    if slug:
        return slug, None
    shorts = sorted({g.short.lower() for g in vocab.gpus.values()} | set(vocab.gpus))
    return None, ValueProblem("gpu", value, f"no GPU is called '{value}'", suggest(value, shorts))


def _dtype(value: str) -> tuple[str | None, ValueProblem | None]:
    found = query_dtype(value)
    if found:
        return found, None
    return None, ValueProblem("dtype", value, f"'{value}' is not a dtype",
                              suggest(value, sorted(dtype_words() | set(DTYPE_WORDS))))


def _arch(value: str, vocab: Vocabulary) -> tuple[str | None, ValueProblem | None]:
    m = _ARCH.match(value.strip().lower())
    if m:
        return f"sm_{m.group(1)}", None
    return None, ValueProblem("arch", value, f"'{value}' is not a compute capability like sm_90",
                              suggest(value, sorted(vocab.architectures())))


def _choice(field: str, value: str, table: dict[str, str], noun: str) -> tuple[str | None, ValueProblem | None]:
    key = value.strip().lower()
    if key in table:
        return table[key], None
    return None, ValueProblem(field, value, f"'{value}' is not {noun}", suggest(key, sorted(table)))


def _pattern(field: str, value: str, pattern: re.Pattern[str], noun: str) -> tuple[str | None, ValueProblem | None]:
    if pattern.match(value):
        return value, None
    return None, ValueProblem(field, value, f"'{value}' is not {noun}")


def normalise_value(field: str, value: str, vocab: Vocabulary) -> tuple[object | None, ValueProblem | None]:
    """One filter value in user spelling → its canonical form, or a problem with a suggestion."""
    value = value.strip()
    if not value:
        return None, ValueProblem(field, value, f"{field} has no value")
    if field == "operation":
        return _operation(value, vocab)
    if field == "gpu":
        return _gpu(value, vocab)
    if field == "dtype":
        return _dtype(value)
    if field == "arch":
        return _arch(value, vocab)
    if field == "mode":
        return _choice(field, value, MODES, "a mode (forward, backward, forward+backward, forward-no-grad)")
    if field == "language":
        return _choice(field, value, {x: x for x in LANGUAGES}, f"a language ({', '.join(LANGUAGES)})")
    if field == "trust":
        return _choice(field, value, {x: x for x in TRUST_LEVELS}, f"an evidence level ({', '.join(TRUST_LEVELS)})")
    if field == "usable":
        key = value.lower()
        if key in BOOLEANS:
            return BOOLEANS[key], None
        return None, ValueProblem(field, value, f"usable is yes or no, not '{value}'", suggest(key, ["yes", "no"]))
    if field == "license":
        return _pattern(field, value, _LICENSE, "an SPDX license expression")
    if field == "implementation":
        return _pattern(field, value.lower(), _IMPLEMENTATION, "part of an implementation's name")
    if field == "source":
        return _pattern(field, value.lower(), _SOURCE, "a source name such as liger-kernel-benchmarks")
    raise KeyError(field)


def axis_value(value: str) -> int | None:
    """An axis value in query text: the domain's integer rule (``seq=2_048`` is not a number)."""
    try:
        number = parse_integer(value.strip(), "axis value")
    except NumberError:
        return None
    return number if 1 <= number <= 2**53 else None


_SCALARS = ("operation", "dtype", "gpu", "arch", "mode", "language", "implementation", "trust", "license", "source")


def normalise_request(request: ResolveRequest, vocab: Vocabulary) -> tuple[ResolveRequest, list[ValueProblem]]:
    """Canonical spellings for every field, and the problems (each with a suggestion when one exists)."""
    problems: list[ValueProblem] = []
    updates: dict[str, object] = {}
    for field in _SCALARS:
        raw = getattr(request, field)
        if raw is None:
            continue
        value, problem = normalise_value(field, raw, vocab)
        if problem:
            problems.append(problem)
        updates[field] = value
    op = updates.get("operation")
    allowed = set(vocab.operations[op].axes) if isinstance(op, str) else set(vocab.axis_names)
    for name in request.axes:
        if name not in allowed:
            where = f"an axis of {op}" if isinstance(op, str) else "an axis of any operation"
            problems.append(ValueProblem(f"axes.{name}", name, f"'{name}' is not {where}",
                                         suggest(name, sorted(allowed))))
    return request.model_copy(update=updates), problems
