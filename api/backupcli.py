"""``reelfarm admin backup FILE`` and ``reelfarm admin restore FILE``: the embedded default's backups
(``reelfarm.shared.backup`` says what an archive holds and why it is consistent while serving)."""
from __future__ import annotations

import json
from pathlib import Path

import click


def _known_revisions() -> frozenset[str]:
    from alembic.script import ScriptDirectory

    from reelfarm.shared.db import alembic_config

    return frozenset(script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions())


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def backup_command(file: Path, as_json: bool) -> None:
    """Write the embedded database, files and secret into FILE (a .tar.gz, mode 0600), safely while
    `reelfarm serve` runs. A farm (PostgreSQL, S3) is backed up with their own tools (README)."""
    from reelfarm.shared.backup import SECRET, BackupError, files_root, sqlite_path, write_backup
    from reelfarm.shared.config import ConfigError, Settings

    try:
        settings = Settings.from_env()
        done = write_backup(file, sqlite_path(settings.database_url), files_root(settings.storage_url),
                            settings.data_dir / SECRET)
    except (BackupError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from exc
    _emit(as_json, {"file": str(file.resolve()), "revision": done.revision, "created_at": done.created_at,
                    "files": done.files},
          f"backed up the database (revision {done.revision}) and {done.files} files into {file}")


@click.command("restore")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The data folder to restore into (default: REELFARM_DATA_DIR, else ./.reelfarm).")
@click.option("--force", is_flag=True, help="Replace the database, files and secret of a folder that holds data.")
@click.option("--json", "as_json", is_flag=True)
def restore_command(file: Path, data_dir: Path | None, force: bool, as_json: bool) -> None:
    """Put a backup made by `reelfarm admin backup` into a data folder (refusing one that holds data
    unless --force), then bring its database up to this release's schema. Stop the server first."""
    from alembic.runtime.migration import MigrationContext

    from reelfarm.shared.backup import DATABASE, BackupError, restore_backup
    from reelfarm.shared.config import data_dir_from_env
    from reelfarm.shared.db import file_engine, migrate

    folder = data_dir.resolve() if data_dir is not None else data_dir_from_env()
    try:
        done = restore_backup(file, folder, force=force, known=_known_revisions())
    except BackupError as exc:
        raise click.ClickException(str(exc)) from exc
    engine = file_engine(folder / DATABASE)
    try:
        migrate(engine)
        with engine.connect() as conn:
            revision = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    _emit(as_json, {"data_dir": str(folder), "backup_revision": done.revision, "revision": revision,
                    "created_at": done.created_at, "files": done.files},
          f"restored the backup of {done.created_at} ({done.files} files) into {folder}; "
          f"database at revision {revision} (the backup's: {done.revision})")


def _emit(as_json: bool, data: dict[str, object], text: str) -> None:
    click.echo(json.dumps(data) if as_json else text)


COMMANDS = (backup_command, restore_command)  # of `reelfarm admin` (reelfarm.api.cli)
