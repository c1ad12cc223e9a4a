"""Alembic migrations of the database schema; run them with ``reelfarm.shared.db.migrate(engine)``."""

HEAD = "0021"  # the last revision: a database at it needs nothing (a new revision's file moves it on)
