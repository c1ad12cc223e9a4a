"""Alembic migrations of the database schema; run them with ``reelfarm.shared.db.migrate(engine)``."""
