"""SQLite writers of several processes queue on an flock beside the database file (shared.db)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from reelfarm.shared import db as shared_db
from reelfarm.shared.db import make_engine, transaction

ROOT = Path(__file__).resolve().parents[3]
TRY_LOCK = "import fcntl, os, sys; fcntl.flock(os.open(sys.argv[1], os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB)"


def lockable_by_another_process(path: Path) -> bool:
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(path)], capture_output=True, check=False).returncode == 0


def test_a_write_transaction_holds_the_file_lock_until_it_ends(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/x.db")
    lock = tmp_path / "x.db-writer"
    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
        assert lock.exists()
        assert not lockable_by_another_process(lock)
    assert lockable_by_another_process(lock)
    with engine.connect() as conn:  # reads take no lock of ours
        assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0
        assert lockable_by_another_process(lock)


def test_a_writer_in_another_process_waits_for_the_transaction_to_end(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    engine = make_engine(f"sqlite:///{db}")
    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from sqlalchemy import text
        from reelfarm.shared.db import make_engine, transaction
        with transaction(make_engine("sqlite:///{db}")) as conn:
            conn.execute(text("INSERT INTO t SELECT count(*) * 10 + 2 FROM t"))
    """)], cwd=ROOT)
    with transaction(engine) as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
        time.sleep(0.5)  # the other process is queued behind us meanwhile
    assert writer.wait(30) == 0
    with engine.connect() as conn:
        # it read our committed row (count 1), so it wrote after our commit, not beside it
        assert sorted(conn.execute(text("SELECT n FROM t")).scalars()) == [1, 12]


def test_a_forked_child_keeps_no_share_of_its_parents_lock(tmp_path: Path) -> None:
    """A parent killed while writing loses the lock, though the child it forked lives on."""
    db = tmp_path / "x.db"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, sys, time
        from reelfarm.shared.db import make_engine, transaction
        with transaction(make_engine("sqlite:///{db}")):
            child = os.fork()
            if child == 0:
                time.sleep(60)
                os._exit(0)
            print(child, flush=True)
            time.sleep(60)
    """)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        assert not lockable_by_another_process(tmp_path / "x.db-writer")
        parent.kill()
        parent.wait()
        os.kill(child, 0)  # still alive
        assert lockable_by_another_process(tmp_path / "x.db-writer")
    finally:
        parent.kill()
        os.kill(child, signal.SIGKILL)


def test_a_writer_goes_on_after_the_busy_timeout_when_the_lock_is_never_freed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file lock only orders writers: a stuck holder of it alone (not of SQLite's lock) costs
    a wait of the busy timeout, then SQLite decides."""
    engine = make_engine(f"sqlite:///{tmp_path}/x.db")
    lock = tmp_path / "x.db-writer"
    lock.touch()
    holder = subprocess.Popen([sys.executable, "-c", TRY_LOCK + "; print('held', flush=True); import time; "
                               "time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(shared_db, "SQLITE_BUSY_TIMEOUT_MS", 300)
        began = time.monotonic()
        with transaction(engine) as conn:
            conn.execute(text("CREATE TABLE t (n INTEGER)"))
        assert time.monotonic() - began >= 0.25
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0
    finally:
        holder.kill()
