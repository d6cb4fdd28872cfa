"""The query grammar: free words plus ``key:value`` / ``key=value`` filters and axis bindings.

``rope seq=2048 hidden=8192 gpu:a100 dtype:bf16 trust:verified usable:yes``

Words are recognised as operation names, aliases and synonyms (``resolve/words.py``), GPUs, dtypes and
precision classes (``fp8``), shapes (``4096x1024``), languages, modes and evidence levels. A close
spelling of a name is suggested, never picked; a model word is named as ignored. Every token ends up
either in the request or in an issue placed beside it, with a suggestion where one exists: nothing is
silently dropped, and parsing never raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from kernelindex.resolve.grammar_axes import SHAPE, bind_shapes, check_axes, report_bare_numbers, respell_axes
from kernelindex.resolve.model_shapes import narrow_to_model
from kernelindex.resolve.parse_state import State, Word
from kernelindex.resolve.request import (
    OperationPick,
    ResolveRequest,
    ValueProblem,
    axis_value,
    normalise_value,
    pick_operation,
    suggest,
)
from kernelindex.resolve.tokens import ParsedQuery, Token
from kernelindex.resolve.vocabulary import (
    AXIS_ALIASES,
    KEY_ALIASES,
    KEYS,
    LANGUAGES,
    MODES,
    TRUST_LEVELS,
    Vocabulary,
    normalise,
    registry_vocabulary,
)
from kernelindex.resolve.words import (
    IMPLEMENTATION_OF,
    NOISE_WORDS,
    axis_spellings,
    model_word,
    model_word_reason,
    query_dtype,
    separate,
)
from kernelindex.urls import MAX_QUERY_CHARS

MAX_TOKENS = 40
_TOKEN = re.compile(
    r"""(?P<key>[^\s:="']+)\s*(?P<sep>[:=])\s*(?P<value>"[^"]*"?|'[^']*'?|[^\s"']*)|(?P<word>"[^"]*"?|'[^']*'?|\S+)"""
)
_ARCH_WORD = re.compile(r"^sm_?\d{2,3}[a-z]?$", re.IGNORECASE)
_FIELD_OF_KEY = {"op": "operation", "lang": "language", "impl": "implementation"}
# Connecting words of natural phrasing ("rope … on H100"): read and set aside, never an issue.
FILLER_WORDS = frozenset({"on", "at", "for", "with", "in", "and", "using", "of"})
# Ranking words ("fastest rmsnorm on h200"): every answer is already ordered fastest first, so they are
# understood and change nothing.
RANKING_WORDS = frozenset({"fastest", "best", "quickest", "top", "fast", "quick", "leader", "leaders", "record"})
# The measured values of one axis of one operation: lets ``seq 2k`` mean the one reading that exists.
MeasuredValues = Callable[[str, str], Collection[int]]


def _unquote(text: str) -> str:
    if text[:1] in "\"'":
        text = text[1:]
        if text[-1:] in "\"'":
            text = text[:-1]
    return text


def _tokenise(text: str) -> list[tuple[Word, str | None, str | None]]:
    """(word, key, value): key and value are None for a free word. Commas and semicolons separate
    terms like spaces do (same length, so positions still point into the original text)."""
    out: list[tuple[Word, str | None, str | None]] = []
    for m in _TOKEN.finditer(separate(text)):
        w = Word(m.group(0), m.start(), m.end())
        if m.group("key") is not None:
            out.append((w, m.group("key"), _unquote(m.group("value"))))
        else:
            out.append((w, None, None))
    return out


