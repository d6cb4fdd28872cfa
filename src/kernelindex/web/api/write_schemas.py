"""Response schemas of the write path and the changes feed (OpenAPI only: the routes return the bodies
built by the catalog and the read model; Schemathesis checks every answer against these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelindex.catalog.audit import AuditEntry
from kernelindex.catalog.requests import Replica


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


class MeasurementRequestOut(_Out):
    id: int
    digest: str
    operation: str
    gpu: str
    request: dict[str, Any]
    workload: dict[str, Any]
    askers: int
    state: str
    created_at: str
    updated_at: str
    age_seconds: int
    replicas: list[Replica]  # the replica is its own schema, as the audit entry is
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
