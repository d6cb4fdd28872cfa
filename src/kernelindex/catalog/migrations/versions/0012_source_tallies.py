"""``source_tallies``: per source name, its runs, those it reported itself, its newest observation and newest
publication, kept by each publication transaction (``catalog/source_tallies.py``) so the home page's sources
block is one small read instead of two scans of the runs table. Filled here from the stored rows.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "source_tallies",
        sa.Column("source", sa.String(120), primary_key=True),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("reported_runs", sa.Integer, nullable=False),
        sa.Column("last_observed", sa.DateTime(timezone=True)),
        sa.Column("last_published", sa.DateTime(timezone=True)),
    )
    op.execute("INSERT INTO source_tallies (source, runs, reported_runs, last_observed, last_published) "
               "SELECT source, count(*), sum(CASE WHEN runner_key_id IS NULL THEN 1 ELSE 0 END), max(observed_at), "
               "NULL FROM runs GROUP BY source")
    op.execute("UPDATE source_tallies SET last_published = "
               "(SELECT max(at) FROM publications WHERE publications.source = source_tallies.source)")
    op.execute("INSERT INTO source_tallies (source, runs, reported_runs, last_observed, last_published) "
               "SELECT source, 0, 0, NULL, max(at) FROM publications "
               "WHERE source NOT IN (SELECT source FROM source_tallies) GROUP BY source")


def downgrade() -> None:
    op.drop_table("source_tallies")
