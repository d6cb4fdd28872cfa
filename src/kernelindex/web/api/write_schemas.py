"""Response schemas of the write path and the changes feed (OpenAPI only: the routes return the bodies
built by the catalog and the read model; Schemathesis checks every answer against these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class ReplicaOut(_Out):
    replica: int
    state: str
    runner: str | None
    runner_key_id: str | None
    lease_until: str | None
    claimed_at: str | None
    finished_at: str | None
    bundle_digest: str | None
    failure: str | None
    attempts: int


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
    replicas: list[ReplicaOut]
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


class AuditEntryOut(_Out):
    id: int
    at: str
    actor: str
    api_key: str | None
    scope: str | None
    action: str
    object_digest: str | None
    client: str | None
    outcome: str
    detail: dict[str, Any] | None


class AuditOut(_Out):
    items: list[AuditEntryOut]
    next_after: int
