"""Backups of the embedded default: its SQLite database, its local files and its secret, in one archive.

``reelfarm admin backup FILE`` writes a gzip-compressed tar archive; ``reelfarm admin restore FILE``
puts one back into a data folder. A farm is backed up with its own services' tools instead
(PostgreSQL's ``pg_dump`` or a base backup with WAL archiving; object storage versioning): the
README's operator section says how.

**Consistent while serving.** The database is copied first, with SQLite's online backup API
(``sqlite3.Connection.backup``, in one step: one read transaction, which in WAL mode never blocks
the server's writers), into a snapshot of one moment. The files are copied after it. Every file is
written once under its key and replaced only by a file of the same content (a retried chunk, a
re-rendered poster: the storage renames a finished write over the key, ``LocalStorage``), so every
file a row of the snapshot names already exists when the files are copied: the archive holds it.
Files written after the snapshot come along too, unnamed by any row, harmless. A file deleted
between the two (a retention sweep deleting an expired render) is missing from the archive, as it
would be from the server a moment later. Unfinished writes (``.<name>.*`` beside their key) are
left out.

**The archive** (format version ``FORMAT_VERSION``), in this order:

- ``manifest.json``: ``{"format": "reelfarm-backup", "version": 1, "created_at", "revision"}``, the
  database's migration revision;
- ``reelfarm.db``: the database snapshot;
- ``secret_key``: the data folder's generated secret, when it has one (signed download URLs stay
  valid). The archive is written with mode 0600: it holds the secret and every workspace's data;
- ``files/...``: the local files, by key.

**Restoring** writes the embedded layout of a data folder (``reelfarm.db``, ``files/``,
``secret_key``) and refuses a folder that holds anything unless forced, then replaces what it
restores (the database with its WAL files, the files, the secret). It refuses an archive of another
format or version, one with a member outside that layout, and one whose database is at a migration
revision this code does not know (made by a newer release); then it migrates the restored
database to the code's head. Nothing is moved into the folder until the archive has been read
whole and its database checked (``PRAGMA integrity_check``).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from sqlalchemy.engine import make_url

FORMAT = "reelfarm-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DATABASE = "reelfarm.db"
FILES = "files"
SECRET = "secret_key"
RESTORED = (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", FILES, SECRET)


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why and what to do."""


@dataclass(frozen=True)
class Backup:
    """What an archive holds (its manifest, and the count of files written or read)."""

    revision: str | None
    created_at: str
    files: int


def sqlite_path(database_url: str) -> Path:
    """The file of an embedded database URL.

    Raises:
        BackupError: the database is not a SQLite file (a farm's PostgreSQL).
    """
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        raise BackupError("backup and restore are for the embedded default (SQLite and local files); back a "
                          "farm's PostgreSQL up with pg_dump or a base backup (see the README)")
    return Path(url.database).resolve()


def files_root(storage_url: str) -> Path:
    """The folder of a local storage URL (``file://...``).

    Raises:
        BackupError: the storage is object storage (a farm's S3).
    """
    if not storage_url.startswith("file://"):
        raise BackupError("backup and restore are for the embedded default (local files); keep a farm's object "
                          "storage with bucket versioning (see the README)")
    return Path(storage_url.removeprefix("file://")).resolve()


