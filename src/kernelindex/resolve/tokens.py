"""What parsing a text query yields: tokens, the issues placed beside them, and the request."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.resolve.request import ResolveRequest

SHOWN_CHARS = 60


def clip(text: str) -> str:
    """Echoed user text, cut to a readable length (a 20,000-character token is not printed whole)."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int
    # operation | axis | gpu | dtype | arch | mode | language | trust | usable | license | source | filler
    # | ranking (fastest, best: answers are ranked fastest first anyway) | issue (model words too: code MODEL_WORD)
    kind: str
    value: str | int | bool | None = None

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "start": self.start, "end": self.end, "kind": self.kind, "value": self.value}


@dataclass(frozen=True)
class QueryIssue:
    token: str
    start: int
    end: int
    code: str
    message: str
    suggestion: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"token": self.token, "start": self.start, "end": self.end, "code": self.code,
                "message": self.message, "suggestion": self.suggestion}


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    request: ResolveRequest
    tokens: tuple[Token, ...]
    issues: tuple[QueryIssue, ...]
    operation_candidates: tuple[str, ...] = ()
    operation_how: str | None = None
    # When no word names an operation but one is a close spelling of some: those operations, offered to pick
    # from (a misspelling is suggested against, never guessed).
    suggested: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "text": self.text,
            "tokens": [t.to_json() for t in self.tokens],
            "issues": [i.to_json() for i in self.issues],
            "operation_match": self.operation_how,
            "operation_candidates": list(self.operation_candidates),
            "suggested_operations": list(self.suggested),
        }
