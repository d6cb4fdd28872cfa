"""Each stored operation summary keeps the counts the search chooser weighs (eligible runs, those per GPU,
leaderboard score runs per GPU) apart from its body, so a query naming ~700 operations reads a few bytes
of each rather than every body (``readmodel/summaries.py``: ``counts_of``).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The rows already stored are of an older form (the code fingerprint moved): never read again, so an
    # empty object stands in for theirs until they are replaced.
    op.add_column("operation_summaries", sa.Column("counts", sa.Text, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("operation_summaries") as batch:
        batch.drop_column("counts")
