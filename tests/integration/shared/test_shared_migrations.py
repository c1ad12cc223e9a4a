"""Alembic migrations on SQLite and PostgreSQL: they build exactly ``reelfarm.shared.tables``."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.operations import Operations
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, String, inspect

from reelfarm.shared.clock import FixedClock
from reelfarm.shared.db import alembic_config, downgrade, make_engine, migrate, schema_change, transaction
from reelfarm.shared.errors import MigrationError
from reelfarm.shared.migrations import HEAD
from reelfarm.shared.repos.brand_kits import list_brand_kits
from reelfarm.shared.repos.workspaces import create_workspace
from reelfarm.shared.tables import metadata


def schema_differences(engine: Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                         "compare_server_default": True})
        return list(compare_metadata(context, metadata))


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def test_migrations_build_the_declared_schema(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        migrate(engine)
        assert schema_differences(engine) == []
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert current_revision(engine) == head == HEAD == "0021"
        assert set(inspect(engine).get_table_names()) == set(metadata.tables) | {"alembic_version"}
    finally:
        engine.dispose()


def test_migrate_is_idempotent_and_reversible(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        migrate(engine)
        migrate(engine)
        downgrade(engine, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        migrate(engine)
        assert schema_differences(engine) == []
    finally:
        engine.dispose()


AT_HEAD_PROBE = """
import sys
from reelfarm.shared.db import make_engine, migrate
engine = make_engine(sys.argv[1])
migrate(engine)
print(sorted(m for m in sys.modules if m.split(".")[0] == "alembic"))
"""


def test_a_database_at_head_is_left_without_loading_alembic_and_an_older_one_is_upgraded(empty_db_url: str) -> None:
    """Every server, node and command migrates as it starts; at the head that costs one query."""
    def alembic_modules_of_a_process_migrating() -> str:
        return subprocess.run([sys.executable, "-c", AT_HEAD_PROBE, empty_db_url], capture_output=True, text=True,
                              check=True, timeout=120).stdout.strip()

    assert alembic_modules_of_a_process_migrating() != "[]"  # a new database: Alembic builds it
    assert alembic_modules_of_a_process_migrating() == "[]"  # at the head: nothing of Alembic loaded
    engine = make_engine(empty_db_url)
    try:
        downgrade(engine, "0020")
        assert current_revision(engine) == "0020"
        assert alembic_modules_of_a_process_migrating() != "[]"
        assert current_revision(engine) == HEAD and schema_differences(engine) == []
    finally:
        engine.dispose()


def migrate_together(engines: list[Engine]) -> list[BaseException]:
    """Each engine migrates in a thread of its own, all at once (processes booting together); what they raised."""
    errors: list[BaseException] = []

    def run(engine: Engine) -> None:
        try:
            migrate(engine)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted by the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_processes_starting_together_migrate_once(empty_db_url: str) -> None:
    """An API process and a worker booting at the same moment both call migrate()."""
    engines = [make_engine(empty_db_url) for _ in range(4)]
    errors = migrate_together(engines)
    try:
        assert errors == []
        assert current_revision(engines[0]) == "0021"
    finally:
        for engine in engines:
            engine.dispose()


def sqlite_with_a_workspace(tmp_path: Path) -> tuple[Engine, str]:
    engine = make_engine(f"sqlite:///{tmp_path}/batch.db")
    migrate(engine)
    with transaction(engine) as conn:
        workspace_id = create_workspace(conn, FixedClock(), name="Acme", plan="pro", brand_tokens={}).id
    return engine, workspace_id


def test_sqlite_table_copies_in_migrations_keep_referring_rows(tmp_path: Path) -> None:
    """Batch mode drops and recreates a table; with foreign keys on, children would be deleted."""
    engine, workspace_id = sqlite_with_a_workspace(tmp_path)
    try:
        with schema_change(engine) as conn:
            operations = Operations(MigrationContext.configure(conn))
            with operations.batch_alter_table("workspaces", recreate="always") as batch:
                batch.alter_column("name", type_=String(300))
        with engine.connect() as conn:
            assert len(list_brand_kits(conn, workspace_id)) == 1
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1  # back on afterwards
    finally:
        engine.dispose()


def test_a_schema_change_that_breaks_foreign_keys_is_rolled_back(tmp_path: Path) -> None:
    engine, _ = sqlite_with_a_workspace(tmp_path)
    try:
        with pytest.raises(MigrationError), schema_change(engine) as conn:
            conn.exec_driver_sql("DELETE FROM workspaces")  # leaves its brand kit orphaned
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM workspaces").scalar() == 1
    finally:
        engine.dispose()
