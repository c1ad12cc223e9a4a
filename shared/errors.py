"""Errors raised by the shared package.

Hierarchy::

    SharedError                 base of everything shared/ raises on purpose
    ├── ConfigError             a REELFARM_* setting is malformed (.variable names it)
    ├── MigrationError          a schema change would leave the database inconsistent
    ├── StorageError            a storage backend failed or was misused
    │   ├── InvalidStorageKey   (also a ValueError) a key with "..", an absolute path, odd characters
    │   └── ObjectNotFound      (also a KeyError) nothing is stored under the key
    ├── NotFound                (also a KeyError) no row of .kind with .id (in that workspace)
    ├── InsufficientCredits     a debit would take a workspace's balance below zero
    └── DatabaseUnavailable     the database cannot be reached (``reelfarm.shared.db.database_outage``
                                recognises the driver's connection errors and wraps them)

Domain code raises these; ``api/`` maps them to statuses (NotFound -> 404,
InsufficientCredits -> 402, DatabaseUnavailable -> 503); ConfigError stops a process at start-up. None of them carries
HTTP knowledge. Arguments a caller should have validated (an unknown plan or video status)
raise a plain ValueError: they are bugs, not outcomes.
"""

from __future__ import annotations


class SharedError(Exception):
    """Base class of every error the shared package raises deliberately."""


class ConfigError(SharedError):
    """A setting read from the environment is malformed."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(f"{variable}: {message}")
        self.variable = variable


class MigrationError(SharedError):
    """A schema change would leave the database inconsistent; it was rolled back."""


class StorageError(SharedError):
    """A storage backend failed or was asked for something it cannot do."""


class InvalidStorageKey(StorageError, ValueError):
    """A storage key is not a safe relative path."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"invalid storage key {key!r}: {reason}")
        self.key = key


class ObjectNotFound(StorageError, KeyError):
    """Nothing is stored under the key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"no stored object under {self.key!r}"


class NotFound(SharedError, KeyError):
    """No row of the given kind has the given id (within the caller's workspace)."""

    def __init__(self, kind: str, id: str) -> None:
        super().__init__(kind, id)
        self.kind = kind
        self.id = id

    def __str__(self) -> str:
        return f"{self.kind} {self.id!r} not found"


class InsufficientCredits(SharedError):
    """A debit is larger than the workspace's balance; nothing was changed."""

    def __init__(self, workspace_id: str, balance: int, needed: int) -> None:
        super().__init__(f"workspace {workspace_id} has {balance} credits, {needed} needed")
        self.workspace_id = workspace_id
        self.balance = balance
        self.needed = needed



class DatabaseUnavailable(SharedError):
    """The database cannot be reached (refused, dropped, shutting down): an outage, not a bug."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the database cannot be reached: {reason}")
        self.reason = reason
