"""Catalog storage: SQLAlchemy tables, Alembic migrations, the publication transaction, reads."""
