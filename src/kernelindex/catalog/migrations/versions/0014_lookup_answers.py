"""``lookup_answers``: finished answers of ``ki search`` and ``ki show operation`` read back by the CLI's fast
path with the standard library alone (``catalog/lookup_answers.py``, issue 46 item 4). Starts empty. And an
index of the runs by their observed instant: storing an answer looks up the runs nearest the staleness threshold
(two index reads instead of a scan of every run, ~65 ms on the full catalog).

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
    op.create_index("ix_runs_observed_at", "runs", ["observed_at"])


def downgrade() -> None:
    op.drop_index("ix_runs_observed_at", "runs")
    op.drop_index("ix_lookup_answers_version", "lookup_answers")
    op.drop_table("lookup_answers")
