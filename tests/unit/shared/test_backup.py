"""The embedded backup's archive: what restore refuses, and what it puts back where."""
from __future__ import annotations

import io
import json
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path

import pytest

from reelfarm.shared.backup import (
    BackupError,
    database_revision,
    files_root,
    restore_backup,
    sqlite_path,
    write_backup,
)

KNOWN = frozenset({"0001", "0002"})


def make_data(folder: Path, revision: str = "0002") -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "reelfarm.db"
    with closing(sqlite3.connect(database)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE alembic_version (version_num TEXT)")
        conn.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
        conn.execute("CREATE TABLE videos (id TEXT, workspace_id TEXT)")
        conn.execute("INSERT INTO videos VALUES ('v1', 'w1'), ('v2', 'w2')")
        conn.commit()
    files = folder / "files"
    (files / "w1" / "renders").mkdir(parents=True)
    (files / "w1" / "renders" / "r1.mp4").write_bytes(b"mp4 bytes")
    (files / "w2").mkdir()
    (files / "w2" / "a.png").write_bytes(b"png bytes")
    (files / "w2" / ".a.png.tmp123").write_bytes(b"half written")
    (folder / "secret_key").write_text("s" * 40)
    return database, files, folder / "secret_key"


def test_a_backup_restores_into_an_empty_folder_with_its_rows_files_and_secret(tmp_path: Path) -> None:
    archive = tmp_path / "b.tar.gz"
    done = write_backup(archive, *make_data(tmp_path / "src"))
    assert (done.revision, done.files) == ("0002", 2)
    assert archive.stat().st_mode & 0o777 == 0o600
    with tarfile.open(archive) as tar:
        assert tar.getnames()[:2] == ["manifest.json", "reelfarm.db"]
        assert not any(".tmp" in name for name in tar.getnames())

    target = tmp_path / "dst"
    restored = restore_backup(archive, target, known=KNOWN)
    assert (restored.revision, restored.files) == ("0002", 2)
    with closing(sqlite3.connect(target / "reelfarm.db")) as conn:
        assert conn.execute("SELECT id, workspace_id FROM videos ORDER BY id").fetchall() == [("v1", "w1"),
                                                                                           ("v2", "w2")]
    assert (target / "files" / "w1" / "renders" / "r1.mp4").read_bytes() == b"mp4 bytes"
    assert (target / "files" / "w2" / "a.png").read_bytes() == b"png bytes"
    assert (target / "secret_key").read_text() == "s" * 40
    assert (target / "secret_key").stat().st_mode & 0o777 == 0o600
    assert database_revision(target / "reelfarm.db") == "0002"


def test_restore_refuses_a_folder_with_data_unless_forced(tmp_path: Path) -> None:
    archive = tmp_path / "b.tar.gz"
    write_backup(archive, *make_data(tmp_path / "src"))
    target = tmp_path / "dst"
    target.mkdir()
    (target / "reelfarm.db").write_bytes(b"someone's data")
    (target / "files").mkdir()
    (target / "files" / "stale.png").write_bytes(b"old")
    with pytest.raises(BackupError, match="not empty"):
        restore_backup(archive, target, known=KNOWN)
    assert (target / "reelfarm.db").read_bytes() == b"someone's data"
    restore_backup(archive, target, force=True, known=KNOWN)
    assert database_revision(target / "reelfarm.db") == "0002"
    assert not (target / "files" / "stale.png").exists()


def test_restore_refuses_a_backup_of_a_newer_release(tmp_path: Path) -> None:
    archive = tmp_path / "b.tar.gz"
    write_backup(archive, *make_data(tmp_path / "src", revision="0099"))
    with pytest.raises(BackupError, match="newer release"):
        restore_backup(archive, tmp_path / "dst", known=KNOWN)
    assert not (tmp_path / "dst" / "reelfarm.db").exists()


def _archive(path: Path, manifest: dict[str, object], extra: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in {"manifest.json": json.dumps(manifest).encode(), **extra}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("manifest", "extra", "why"), [
    ({"format": "other", "version": 1}, {}, "another format"),
    ({"format": "reelfarm-backup", "version": 2}, {}, "version 2"),
    ({"format": "reelfarm-backup", "version": 1}, {"../escape": b"x"}, "outside"),
    ({"format": "reelfarm-backup", "version": 1}, {"etc/passwd": b"x"}, "outside"),
    ({"format": "reelfarm-backup", "version": 1}, {"reelfarm.db": b"not a database"}, "cannot be read|damaged"),
])
def test_restore_refuses_what_is_not_a_backup_of_this_format(tmp_path: Path, manifest: dict[str, object],
                                                            extra: dict[str, bytes], why: str) -> None:
    archive = _archive(tmp_path / "x.tar.gz", manifest, extra)
    with pytest.raises(BackupError, match=why):
        restore_backup(archive, tmp_path / "dst", known=KNOWN)
    assert not (tmp_path / "dst" / "reelfarm.db").exists() and not (tmp_path / "escape").exists()


def test_a_farm_is_not_backed_up_this_way() -> None:
    with pytest.raises(BackupError, match="pg_dump"):
        sqlite_path("postgresql+psycopg2://u@db/reelfarm")
    with pytest.raises(BackupError, match="versioning"):
        files_root("s3://bucket/prefix")
    assert sqlite_path("sqlite:////srv/data/reelfarm.db") == Path("/srv/data/reelfarm.db")
