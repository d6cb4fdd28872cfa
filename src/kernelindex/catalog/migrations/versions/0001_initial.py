"""Initial catalog schema: objects, runs, corrections, trust, publications.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

DIGEST = sa.String(71)
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    _create_objects_and_runs()
    _create_lifecycle_tables()


def _create_objects_and_runs() -> None:
    op.create_table(
        "objects",
        sa.Column("digest", DIGEST, primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False, index=True),
        sa.Column("name", sa.String(200), index=True),
        sa.Column("operation", DIGEST, index=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("digest", DIGEST, primary_key=True),
        sa.Column("run_id", sa.String(16), nullable=False, unique=True),
        sa.Column("operation", DIGEST, nullable=False, index=True),
        sa.Column("implementation", DIGEST, nullable=False, index=True),
        sa.Column("workload", DIGEST, nullable=False, index=True),
        sa.Column("protocol", DIGEST, nullable=False),
        sa.Column("environment", DIGEST, nullable=False, index=True),
        sa.Column("cohort_key", DIGEST, nullable=False, index=True),
        sa.Column("status", sa.String(40), nullable=False),
        sa.Column("median_ns", sa.BigInteger),
        sa.Column("p20_ns", sa.BigInteger),
        sa.Column("p80_ns", sa.BigInteger),
        sa.Column("observed_at", TS, nullable=False),
        sa.Column("source", sa.String(120), nullable=False, index=True),
        sa.Column("external_id", sa.String(500), nullable=False),
        sa.Column("runner_key_id", DIGEST),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("published_at", TS, nullable=False),
    )
    op.create_index("ix_runs_operation_cohort", "runs", ["operation", "cohort_key"])


def _create_lifecycle_tables() -> None:
    op.create_table(
        "attestations",
        sa.Column("run", DIGEST, primary_key=True),
        sa.Column("bundle_digest", DIGEST, nullable=False),
        sa.Column("key_id", DIGEST, nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("checked_at", TS, nullable=False),
    )
    op.create_table(
        "retractions",
        sa.Column("digest", DIGEST, primary_key=True),
        sa.Column("run", DIGEST, nullable=False, index=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("at", TS, nullable=False),
    )
    op.create_table(
        "supersessions",
        sa.Column("digest", DIGEST, primary_key=True),
        sa.Column("new", DIGEST, nullable=False, index=True),
        sa.Column("old", DIGEST, nullable=False, index=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("at", TS, nullable=False),
    )
    op.create_table(
        "trusted_runners",
        sa.Column("key_id", DIGEST, primary_key=True),
        sa.Column("digest", DIGEST, nullable=False, unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("trusted_by", sa.String(200), nullable=False),
        sa.Column("at", TS, nullable=False),
    )
    op.create_table(
        "publications",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(120), nullable=False),
        sa.Column("snapshot_digest", DIGEST),
        sa.Column("locator", sa.Text),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("counts", sa.Text, nullable=False),
    )
    state = op.create_table(
        "catalog_state",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("version", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(state, [{"id": 1, "version": 0}])


def downgrade() -> None:
    for table in (
        "catalog_state",
        "publications",
        "trusted_runners",
        "supersessions",
        "retractions",
        "attestations",
        "runs",
        "objects",
    ):
        op.drop_table(table)