def _pick(state: State, w: Word, pick: OperationPick) -> None:
    chosen = state.values.get("operation")
    if isinstance(chosen, str) and chosen in (pick.named or pick.slugs):
        # A word the chosen operation also answers to ("kernelbench level 1 problem 19 relu"): redundant.
        state.tokens.append(Token(w.text, w.start, w.end, "operation", chosen))
        return
    if pick.unique:
        if "operation" not in state.values and state.candidates:
            state.candidates = ()
        state.set(w, "operation", pick.unique)
        if state.values.get("operation") == pick.unique:
            state.how = state.how or pick.how
        return
    if "operation" in state.values:
        state.issue(w, "AMBIGUOUS_OPERATION", f"'{w.text}' matches {', '.join(pick.slugs)}; "
                    f"keeping {state.values['operation']}")
        return
    # Each further name narrows the candidates ("gqa paged" then "decode": the GQA decode operations,
    # not every operation whose name holds "decode"); one left is the operation.
    narrowed = tuple(s for s in state.candidates if s in (pick.named or pick.slugs))
    if len(narrowed) == 1:
        state.candidates = ()
        state.set(w, "operation", narrowed[0])
        return
    state.candidates = narrowed or pick.slugs
    state.how = pick.how
    state.tokens.append(Token(w.text, w.start, w.end, "operation", None))


def _axis_name(state: State, word: str) -> str | None:
    """An axis some operation has, in the user's spelling or another of the same quantity (resolve/words.py)."""
    key = word.lower()
    for name in (key, AXIS_ALIASES.get(key, key)):
        found = next((a for a in (name, *axis_spellings(name)) if a in state.vocab.axis_names), None)
        if found:
            return found
    return None


def _key_value(state: State, w: Word, raw_key: str, raw_value: str) -> None:
    key = raw_key.lower()
    key = KEY_ALIASES.get(key, key)
    axis = _axis_name(state, key)
    if axis:
        number = axis_value(raw_value)
        if number is not None:
            state.bind_axis(w, axis, number)
        elif _SHORTHAND.match(raw_value.strip()):
            state.shorthands.append((w, axis, raw_value.strip()))
        else:
            state.issue(w, "BAD_VALUE", f"{axis} takes a positive whole number, not '{raw_value}'")
        return
    if key not in KEYS:
        choices = sorted(set(KEYS) | set(state.vocab.axis_names) | set(KEY_ALIASES))
        hint = suggest(key, choices)
        hint = KEY_ALIASES.get(hint, hint) if hint else None
        state.issue(w, "UNKNOWN_KEY", f"unknown key '{raw_key}:'" + (f" — did you mean '{hint}:'?" if hint else ""),
                    f"{hint}:{raw_value}" if hint else None)
        return
    field_name = _FIELD_OF_KEY.get(key, key)
    if field_name == "operation":
        pick = pick_operation(raw_value, state.vocab) if raw_value.strip() else None
        if pick:
            _pick(state, w, pick)
            return
    value, problem = normalise_value(field_name, raw_value, state.vocab)
    if problem:
        _report(state, w, key, problem)
        return
    state.set(w, field_name, value)


_SHORTHAND = re.compile(r"^(\d+)([kKmM])$")


def _readings(raw: str) -> tuple[int, int]:
    """``2k`` → (2000, 2048); ``1m`` → (1000000, 1048576)."""
    m = _SHORTHAND.match(raw)
    assert m is not None
    n, unit = int(m.group(1)), m.group(2).lower()
    return n * (1000 if unit == "k" else 1_000_000), n * (1024 if unit == "k" else 1024 * 1024)


def _resolve_shorthands(state: State, measured: MeasuredValues | None) -> None:
    """``seq 2k`` binds the one reading (2000 or 2048) the operation has measured; otherwise both
    readings are named and the term is refused."""
    op = state.values.get("operation")
    for w, key, raw in state.shorthands:
        decimal, binary = _readings(raw)
        known = set(measured(op, key)) if measured and isinstance(op, str) else set()
        found = [v for v in (decimal, binary) if v in known]
        if len(found) == 1:
            state.bind_axis(w, key, found[0])
            continue
        why = ("both are measured" if found else "neither is measured" if known or isinstance(op, str)
               else "no operation was named to tell them apart")
        state.issue(w, "BAD_VALUE", f"{key} {raw} could mean {decimal} or {binary} ({why}) — write the whole "
                    f"number, e.g. {key}={binary}", f"{key}={binary}")


def _report(state: State, w: Word, key: str, problem: ValueProblem) -> None:
    hint = problem.suggestion
    message = problem.message + (f" — did you mean '{key}:{hint}'?" if hint else "")
    state.issue(w, "BAD_VALUE", message, f"{key}:{hint}" if hint else None)


