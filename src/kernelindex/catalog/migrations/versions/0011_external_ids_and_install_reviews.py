"""Issue 51's last two holes. An index on the runs' external ids: a bundle's run may not reuse the external id a
stored run of its source holds (``catalog/publish.py``, ``_check_external_ids``), checked at every bundle's
publication. And ``install_reviews``: the install recipe of an implementation line that a runner's uploaded bundle
proposed is held until a curator approves it (``catalog/curation.py``).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_external_id", "runs", ["external_id"])
    op.create_table(
        "install_reviews",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("line", sa.String(200), nullable=False),
        sa.Column("operation", sa.String(71), nullable=False),
        sa.Column("act", sa.String(20), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_install_reviews_line", "install_reviews", ["line"])


def downgrade() -> None:
    op.drop_index("ix_install_reviews_line", table_name="install_reviews")
    op.drop_table("install_reviews")
    op.drop_index("ix_runs_external_id", table_name="runs")
