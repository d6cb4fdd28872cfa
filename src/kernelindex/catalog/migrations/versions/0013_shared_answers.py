"""``shared_answers``: a site-wide answer of ``ki serve`` computed once per catalog version by the worker that
claimed it and read by the other workers (``catalog/shared_answers.py``, issue 50). Starts empty.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shared_answers",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("stamp", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
        sa.Column("headers", sa.Text),
        sa.Column("body", sa.LargeBinary),
    )
    op.create_index("ix_shared_answers_version", "shared_answers", ["version"])


def downgrade() -> None:
    op.drop_index("ix_shared_answers_version", "shared_answers")
    op.drop_table("shared_answers")
