"""What each catalog version changed: the operations a publication touched, so readers reload only
those (``readmodel/versions.py``). A row with no operation means every operation changed.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "catalog_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("version", sa.BigInteger, nullable=False, index=True),
        sa.Column("operation", sa.String(71)),
    )
    # Versions before this table are unknown: readers treat a version with no rows as "everything".


def downgrade() -> None:
    op.drop_table("catalog_changes")