def _classify(state: State, w: Word) -> bool:
    """A single free word that is a GPU, dtype, arch, language, mode, evidence level or 'usable'."""
    word = _unquote(w.text).strip().lower()
    gpu = state.vocab.gpu(word)
    if gpu:
        state.set(w, "gpu", gpu)
    elif query_dtype(word):
        state.set(w, "dtype", query_dtype(word))
    elif _ARCH_WORD.match(word):
        state.set(w, "arch", normalise_value("arch", word, state.vocab)[0])
    elif word in LANGUAGES:
        state.set(w, "language", word)
    elif word in MODES:
        state.set(w, "mode", MODES[word])
    elif word in TRUST_LEVELS:
        state.set(w, "trust", word)
    elif word == "usable":
        state.set(w, "usable", True)
    else:
        return False
    return True


def _free_words(state: State, words: list[Word]) -> None:
    i = 0
    while i < len(words):
        i += _read_at(state, words, i)


def _read_at(state: State, words: list[Word], i: int) -> int:
    """Read the word at ``i`` (with the words after it where a reading takes several) the first way that
    fits: a filler or ranking word, an axis and its number, an exact name, a known word, a fuzzy name;
    else it is an unknown word. Returns how many words were read."""
    w, n_max = words[i], state.vocab.max_name_words
    lowered = w.text.lower()
    if lowered in FILLER_WORDS or lowered in RANKING_WORDS or lowered in NOISE_WORDS:
        state.tokens.append(Token(w.text, w.start, w.end, "ranking" if lowered in RANKING_WORDS else "filler"))
        return 1
    if _axis_pair(state, words, i):
        return 2
    taken = (_exact_ngram(state, words, i, n_max, 2) or _model_word(state, words, i)
             or _exact_ngram(state, words, i, 1) or int(_classify(state, w)) or _shape(state, w)
             or _fuzzy_ngram(state, words, i, n_max))
    if not taken:
        _unknown_word(state, w)
    return taken or 1


def _axis_pair(state: State, words: list[Word], i: int) -> bool:
    """``seq 2048`` (an axis name followed by a number) binds like ``seq=2048``."""
    if i + 1 >= len(words):
        return False
    axis, value = _axis_name(state, words[i].text), words[i + 1].text
    if not axis or not (axis_value(value) is not None or _SHORTHAND.match(value)):
        return False
    _key_value(state, _joined(words[i:i + 2]), axis, value)
    return True


def _joined(words: list[Word]) -> Word:
    return Word(" ".join(w.text for w in words), words[0].start, words[-1].end)


def _exact_ngram(state: State, words: list[Word], i: int, n_max: int, n_min: int = 1) -> int:
    for n in range(min(n_max, len(words) - i), n_min - 1, -1):
        phrase = _joined(words[i:i + n])
        pick = pick_operation(phrase.text, state.vocab, fuzzy=False)
        if pick:
            _pick(state, phrase, pick)
            if pick.how == "synonym" and (impl := IMPLEMENTATION_OF.get(normalise(phrase.text))):
                state.values.setdefault("implementation", impl)  # "flash": FlashAttention's and FlashInfer's rows
            return n
    return 0


def _plain(state: State, w: Word) -> bool:
    """A word that could be part of an operation name (not a number, GPU, dtype …)."""
    word = w.text.lower()
    return not (word.isdigit() or state.vocab.gpu(word) or query_dtype(word) or word in MODES
                or word in LANGUAGES or word in TRUST_LEVELS)


def _fuzzy_ngram(state: State, words: list[Word], i: int, n_max: int) -> int:
    """Text inside a name, for the longest phrase that has some; else a close spelling of one word."""
    longest = min(n_max, len(words) - i)
    for n, close in [(n, False) for n in range(longest, 0, -1)] + [(1, True)]:
        if not all(_plain(state, w) for w in words[i:i + n]):
            continue
        phrase = _joined(words[i:i + n])
        if len(normalise(phrase.text)) < 4:
            continue
        pick = pick_operation(phrase.text, state.vocab, close=close)
        if pick and pick.how == "fuzzy":
            _typo(state, phrase, pick)
            return n
        if pick:
            _pick(state, phrase, pick)
            return n
    return 0


