"""Shared foundations of the service: config, database, storage, ids, clock and keys.

Imports nothing of ours; ``studio``, ``farm`` and ``api`` build on it. Submodules are imported
explicitly (``from reelfarm.shared.config import Settings``) so that importing one does not pull in
SQLAlchemy or boto3 where they are not needed.
"""
