"""Cursor pagination: ``limit`` 1–200 and opaque keyset cursors.

A cursor names the last item of the previous page (its sort key) and the list it belongs to,
base64url-encoded with a checksum; a malformed, tampered or foreign cursor is a 400, never a
silent restart from the first page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from kernelindex.web.api.problems import ApiProblem

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def _check(payload: bytes) -> str:
    return hashlib.sha256(b"kernelindex-cursor-v1" + payload).hexdigest()[:12]


def encode_cursor(listing: str, key: Sequence[Any]) -> str:
    payload = json.dumps({"l": listing, "k": list(key)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload + b"." + _check(payload).encode()).decode().rstrip("=")


def decode_cursor(listing: str, cursor: str) -> list[Any]:
    bad = ApiProblem("bad_cursor", "The cursor is not one this endpoint issued; start again without a cursor.",
                     [{"field": "cursor", "in": "query", "message": "malformed or foreign cursor"}])
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload, _, check = raw.rpartition(b".")
        if not payload or check.decode() != _check(payload):
            raise bad
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if not isinstance(data, dict) or data.get("l") != listing or not isinstance(data.get("k"), list):
        raise bad
    return data["k"]


def paginate(listing: str, items: Sequence[Any], key: Callable[[Any], Sequence[Any]], limit: int,
             cursor: str | None) -> dict[str, Any]:
    """One page of ``items`` (already in ``key`` order), as ``{items, next_cursor, limit, total}``."""
    start = 0
    if cursor:
        after = decode_cursor(listing, cursor)
        try:
            start = next((i for i, item in enumerate(items) if list(key(item)) > after), len(items))
        except TypeError:
            raise ApiProblem("bad_cursor", "The cursor does not fit this listing; start again without a cursor.",
                             [{"field": "cursor", "in": "query", "message": "foreign cursor"}]) from None
    page = list(items[start:start + limit])
    more = start + limit < len(items)
    return {
        "items": page,
        "next_cursor": encode_cursor(listing, key(page[-1])) if more and page else None,
        "limit": limit,
        "total": len(items),
    }