def _typo(state: State, w: Word, pick: OperationPick) -> None:
    """A close spelling of a name: suggested, never picked ("rmsnrom" is not silently KernelBench's RMSNorm)."""
    hint = pick.named[0] if pick.named else pick.slugs[0]
    state.issue(w, "UNKNOWN_WORD", f"no operation is called '{_unquote(w.text)}' — did you mean '{hint}'?", hint)
    state.typos = state.typos or pick.slugs


def _model_word(state: State, words: list[Word], i: int) -> int:
    """A model's name, size, layer or version ("llama 3.1 8b", "o_proj"): named as ignored, with why."""
    after = bool(state.model_words) and state.model_words[-1].end >= words[i].start - 2
    if not model_word(words[i].text, after_model=after):
        return 0
    if after:  # one issue for "llama 3.1 8b", not three
        first = state.model_words[-1]
        state.issues.pop()
        state.tokens.pop()
        state.model_words[-1] = Word(f"{first.text} {words[i].text}", first.start, words[i].end)
    else:
        state.model_words.append(words[i])
    joined = state.model_words[-1]
    state.issue(joined, "MODEL_WORD", model_word_reason(joined.text))
    return 1


def _shape(state: State, w: Word) -> int:
    """``4096x1024``: bound to the operation's axes once it is known (``grammar_axes.bind_shapes``)."""
    if not SHAPE.match(w.text):
        return 0
    state.shapes.append(w)
    return 1


def _unknown_word(state: State, w: Word) -> None:
    word = _unquote(w.text)
    if axis_value(word) is not None:
        state.bare_numbers.append(w)  # reported once the operation (and so its axes) is known
        return
    names = sorted(set(state.vocab.operations) | {g.short.lower() for g in state.vocab.gpus.values()})
    hint = suggest(word.lower(), names)
    state.issue(w, "UNKNOWN_WORD", f"'{word}' is not an operation, GPU, dtype, language or mode"
                + (f" — did you mean '{hint}'?" if hint else ""), hint)


def parse_query(text: str, vocab: Vocabulary | None = None, measured: MeasuredValues | None = None) -> ParsedQuery:
    """Parse a text query. Never raises: every problem becomes an issue beside its token.

    ``measured(operation, axis)`` gives the measured values of an axis, so ``seq 2k`` can be read."""
    vocab = vocab or registry_vocabulary()
    state = State(vocab)
    original = text
    if len(text) > MAX_QUERY_CHARS:
        cut = Word(text[MAX_QUERY_CHARS:], MAX_QUERY_CHARS, len(text))
        state.issue(cut, "QUERY_TOO_LONG", f"queries are at most {MAX_QUERY_CHARS} characters; the rest is ignored")
        text = text[:MAX_QUERY_CHARS]
    pending: list[Word] = []
    for count, (w, key, value) in enumerate(_tokenise(text)):
        if count >= MAX_TOKENS:
            state.issue(Word(text[w.start:], w.start, len(text)), "TOO_MANY_TOKENS",
                        f"at most {MAX_TOKENS} terms per query; the rest is ignored")
            break
        if key is None:
            pending.append(w)
            continue
        _free_words(state, pending)
        pending = []
        _key_value(state, w, key, value or "")
    _free_words(state, pending)
    narrow_to_model(state)
    bind_shapes(state)
    respell_axes(state)
    _resolve_shorthands(state, measured)
    report_bare_numbers(state)
    check_axes(state)
    request = ResolveRequest(axes=state.axes, **state.values)
    tokens = tuple(sorted(state.tokens, key=lambda t: (t.start, t.end)))
    issues = tuple(sorted(state.issues, key=lambda i: (i.start, i.end)))
    typos = state.typos if "operation" not in state.values and not state.candidates else ()
    return ParsedQuery(original, request, tokens, issues, state.candidates, state.how, typos)
