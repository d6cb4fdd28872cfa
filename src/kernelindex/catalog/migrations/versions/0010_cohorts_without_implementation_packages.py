"""Cohort keys no longer count the implementation packages an environment had installed (``policy/cohorts.py``,
``IMPLEMENTATION_PACKAGES``): the runs stored under an environment whose key moves get their cohort key again.
Only those runs' bodies are read (a catalog's few runner environments with Liger-Kernel or Transformers).

Revision ID: 0010
Revises: 0009
"""

import json
from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

from kernelindex.domain.canonical import sha256_digest
from kernelindex.policy.cohorts import cohort_key, run_metric

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


# The two rules, frozen here as they were on each side of this revision (the policy may move on).
def _key_before(spec: dict) -> str:
    """The environment key of 0009's code: every software entry counted."""
    return sha256_digest({"hardware": spec["hardware"], "software": spec.get("software", {})})


def _key_after(spec: dict) -> str:
    """The environment key from 0010: Liger-Kernel and Transformers (implementation packages) not counted."""
    software = {k: v for k, v in spec.get("software", {}).items() if k not in ("liger-kernel", "transformers")}
    return sha256_digest({"hardware": spec["hardware"], "software": software})


def _recompute(key_of_environment: Callable[[dict], str]) -> None:
    conn = op.get_bind()
    moved = {}
    for digest, body in conn.execute(sa.text("SELECT digest, body FROM objects WHERE kind = 'ExecutionEnvironment'")):
        spec = json.loads(body)["spec"]
        if _key_before(spec) != _key_after(spec):
            moved[digest] = key_of_environment(spec)
    update = sa.text("UPDATE runs SET cohort_key = :key WHERE digest = :digest")
    for environment, key in moved.items():
        runs = conn.execute(sa.text("SELECT digest, workload, protocol, body FROM runs WHERE environment = :e"),
                            {"e": environment}).all()
        changes = [{"digest": digest, "key": cohort_key(workload, protocol, key, run_metric(json.loads(body)["spec"]))}
                   for digest, workload, protocol, body in runs]
        if changes:
            conn.execute(update, changes)


def upgrade() -> None:
    _recompute(_key_after)


def downgrade() -> None:
    _recompute(_key_before)