def database_revision(path: Path) -> str | None:
    """The migration revision a SQLite database file is at (None: never migrated)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.OperationalError:
            return None
    return str(row[0]) if row else None


def write_backup(target: Path, database: Path, files: Path, secret: Path | None) -> Backup:
    """Archive the embedded data (module docstring) into ``target``, written whole or not at all."""
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".reelfarm-backup-", dir=target.parent) as work:
        snapshot = Path(work) / DATABASE
        snapshot_database(database, snapshot)
        backup = Backup(database_revision(snapshot), datetime.now(UTC).isoformat(timespec="seconds"), 0)
        partial = Path(work) / "archive.tar.gz"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
            _add_bytes(archive, MANIFEST, json.dumps(
                {"format": FORMAT, "version": FORMAT_VERSION, "created_at": backup.created_at,
                 "revision": backup.revision}, indent=2).encode())
            archive.add(snapshot, DATABASE)
            if secret is not None and secret.is_file():
                archive.add(secret, SECRET)
            count = sum(1 for _ in _add_files(archive, files))
        os.replace(partial, target)
    return Backup(backup.revision, backup.created_at, count)


def snapshot_database(source: Path, target: Path) -> None:
    """A copy of the SQLite database ``source`` as of one moment, with the server writing to it."""
    if not source.is_file():
        raise BackupError(f"no database at {source}: nothing to back up")
    with closing(sqlite3.connect(source, timeout=30)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)  # pages=-1: every page in one step, one read transaction
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no WAL beside it


def restore_backup(archive_path: Path, data_dir: Path, *, force: bool = False,
                   known: frozenset[str] = frozenset()) -> Backup:
    """Put the archive back into ``data_dir`` (module docstring); ``known`` holds the migration
    revisions this code has. The caller migrates the database afterwards.

    Raises:
        BackupError: the folder holds data and ``force`` is false; the archive is not a backup of
            this format, reaches outside its layout, or is of a newer release; its database is damaged.
    """
    data_dir = data_dir.resolve()
    if not force and data_dir.exists() and any(data_dir.iterdir()):
        raise BackupError(f"{data_dir} is not empty: restore into an empty folder, or pass --force to replace "
                          "its database, files and secret")
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".reelfarm-restore-", dir=data_dir) as work:
        staged = Path(work)
        backup = _extract(archive_path, staged, known)
        for name in RESTORED:
            _remove(data_dir / name)
        for name in (DATABASE, SECRET, FILES):
            if (staged / name).exists():
                os.replace(staged / name, data_dir / name)
        (data_dir / FILES).mkdir(exist_ok=True)
        if (data_dir / SECRET).exists():
            os.chmod(data_dir / SECRET, 0o600)
    return backup


def _extract(archive_path: Path, staged: Path, known: frozenset[str]) -> Backup:
    try:
        with tarfile.open(archive_path, mode="r:gz") as archive:
            manifest, count = _extract_members(archive, staged, known)
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"{archive_path} is not a reelfarm backup (a gzip-compressed tar archive): {exc}") from exc
    if not (staged / DATABASE).is_file():
        raise BackupError(f"{archive_path} holds no database")
    _check_database(staged / DATABASE, manifest.revision)
    return Backup(manifest.revision, manifest.created_at, count)


def _extract_members(archive: tarfile.TarFile, staged: Path, known: frozenset[str]) -> tuple[Backup, int]:
    first = archive.next()
    if first is None or first.name != MANIFEST:
        raise BackupError(f"not a reelfarm backup: it does not begin with {MANIFEST}")
    manifest = _manifest(archive, first, known)
    count = 0
    for member in archive:  # from the first member again
        if member.name == MANIFEST:
            continue
        _check_member(member)
        archive.extract(member, staged, filter="data")
        count += member.isfile() and member.name.startswith(f"{FILES}/")
    return manifest, count


def _manifest(archive: tarfile.TarFile, member: tarfile.TarInfo, known: frozenset[str]) -> Backup:
    handle = archive.extractfile(member)
    try:
        data = json.loads(handle.read() if handle else b"")
    except ValueError as exc:
        raise BackupError(f"the backup's {MANIFEST} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupError("not a reelfarm backup: its manifest names another format")
    if data.get("version") != FORMAT_VERSION:
        raise BackupError(f"backup format version {data.get('version')!r}; this reelfarm reads version "
                          f"{FORMAT_VERSION}: restore it with the release that wrote it")
    revision = data.get("revision")
    if revision is not None and known and revision not in known:
        raise BackupError(f"the backup's database is at migration revision {revision}, which this reelfarm does "
                          "not know: it was made by a newer release; restore it with that release or a later one")
    return Backup(revision, str(data.get("created_at", "")), 0)


def _check_member(member: tarfile.TarInfo) -> None:
    path = PurePosixPath(member.name)
    top = path.parts[0] if path.parts else ""
    inside = not path.is_absolute() and ".." not in path.parts
    if not inside or not (member.isfile() or member.isdir()) or top not in (DATABASE, SECRET, FILES) or (
            top != FILES and len(path.parts) > 1):
        raise BackupError(f"the backup holds {member.name!r}, outside a reelfarm backup's layout: refused")


def _check_database(path: Path, revision: str | None) -> None:
    with closing(sqlite3.connect(path)) as conn:
        try:
            verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"the backup's database cannot be read: {exc}") from exc
    if verdict != "ok":
        raise BackupError(f"the backup's database is damaged: {verdict}")
    if database_revision(path) != revision:
        raise BackupError("the backup's database is not at the revision its manifest names")


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(datetime.now(UTC).timestamp())
    archive.addfile(info, io.BytesIO(data))


def _add_files(archive: tarfile.TarFile, root: Path) -> Iterator[str]:
    """Add every finished file under ``root`` as ``files/<key>``; yields the keys."""
    if not root.is_dir():
        return
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.startswith("."):  # a write in progress (``_atomic_write``)
                continue
            path = Path(folder) / name
            key = path.relative_to(root).as_posix()
            try:
                with open(path, "rb") as handle:
                    info = archive.gettarinfo(arcname=f"{FILES}/{key}", fileobj=handle)
                    archive.addfile(info, handle)
            except FileNotFoundError:  # deleted since the walk (retention): gone from the server too
                continue
            yield key


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
