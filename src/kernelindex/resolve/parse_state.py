"""The parser's working state: the words read so far, what they set, and the issues beside them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernelindex.resolve.request import MAX_AXES
from kernelindex.resolve.tokens import SHOWN_CHARS, QueryIssue, Token, clip
from kernelindex.resolve.vocabulary import Vocabulary


@dataclass
class Word:
    text: str
    start: int
    end: int


@dataclass
class State:
    vocab: Vocabulary
    values: dict[str, object] = field(default_factory=dict)
    axes: dict[str, int] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    issues: list[QueryIssue] = field(default_factory=list)
    candidates: tuple[str, ...] = ()
    how: str | None = None
    axis_tokens: dict[str, Token] = field(default_factory=dict)
    shorthands: list[tuple[Word, str, str]] = field(default_factory=list)
    bare_numbers: list[Word] = field(default_factory=list)
    shapes: list[Word] = field(default_factory=list)  # 4096x1024, bound once the operation is known
    typos: tuple[str, ...] = ()  # the operations a misspelled word is close to (offered, never picked)
    model_words: list[Word] = field(default_factory=list)

    def issue(self, w: Word, code: str, message: str, suggestion: str | None = None) -> None:
        message = re.sub(rf"\S{{{SHOWN_CHARS + 1},}}", lambda m: clip(m.group(0)), message)
        self.issues.append(QueryIssue(clip(w.text), w.start, w.end, code, message, suggestion and clip(suggestion)))
        self.tokens.append(Token(clip(w.text), w.start, w.end, "issue"))

    def bind_axis(self, w: Word, key: str, number: int) -> None:
        if key in self.axes and self.axes[key] != number:
            self.issue(w, "CONFLICT", f"{key} is already {self.axes[key]}; keeping the first")
        elif len(self.axes) >= MAX_AXES and key not in self.axes:
            self.issue(w, "TOO_MANY_AXES", f"at most {MAX_AXES} axis bindings")
        else:
            self.axes[key] = number
            token = Token(w.text, w.start, w.end, "axis", number)
            self.axis_tokens[key] = token
            self.tokens.append(token)

    def set(self, w: Word, field_name: str, value: object, kind: str | None = None) -> None:
        if field_name in self.values and self.values[field_name] != value:
            self.issue(w, "CONFLICT", f"{field_name} is already {self.values[field_name]}; "
                       f"'{w.text}' asks for {value} as well — one {field_name} per query, keeping the first")
            return
        self.values[field_name] = value
        # Values come from the typed parsers of each key (str, int or bool); ResolveRequest checks them.
        self.tokens.append(Token(w.text, w.start, w.end, kind or field_name, value))  # type: ignore[arg-type]
