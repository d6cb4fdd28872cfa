"""``lookup_answers``: finished answers of ``ki search`` and ``ki show operation`` read back by the CLI's fast
path with the standard library alone (``catalog/lookup_answers.py``, issue 46 item 4). Starts empty.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lookup_answers",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("form", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("stale_below", sa.String(32)),
        sa.Column("fresh_from", sa.String(32)),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_lookup_answers_version", "lookup_answers", ["version"])


def downgrade() -> None:
    op.drop_index("ix_lookup_answers_version", "lookup_answers")
    op.drop_table("lookup_answers")
