"""Signed claims: the nonce of every accepted claim, so a captured claim signature is never replayed.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "claim_nonces",
        sa.Column("key_id", sa.String(71), primary_key=True),
        sa.Column("nonce", sa.String(64), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("claim_nonces")
