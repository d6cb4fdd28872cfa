"""Machine-readable reason codes with the sentence users read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    code: str
    sentence: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "sentence": self.sentence}
