"""Response schemas of the write path and the changes feed (OpenAPI only: the routes return the bodies
built by the catalog and the read model; Schemathesis checks every answer against these)."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from kernelindex.catalog.audit import AuditEntry
from kernelindex.catalog.requests import MeasurementRequest


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BundleOut(_Out):
    bundle: str
    runner: str
    key_id: str
    runs: list[str]
    run_urls: list[str]
    status: Literal["published", "already_published"] = Field(
        description="published: this upload wrote it (201); already_published: it was already in the catalog, "
                    "from an earlier or a concurrent upload, and this one wrote nothing (200)")


def _as_shown(source: type, renamed: dict[str, str]) -> dict[str, Any]:
    """The fields of the dataclass ``source`` as its ``to_json`` shows them, in its order: under the names of
    ``renamed`` where the JSON names them otherwise, instants as ISO 8601 strings."""
    hints = get_type_hints(source)
    return {renamed.get(f.name, f.name): (str if hints[f.name] is datetime else hints[f.name], ...)
            for f in fields(source)}


# what MeasurementRequest.to_json shows: the stored request's fields (its spec as ``request``), its age and URL
_StoredRequest = create_model("_StoredRequest", __base__=_Out, **_as_shown(MeasurementRequest, {"spec": "request"}))


class MeasurementRequestOut(_StoredRequest):
    age_seconds: int
    url: str


class RequestsOut(_Out):
    items: list[MeasurementRequestOut]
    total: int


class ClaimOut(_Out):
    request: MeasurementRequestOut
    replica: int
    runner: str = Field(description="The name the runner key is trusted under; its bundles name it so.")
    token: str
    lease_until: str
    lease_seconds: float


class LeaseOut(_Out):
    lease_until: str
    lease_seconds: float


class AuditOut(_Out):
    items: list[AuditEntry]  # the entry is its own schema, as the read models are (web/api/twins.py)
    next_after: int
