"""Alembic migrations of the database schema; run them with ``shared.db.migrate(engine)``."""
