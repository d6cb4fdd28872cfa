"""Each stored operation summary keeps its measured workload cases apart from its body, read only by the
workloads listing (``readmodel/listings.py``), so the catalog-wide listings never rank every run.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The rows already stored are of an older form (the code fingerprint moved): never read again, so an
    # empty list stands in for theirs until they are replaced.
    op.add_column("operation_summaries", sa.Column("workloads", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("operation_summaries") as batch:
        batch.drop_column("workloads")
