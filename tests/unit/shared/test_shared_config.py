"""Settings.from_env: defaults, parsing, validation and the generated secret."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from reelfarm.shared.config import MIN_SECRET_LENGTH, RateLimit, Settings, load_or_create_secret, parse_storage_url
from reelfarm.shared.errors import ConfigError

SECRET = "s" * MIN_SECRET_LENGTH


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"REELFARM_DATA_DIR": str(tmp_path), **{f"REELFARM_{k.upper()}": v for k, v in values.items()}}


def test_defaults_derive_from_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, secret_key=SECRET))

    assert settings.data_dir == tmp_path.resolve()
    assert settings.database_url == f"sqlite:///{tmp_path.resolve()}/reelfarm.db"
    assert settings.storage_url == f"file://{tmp_path.resolve()}/files"
    assert settings.redis_url is None
    assert settings.public_url == "http://127.0.0.1:8000"
    assert settings.fetch_allow_private is False
    assert settings.max_body_bytes == 2 * 1024 * 1024
    assert settings.log_level == "INFO"
    assert settings.retention_days == 30
    assert (settings.llm_base_url, settings.llm_model, settings.llm_api_key) == (None, None, None)
    assert dict(settings.rate_limits) == {"pro": RateLimit(600), "crypto_pro": RateLimit(600),
                                          "agency": RateLimit(3000)}


def test_default_data_dir_is_dot_reelfarm_in_the_working_directory(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"REELFARM_SECRET_KEY": SECRET})
    assert settings.data_dir == tmp_path.resolve() / ".reelfarm"


def test_reads_os_environ_when_no_mapping_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REELFARM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("REELFARM_SECRET_KEY", SECRET)
    monkeypatch.setenv("REELFARM_PUBLIC_URL", "https://videos.example.com/")
    assert Settings.from_env().public_url == "https://videos.example.com"


def test_every_variable_is_read(tmp_path: Path) -> None:
    settings = Settings.from_env(env(
        tmp_path, secret_key=SECRET, database_url="postgresql+psycopg2://rf@db/rf",
        redis_url="redis://cache:6379/0", storage_url="s3://bucket/prefix",
        s3_endpoint_url="http://minio:9000", public_url="https://api.example.com",
        fetch_allow_private="1", rate_limit_pro="10", rate_limit_crypto_pro="20",
        rate_limit_agency="30", max_body_bytes="1024", llm_base_url="https://llm.example.com/v1",
        llm_model="small", llm_api_key="sk-test", log_level="debug", retention_days="7", trusted_proxies="2",
        metrics_token="t" * 40, caps="spare"))

    assert settings.database_url == "postgresql+psycopg2://rf@db/rf"
    assert settings.redis_url == "redis://cache:6379/0"
    assert settings.storage_url == "s3://bucket/prefix"
    assert settings.s3_endpoint_url == "http://minio:9000"
    assert settings.public_url == "https://api.example.com"
    assert settings.fetch_allow_private is True
    assert [settings.rate_limits[p].limit for p in ("pro", "crypto_pro", "agency")] == [10, 20, 30]
    assert settings.max_body_bytes == 1024
    assert (settings.llm_base_url, settings.llm_model, settings.llm_api_key) == (
        "https://llm.example.com/v1", "small", "sk-test")
    assert settings.log_level == "DEBUG"
    assert settings.retention_days == 7
    assert settings.trusted_proxies == 2
    assert settings.metrics_token == "t" * 40
    assert settings.caps == "spare"
    assert settings.secret_key == SECRET


def test_secrets_stay_out_of_repr(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, secret_key=SECRET, llm_api_key="sk-very-secret"))
    assert SECRET not in repr(settings)
    assert "sk-very-secret" not in repr(settings)


def test_empty_variables_count_as_unset(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, secret_key=SECRET, redis_url="", rate_limit_pro=" "))
    assert settings.redis_url is None
    assert settings.rate_limits["pro"].limit == 600


def test_rate_limit_policy_and_plans_without_api(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, secret_key=SECRET))
    assert settings.rate_limit_for("pro") == RateLimit(600, 60)
    assert settings.rate_limits["agency"].policy == "3000;w=60"
    assert settings.rate_limit_for("starter") is None


@pytest.mark.parametrize(("name", "value"), [
    ("DATABASE_URL", "mysql://db/rf"),
    ("DATABASE_URL", "not a url"),
    ("REDIS_URL", "http://cache"),
    ("STORAGE_URL", "ftp://files"),
    ("STORAGE_URL", "s3://"),
    ("STORAGE_URL", "file://"),
    ("S3_ENDPOINT_URL", "minio:9000"),
    ("PUBLIC_URL", "127.0.0.1:8000"),
    ("FETCH_ALLOW_PRIVATE", "maybe"),
    ("RATE_LIMIT_PRO", "ten"),
    ("RATE_LIMIT_AGENCY", "0"),
    ("MAX_BODY_BYTES", "-1"),
    ("LLM_BASE_URL", "llm.local"),
    ("LOG_LEVEL", "LOUD"),
    ("RETENTION_DAYS", "0"),
    ("RETENTION_DAYS", "-30"),
    ("RETENTION_DAYS", "36501"),
    ("SECRET_KEY", "short"),
    ("TRUSTED_PROXIES", "-1"),
    ("TRUSTED_PROXIES", "all"),
    ("METRICS_TOKEN", "short"),
    ("CAPS", "loose"),
])
def test_malformed_values_name_the_variable(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(tmp_path, **{"secret_key": SECRET, name.lower(): value}))
    assert raised.value.variable == f"REELFARM_{name}"
    assert f"REELFARM_{name}" in str(raised.value)


def test_error_messages_do_not_echo_secrets_or_urls(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(tmp_path, database_url="mysql://user:hunter2@db/rf", secret_key=SECRET))
    assert "hunter2" not in str(raised.value)


def test_secret_is_generated_once_with_owner_only_permissions(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = Settings.from_env({"REELFARM_DATA_DIR": str(data_dir)})
    second = Settings.from_env({"REELFARM_DATA_DIR": str(data_dir)})

    secret_file = data_dir / "secret_key"
    assert first.secret_key == second.secret_key
    assert len(first.secret_key) >= 64  # token_urlsafe(48)
    assert secret_file.read_text().strip() == first.secret_key
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert [p.name for p in data_dir.iterdir()] == ["secret_key"]  # no temporary files left


def test_configured_secret_writes_no_file(tmp_path: Path) -> None:
    Settings.from_env(env(tmp_path, secret_key=SECRET))
    assert not (tmp_path / "secret_key").exists()


def test_malformed_setting_leaves_no_secret_behind(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Settings.from_env(env(tmp_path, log_level="LOUD"))
    assert not (tmp_path / "secret_key").exists()


def test_a_truncated_secret_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret_key").write_text("abc\n")
    with pytest.raises(ConfigError) as raised:
        load_or_create_secret(tmp_path)
    assert raised.value.variable == "REELFARM_SECRET_KEY"


def test_a_secret_written_by_another_process_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes starting at once: the one that links its file second reads the winner's."""
    real_link = os.link

    def link_after_rival(src: str, dst: str) -> None:
        Path(dst).write_text("r" * 64 + "\n")  # the rival got there first
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_rival)
    assert load_or_create_secret(tmp_path) == "r" * 64
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]


@pytest.mark.parametrize(("url", "parsed"), [
    ("file:///srv/files", ("file", "/srv/files", "")),
    ("file://./files", ("file", "./files", "")),
    ("s3://bucket", ("s3", "bucket", "")),
    ("s3://bucket/a/b/", ("s3", "bucket", "a/b")),
])
def test_parse_storage_url(url: str, parsed: tuple[str, str, str]) -> None:
    assert parse_storage_url(url) == parsed
