"""A runner proves who it is when it claims work, and proves it did the work when it completes it.

Claim: the runner signs, with its private runner key, the canonical JSON of
``{"purpose": "kernelindex-claim/v1", "gpu", "runner_key_id", "operations", "at", "nonce"}``. The
server checks the signature against the public key the catalog trusts for that key id, that ``at``
is within ``CLAIM_WINDOW`` of its own clock, and that the nonce was never used by that key (nonces
are stored for the window and a margin). A key id alone — public, in every bundle — proves nothing.
The runner's name is the one its key was trusted under, never one the client sends.

Completion: the bundle named must be published with runs signed by the claiming key, and every one
of its runs must answer the request (its workload, hence operation, and its GPU product), observed
no earlier than the claim (less ``CLOCK_SKEW``) and first published after it: an old bundle, or one
measured on another GPU, completes nothing.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex import registry
from kernelindex.catalog.claims import BundleRun, bundle_runs, spend_nonce
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.requests import HeldClaim, MeasurementRequest
from kernelindex.catalog.runners import trusted_runner
from kernelindex.domain.canonical import canonical_bytes
from kernelindex.domain.manifests import WorkloadCase, as_kind, digest_of, parse_manifest
from kernelindex.trust.keys import key_id_of, public_key_hex, verify_signature

CLAIM_PURPOSE = "kernelindex-claim/v1"
CLAIM_WINDOW = timedelta(minutes=5)
CLOCK_SKEW = timedelta(minutes=5)  # a run's observed_at comes from the runner's clock


class ClaimRefused(ValueError):
    """A claim or a completion the runner did not prove; ``code`` is the API problem code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def claim_message(*, gpu: str, runner_key_id: str, operations: list[str] | None, at: str, nonce: str) -> bytes:
    """The bytes a runner signs to claim work."""
    return canonical_bytes({"purpose": CLAIM_PURPOSE, "gpu": gpu, "runner_key_id": runner_key_id,
                            "operations": list(operations or []), "at": at, "nonce": nonce})


def signed_claim(key: Ed25519PrivateKey, gpu: str, operations: list[str] | None = None,
                 now: datetime | None = None) -> dict[str, Any]:
    """The body of ``POST /api/v1/claims``, signed by the runner's private key."""
    key_id = key_id_of(public_key_hex(key))
    at = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    nonce = secrets.token_hex(16)
    message = claim_message(gpu=gpu, runner_key_id=key_id, operations=operations, at=at, nonce=nonce)
    body: dict[str, Any] = {"gpu": gpu, "runner_key_id": key_id, "at": at, "nonce": nonce,
                            "signature": key.sign(message).hex()}
    if operations:
        body["operations"] = operations
    return body


def check_claim(catalog: Catalog, body: dict[str, Any], now: datetime) -> str:
    """The registered name of the runner that signed this claim; ClaimRefused when it is not proven."""
    key_id = body["runner_key_id"]
    registered = trusted_runner(catalog, key_id)
    if registered is None:
        raise ClaimRefused("untrusted_runner", f"runner key {key_id} is not trusted on this server; its bundles "
                           "would not publish as verified (`ki runner trust` registers it)")
    name, public_key = registered
    at = _instant(body["at"])
    if abs(now - at) > CLAIM_WINDOW:
        raise ClaimRefused("claim_not_proven", f"the claim is signed for {body['at']}, more than "
                           f"{CLAIM_WINDOW.seconds // 60} minutes from the server's clock ({now:%Y-%m-%dT%H:%M:%SZ}); "
                           "sign each claim when you send it (and keep the runner's clock synchronised)")
    message = claim_message(gpu=body["gpu"], runner_key_id=key_id, operations=body.get("operations"),
                            at=body["at"], nonce=body["nonce"])
    if not verify_signature(public_key, message, bytes.fromhex(body["signature"])):
        raise ClaimRefused("claim_not_proven", f"the claim's signature does not verify for runner key {key_id} "
                           f"({name}); only the holder of that runner's private key can claim as it")
    if not spend_nonce(catalog, key_id, body["nonce"], at, forget_before=now - 2 * CLAIM_WINDOW):
        raise ClaimRefused("claim_not_proven", f"nonce {body['nonce']} was already used by runner key {key_id}; "
                           "a signed claim is accepted once (sign each claim with a fresh nonce)")
    return name


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ClaimRefused("claim_not_proven", f"at {text!r} is not an RFC 3339 instant") from None
    if value.tzinfo is None:
        raise ClaimRefused("claim_not_proven", f"at {text!r} has no time zone")
    return value.astimezone(UTC)


def check_fulfils(catalog: Catalog, bundle_digest: str, request: MeasurementRequest, held: HeldClaim) -> None:
    """ClaimRefused (``not_fulfilled``) unless ``bundle_digest`` brought runs signed by the claiming key,
    each answering ``request`` and new since the claim (``held``)."""
    runs = bundle_runs(catalog, bundle_digest, held.runner_key_id)
    claimed_at = held.claimed_at
    if not runs:
        raise ClaimRefused("not_fulfilled", f"bundle {bundle_digest} is not published with runs signed by "
                           f"{held.runner}; upload it (POST /api/v1/bundles) before marking the replica done")
    workload = as_kind(parse_manifest(request.workload, f"request {request.id} workload"), WorkloadCase)
    for run in runs:
        if problem := _unanswered(run, request, digest_of(workload), workload.spec.operation, claimed_at):
            raise ClaimRefused("not_fulfilled", f"bundle {bundle_digest} does not fulfil request {request.id}: "
                               f"run {run.run_id} {problem}")


def _unanswered(run: BundleRun, request: MeasurementRequest, workload: str, operation: str,
                claimed_at: datetime) -> str | None:
    gpu = registry.gpu_for_product(run.gpu_product or "")
    if run.workload != workload or run.operation != operation:
        return f"measured workload {run.workload}, not the request's {workload} ({request.operation})"
    if gpu is None or gpu.slug != request.gpu:
        return f"ran on {run.gpu_product or 'an unnamed GPU'}, not on the requested {request.gpu}"
    if run.observed_at < claimed_at - CLOCK_SKEW:
        return (f"was observed at {run.observed_at:%Y-%m-%dT%H:%M:%SZ}, before the claim "
                f"({claimed_at:%Y-%m-%dT%H:%M:%SZ})")
    if run.published_at < claimed_at:
        return (f"was published at {run.published_at:%Y-%m-%dT%H:%M:%SZ}, before the claim "
                f"({claimed_at:%Y-%m-%dT%H:%M:%SZ}); a completion carries runs measured for it")
    return None
