"""Canonical JSON (RFC 8785 / JCS) and content digests.

Identity of a manifest is ``sha256:`` + hex SHA-256 over the JCS form of
``{apiVersion, kind, spec}`` after normalization (done by the pydantic models).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson
import rfc8785

DIGEST_PREFIX = "sha256:"

# Input limits, checked before (bytes) or while (the rest) a document is parsed, so no input can
# exhaust memory or time. Headroom: the largest line of the staged KernelIndex export is 9.4 kB,
# 9 levels deep, with 554 values; the largest shipped bundle manifest is 1.7 kB.
MAX_DOCUMENT_BYTES = 1_048_576  # one manifest file, or one JSON Lines line, decompressed
MAX_DEPTH = 32  # nested objects/arrays
MAX_VALUES = 10_000  # JSON values in one document
MAX_SAFE_INTEGER = 2**53 - 1  # RFC 8785 hashes numbers as IEEE doubles: larger integers lose identity


class ManifestSyntaxError(ValueError):
    """A document that is not acceptable JSON for a manifest (duplicate key, NaN, ...)."""


_MAX_SAFE_INTEGER = 2**53 - 1


def _plain(value: Any) -> bool:
    """True when orjson with sorted keys writes exactly the JCS form: no floats (JCS formats
    numbers the ECMAScript way), integers JCS accepts, strings and keys inside the Basic
    Multilingual Plane (JCS sorts keys by UTF-16 code units, orjson by code points; they agree
    there, and both escape the same characters the same way).

    Walked with a stack over the exact JSON types (every manifest digest passes here, so this is
    a hot loop of imports); anything else, subclasses included, is judged by ``_plain_value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and max(map(ord, item)) >= 0x10000:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str or not (key.isascii() or max(map(ord, key)) < 0x10000):
                    return False
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is int:
            if not -_MAX_SAFE_INTEGER <= item <= _MAX_SAFE_INTEGER:
                return False
        elif not (item is None or kind is bool or _plain_value(item)):
            return False
    return True


def _plain_value(value: Any) -> bool:
    if isinstance(value, str):
        return value.isascii() or max(map(ord, value)) < 0x10000
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_value(k) and _plain_value(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain_value(v) for v in value)
    return False


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes. Documents without floats or non-BMP text take orjson with sorted keys,
    which writes the same bytes as the reference implementation (tested against it) many times
    faster than either ``json`` or ``rfc8785``; everything else goes through ``rfc8785``."""
    if _plain(value):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return rfc8785.dumps(value)


def sha256_digest(value: Any) -> str:
    return DIGEST_PREFIX + hashlib.sha256(canonical_bytes(value)).hexdigest()


def bytes_digest(data: bytes) -> str:
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def key_id_of(public_key_hex: str) -> str:
    """A runner key's identity: sha256 over the JCS form of ``{"ed25519": <raw public key, hex>}``."""
    return sha256_digest({"ed25519": public_key_hex})


def short_digest(digest: str) -> str:
    """What pages show: ``sha256`` and the first 12 hex digits."""
    return digest.removeprefix(DIGEST_PREFIX)[:12]


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ManifestSyntaxError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _reject_constant(name: str) -> float:
    raise ManifestSyntaxError(f"{name} is not a number JSON allows; write a finite value")


def _reject_nonfinite(value: str) -> float:
    number = float(value)
    if math.isinf(number):
        raise ManifestSyntaxError(f"number {value} overflows a double")
    return number


def _safe_integer(text: str) -> int:
    if len(text.lstrip("-")) > 16 or abs(number := int(text)) > MAX_SAFE_INTEGER:
        raise ManifestSyntaxError(
            f"integer {text[:24]}{'…' if len(text) > 24 else ''} is outside ±{MAX_SAFE_INTEGER:,} "
            "(the range JSON numbers hold exactly)"
        )
    return number


def check_size(size: int, what: str = "document") -> None:
    if size > MAX_DOCUMENT_BYTES:
        raise ManifestSyntaxError(f"{what} is {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,}-byte limit")


def check_json_value(value: Any) -> bool:
    """Depth, value count and integer range of decoded JSON, walked without recursion. Returns whether
    the value holds JSON's own types only (dict with str keys, list, str, int, finite float, bool,
    None; no subclasses), which any JSON writer writes as the same JSON."""
    # Two stacks (values, their depths) visited in the same order as one of (value, depth) pairs, so
    # the first problem found is the same; no pair is built per value (this walk guards every build()).
    stack, depths = [value], [1]
    count, plain = 0, True
    while stack:
        item, depth = stack.pop(), depths.pop()
        count += 1
        if count > MAX_VALUES:
            raise ManifestSyntaxError(f"more than {MAX_VALUES:,} JSON values in one document")
        if depth > MAX_DEPTH:
            raise ManifestSyntaxError(f"nested deeper than {MAX_DEPTH} levels")
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                _safe_integer(str(item))  # raises, saying which integer
            continue
        if kind is float:
            plain = plain and math.isfinite(item)
            continue
        if kind is dict:
            plain = plain and all(type(key) is str for key in item)
            children: Any = item.values()
        elif kind is list:
            children = item
        else:
            plain = False
            children = _other_value(item)
        stack.extend(children)
        depths.extend([depth + 1] * len(children))
    return plain


def _other_value(item: Any) -> Any:
    """A value that is not of JSON's own types: subclasses are checked as their base; the children to visit."""
    if isinstance(item, int) and not isinstance(item, bool) and not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
        _safe_integer(str(item))  # raises, saying which integer
    return item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()


def strict_json_loads(text: str | bytes) -> Any:
    """Parse JSON refusing duplicate keys, NaN and Infinity (json accepts all three by default),
    integers JSON cannot hold exactly, and documents over the size, depth or value-count limits."""
    check_size(len(text) if isinstance(text, bytes) else len(text.encode("utf-8")))
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestSyntaxError(f"not UTF-8: byte 0x{text[exc.start]:02x} at offset {exc.start}") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
            parse_float=_reject_nonfinite,
            parse_int=_safe_integer,
        )
    except RecursionError:
        raise ManifestSyntaxError(f"nested deeper than {MAX_DEPTH} levels") from None
    check_json_value(value)
    return value
