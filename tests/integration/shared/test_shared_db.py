"""Engine set-up and column behaviour on both backends."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, insert, select, text
from sqlalchemy.exc import IntegrityError, StatementError

from reelfarm.shared.db import make_engine, transaction
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import jobs, workspaces

NOW = datetime(2025, 6, 1, 12, 30, 15, 123456, tzinfo=UTC)


def add_workspace(conn: Connection, **values: object) -> str:
    workspace_id = new_id()
    row = {"id": workspace_id, "name": "w", "plan": "pro", "credits": 0, "created_at": NOW,
           "updated_at": NOW, **values}
    conn.execute(insert(workspaces).values(**row))
    return workspace_id


def test_sqlite_pragmas(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/nested/folder/reelfarm.db")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        engine.dispose()
    assert (tmp_path / "nested" / "folder" / "reelfarm.db").is_file()


def test_postgresql_engines_check_connections_before_use() -> None:
    engine = make_engine("postgresql+psycopg2://nobody@127.0.0.1:1/none")
    assert engine.pool._pre_ping


def test_timestamps_come_back_aware_utc(engine: Engine) -> None:
    plus_five = timezone(timedelta(hours=5))
    with transaction(engine) as conn:
        workspace_id = add_workspace(conn, created_at=NOW.astimezone(plus_five))
    with engine.connect() as conn:
        created = conn.execute(select(workspaces.c.created_at).where(workspaces.c.id == workspace_id)).scalar_one()
    assert created == NOW
    assert created.tzinfo == UTC


def test_naive_timestamps_are_refused(engine: Engine) -> None:
    with pytest.raises(StatementError, match="naive datetime"), transaction(engine) as conn:
        add_workspace(conn, created_at=datetime(2025, 1, 1))


def test_json_none_is_sql_null(engine: Engine) -> None:
    with transaction(engine) as conn:
        workspace_id = add_workspace(conn)
        job_id = new_id()
        conn.execute(insert(jobs).values(id=job_id, workspace_id=workspace_id, kind="stills",
                                         status="queued", params={"times": [1.5]}, result=None,
                                         created_at=NOW))
    with engine.connect() as conn:
        is_null = conn.execute(select(jobs.c.result.is_(None), jobs.c.params)
                               .where(jobs.c.id == job_id)).one()
    assert is_null == (True, {"times": [1.5]})


def test_constraints_are_enforced(engine: Engine) -> None:
    with pytest.raises(IntegrityError), transaction(engine) as conn:
        add_workspace(conn, plan="platinum")
    with pytest.raises(IntegrityError), transaction(engine) as conn:
        add_workspace(conn, credits=-1)
    with pytest.raises(IntegrityError), transaction(engine) as conn:  # foreign key, SQLite too
        conn.execute(insert(jobs).values(id=new_id(), workspace_id=new_id(), kind="stills",
                                         status="queued", params={}, created_at=NOW))


def test_transaction_rolls_back_on_error(engine: Engine) -> None:
    with pytest.raises(RuntimeError), transaction(engine) as conn:
        workspace_id = add_workspace(conn)
        raise RuntimeError("boom")
    with engine.connect() as conn:
        assert conn.execute(select(workspaces.c.id).where(workspaces.c.id == workspace_id)).first() is None


def test_concurrent_read_modify_write_transactions_do_not_lose_updates(engine: Engine) -> None:
    """Each writer reads the balance then writes it back + 1; none may fail or be lost."""
    with transaction(engine) as conn:
        workspace_id = add_workspace(conn)
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            for _ in range(5):
                with transaction(engine) as conn:
                    query = select(workspaces.c.credits).where(workspaces.c.id == workspace_id)
                    credits = conn.execute(query.with_for_update()).scalar_one()
                    conn.execute(workspaces.update().where(workspaces.c.id == workspace_id)
                                 .values(credits=credits + 1))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=bump) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT credits FROM workspaces WHERE id = :id"),
                            {"id": workspace_id}).scalar_one() == 30
