"""Numbers written as text: one rule for every source, manifest and query parameter.

A number is written the way JSON writes one (RFC 8259 §6): an optional minus, digits without
leading zeros, an optional ``.`` fraction and an optional exponent. Nothing else: no spaces around
it, no ``_`` separators, no ``+`` sign, no ``nan``/``inf``, no other digits than 0–9. Python's own
``float()`` and ``int()`` accept all of those (``float(" 1_0")`` is 10.0), so input never reaches
them unchecked; the error names the field and what a number looks like.
"""

from __future__ import annotations

import re
from decimal import Decimal

NUMBER_PATTERN = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,4})?"
INTEGER_PATTERN = r"-?(?:0|[1-9][0-9]*)"
_NUMBER = re.compile(NUMBER_PATTERN)
_INTEGER = re.compile(INTEGER_PATTERN)
MAX_NUMBER_CHARS = 400  # longer than any real measurement; refused before the regex runs
NUMBER_RULE = "digits with an optional '.' fraction and exponent (e.g. 0.0588 or 1e-05), no spaces, '_' or '+'"
INTEGER_RULE = "digits only (e.g. 2048), no spaces, '_', '+', fraction or leading zeros"


class NumberError(ValueError):
    """Text that is not a number by the rule above; the message names the field."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def parse_number(text: str, field: str) -> Decimal:
    """``"0.0588"`` → Decimal("0.0588"); refuses ``" 1.0"``, ``"1_0"``, ``"+1"``, ``"nan"``."""
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER.fullmatch(text):
        raise NumberError(f"{field} is {_shown(text)}, not a number: write {NUMBER_RULE}")
    return Decimal(text)


def parse_integer(text: str, field: str) -> int:
    """``"2048"`` → 2048; refuses ``"2_048"``, ``" 2048"``, ``"2048.0"``, ``"02048"``."""
    if len(text) > MAX_NUMBER_CHARS or not _INTEGER.fullmatch(text):
        raise NumberError(f"{field} is {_shown(text)}, not an integer: write {INTEGER_RULE}")
    return int(text)


def json_number(value: object, field: str) -> int | float:
    """A number a JSON document must write as a number: ``"10"`` (a string) and ``true`` are refused, so
    text never reaches ``round()``/``int()`` by way of a lenient conversion."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NumberError(f"{field} is {value!r}: write it as a JSON number, not a {type(value).__name__}")
    return value
