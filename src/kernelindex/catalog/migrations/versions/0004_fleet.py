"""The write path: API keys, the append-only audit log, measurement requests and their replicas.

Revision ID: 0004
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None

DIGEST = sa.String(71)
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(24), primary_key=True),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("scope", sa.String(40), nullable=False),
        sa.Column("salt", sa.String(64), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS),
        sa.Column("revoked_by", sa.String(200)),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", TS, nullable=False, index=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("api_key", sa.String(24)),
        sa.Column("scope", sa.String(40)),
        sa.Column("action", sa.String(60), nullable=False),
        sa.Column("object_digest", sa.String(120)),
        sa.Column("client", sa.String(100)),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("detail", sa.Text),
    )
    op.create_table(
        "measurement_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("digest", DIGEST, nullable=False, index=True),
        sa.Column("open_key", DIGEST, unique=True),
        sa.Column("operation", sa.String(120), nullable=False, index=True),
        sa.Column("gpu", sa.String(120), nullable=False, index=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("replicas", sa.Integer, nullable=False),
        sa.Column("askers", sa.Integer, nullable=False),
        sa.Column("state", sa.String(20), nullable=False, index=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "request_replicas",
        sa.Column("request_id", sa.Integer, primary_key=True),
        sa.Column("replica", sa.Integer, primary_key=True),
        sa.Column("state", sa.String(20), nullable=False, index=True),
        sa.Column("runner_key_id", DIGEST),
        sa.Column("runner_name", sa.String(200)),
        sa.Column("claim_token", sa.String(64)),
        sa.Column("lease_until", TS),
        sa.Column("claimed_at", TS),
        sa.Column("finished_at", TS),
        sa.Column("bundle_digest", DIGEST),
        sa.Column("failure", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False),
    )
    op.create_index("ux_request_replica_runner", "request_replicas", ["request_id", "runner_key_id"], unique=True)


def downgrade() -> None:
    for table in ("request_replicas", "measurement_requests", "audit_log", "api_keys"):
        op.drop_table(table)
