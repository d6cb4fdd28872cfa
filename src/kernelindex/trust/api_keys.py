"""API keys for the write path: scoped, shown once, stored only as a salted hash, revocable.

A key reads ``ki_<key id>_<secret>``. The key id (12 hex digits) finds the row; the secret
(256 random bits) is checked against ``sha256(salt ‖ secret)`` with a constant-time compare. A slow
password hash buys nothing for a 256-bit random secret and would cost every write request; the salt
keeps equal secrets from having equal hashes.

Scopes: ``bundles:write`` (upload bundles, claim and finish measurement requests as a runner),
``requests:write`` (ask for measurements), ``admin`` (every scope, plus the audit log).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kernelindex.catalog import api_keys as stored
from kernelindex.catalog.db import Catalog
from kernelindex.domain.instants import as_utc

SCOPES = ("bundles:write", "requests:write", "admin")
PREFIX = "ki_"
_TOKEN = re.compile(r"^ki_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,79}$")


class ApiKeyError(ValueError):
    """A key that cannot be created, found or used; the message says why."""


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    name: str
    scope: str
    created_by: str
    created_at: datetime
    revoked_at: datetime | None
    revoked_by: str | None

    def allows(self, scope: str) -> bool:
        return self.revoked_at is None and self.scope in (scope, "admin")

    def to_json(self) -> dict[str, object]:
        return {"key_id": self.key_id, "name": self.name, "scope": self.scope, "created_by": self.created_by,
                "created_at": self.created_at.isoformat(), "revoked": self.revoked_at is not None,
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None, "revoked_by": self.revoked_by}


def _hash(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("ascii")).hexdigest()


def _key(row: Any) -> ApiKey:  # a catalog ApiKeyRow
    return ApiKey(row.key_id, row.name, row.scope, row.created_by, as_utc(row.created_at) or row.created_at,
                  as_utc(row.revoked_at), row.revoked_by)


def create_key(catalog: Catalog, *, name: str, scope: str, created_by: str) -> tuple[ApiKey, str]:
    """Make a key; returns it and the token, which is never stored and cannot be shown again."""
    if scope not in SCOPES:
        raise ApiKeyError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    if not _NAME.match(name):
        raise ApiKeyError(f"key name {name!r}: use letters, digits, spaces, '.', '_', '@' or '-' (at most 80)")
    key_id, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_hex(16)
    now = datetime.now(UTC)
    row = {"key_id": key_id, "name": name, "scope": scope, "salt": salt, "secret_hash": _hash(salt, secret),
           "created_by": created_by, "created_at": now}
    stored.insert_key(catalog, row)
    return ApiKey(key_id, name, scope, created_by, now, None, None), f"{PREFIX}{key_id}_{secret}"


def list_keys(catalog: Catalog) -> list[ApiKey]:
    return [_key(r) for r in stored.key_rows(catalog)]


def revoke_key(catalog: Catalog, key_id: str, *, revoked_by: str) -> ApiKey:
    key_id = key_id.removeprefix(PREFIX).split("_")[0]
    done = stored.mark_revoked(catalog, key_id, revoked_by=revoked_by)
    found = {k.key_id: k for k in list_keys(catalog)}
    if key_id not in found:
        raise ApiKeyError(f"no API key {key_id!r}; `ki keys list` shows them")
    if not done and found[key_id].revoked_at is None:
        raise ApiKeyError(f"API key {key_id} could not be revoked")
    return found[key_id]


def authenticate(catalog: Catalog, token: str) -> ApiKey:
    """The key a token belongs to. Raises ApiKeyError (malformed, unknown, wrong secret, revoked)."""
    match = _TOKEN.match(token.strip())
    if not match:
        raise ApiKeyError("the API key is malformed: expected ki_<12 hex digits>_<43 characters>")
    key_id, secret = match.groups()
    row = stored.key_row(catalog, key_id)
    if row is None or not hmac.compare_digest(row.secret_hash, _hash(row.salt, secret)):
        raise ApiKeyError("the API key is not known to this server")
    key = _key(row)
    if key.revoked_at is not None:
        raise ApiKeyError(f"the API key {key_id} ({key.name}) was revoked on {key.revoked_at:%Y-%m-%d %H:%M} UTC")
    return key
