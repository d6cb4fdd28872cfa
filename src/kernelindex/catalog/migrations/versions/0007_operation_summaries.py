"""What the site-wide pages read of each operation, stored per version of its data, so a worker's home,
records and GPU pages never load every run (``readmodel/summaries.py``).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operation_summaries",
        sa.Column("operation", sa.String(200), primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("form", sa.String(64), primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("cohorts", sa.Text, nullable=False),
    )
    # Empty at first: the read model computes each operation's summary on first read and writes it back.


def downgrade() -> None:
    op.drop_table("operation_summaries")
