"""Canonical JSON (RFC 8785 / JCS) and content digests.

Identity of a manifest is ``sha256:`` + hex SHA-256 over the JCS form of
``{apiVersion, kind, spec}`` after normalization (done by the pydantic models).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import rfc8785

DIGEST_PREFIX = "sha256:"


class ManifestSyntaxError(ValueError):
    """A document that is not acceptable JSON for a manifest (duplicate key, NaN, ...)."""


_MAX_SAFE_INTEGER = 2**53 - 1


def _plain(value: Any) -> bool:
    """True when ``json.dumps(sort_keys=True)`` writes exactly the JCS form: no floats (JCS formats
    numbers the ECMAScript way), integers JCS accepts, strings and keys inside the Basic
    Multilingual Plane (JCS sorts keys by UTF-16 code units, Python by code points; they agree
    there, and both escape the same characters the same way)."""
    if isinstance(value, str):
        return value.isascii() or max(map(ord, value)) < 0x10000
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(k) and _plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes. Documents without floats or non-BMP text take json's C encoder,
    which writes the same bytes as the reference implementation (tested against it) many times
    faster; everything else goes through ``rfc8785``."""
    if _plain(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
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


def strict_json_loads(text: str | bytes) -> Any:
    """Parse JSON refusing duplicate keys, NaN and Infinity (json accepts all three by default)."""
    return json.loads(
        text,
        object_pairs_hook=_reject_duplicates,
        parse_constant=_reject_constant,
        parse_float=_reject_nonfinite,
    )
