"""The runners' side of measurement requests: claim a replica, renew its lease, complete it. Each returns
its answer or a Problem and writes its audit line through the door's ``Audit``: a claim or completion the
runner did not prove is recorded as refused, a lost lease or a malformed completion is not (the runner
proved nothing either way)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.services.audit import Audit
from kernelindex.services.problems import Answer, Problem
from kernelindex.trust.claims import ClaimRefused, check_claim, check_fulfils


def claim(catalog: Catalog, now: datetime, body: dict[str, Any], *, lease_seconds: float,
          audit: Audit) -> Answer | Problem | None:
    """The oldest claimable replica for the body's GPU that this runner key has not served, leased for
    ``lease_seconds``; None when there is none. ``now`` is the display clock of the answer; the claim's
    signature is checked against real time."""
    try:
        runner = check_claim(catalog, body, datetime.now(UTC))
    except ClaimRefused as exc:
        audit("request.claim", f"refused: {exc.code}", body["runner_key_id"])
        return Problem(exc.code, str(exc))
    held = stored.claim(catalog, gpu=body["gpu"], runner_key_id=body["runner_key_id"], runner_name=runner,
                        lease_seconds=lease_seconds, operations=body.get("operations"))
    if held is None:
        return None
    audit("request.claim", "claimed", held.request.digest,
          {"request": held.request.id, "replica": held.replica, "runner": runner})
    return {"request": held.request.to_json(now), "replica": held.replica, "runner": runner, "token": held.token,
            "lease_until": held.lease_until.isoformat(), "lease_seconds": lease_seconds}


def heartbeat(catalog: Catalog, request_id: int, replica: int, token: str, *, lease_seconds: float) -> Answer | Problem:
    """The replica's lease renewed for ``lease_seconds``, or ``lease_lost`` when the token no longer holds it."""
    try:
        until = stored.heartbeat(catalog, request_id, replica, token, lease_seconds)
    except stored.LeaseLost as exc:
        return Problem("lease_lost", str(exc))
    return {"lease_until": until.isoformat(), "lease_seconds": lease_seconds}


def complete(catalog: Catalog, now: datetime, request_id: int, replica: int, body: dict[str, Any], *,
             audit: Audit) -> Answer | Problem:
    """Mark a held replica done (``bundle``: an uploaded bundle that fulfils the request) or failed
    (``failure``: why); the request as it stands after."""
    bundle, failure = body.get("bundle"), body.get("failure")
    if (bundle is None) == (failure is None):
        return Problem("invalid_request", "give exactly one of bundle (done) or failure (failed)",
                       ({"field": "bundle", "in": "body", "message": "exactly one of bundle, failure"},))
    try:
        done = stored.finish(catalog, request_id, replica, body["token"], bundle_digest=bundle, failure=failure,
                             verify=partial(check_fulfils, catalog, bundle or ""))
    except stored.LeaseLost as exc:
        return Problem("lease_lost", str(exc))
    except ClaimRefused as exc:
        audit("request.complete", f"refused: {exc.code}", bundle,
              {"request": request_id, "replica": replica, "reason": str(exc)[:500]})
        return Problem(exc.code, str(exc), ({"field": "bundle", "in": "body", "message": str(exc)},))
    except ValueError as exc:
        return Problem("invalid_request", str(exc), ({"field": "bundle", "in": "body", "message": str(exc)},))
    audit("request.complete", "done" if bundle else "failed", bundle or done.digest,
          {"request": request_id, "replica": replica, "failure": failure})
    return done.to_json(now)
