"""Settings from ``REELFARM_*`` environment variables; the only module that reads ``os.environ``.

Nothing reads settings at import time: ``Settings.from_env()`` is called once by each entry point
(``create_app``, the worker's ``main``, the CLI) and the result is passed down.

| variable | default |
|---|---|
| REELFARM_DATA_DIR | ``./.reelfarm`` (made absolute against the working directory) |
| REELFARM_DATABASE_URL | ``sqlite:///{data_dir}/reelfarm.db`` |
| REELFARM_DATABASE_POOLING | ``session``; ``transaction`` behind a pooler in transaction mode (PgBouncer's ``pool_mode = transaction``) |
| REELFARM_DATABASE_POOL_SIZE | unset: by process kind (``reelfarm.shared.db.pool_bound``); connections an API worker or a node keeps |
| REELFARM_DATABASE_POOL_TIMEOUT_SEC | ``10``: seconds a thread waits for a connection when its process's are all taken |
| REELFARM_REDIS_URL | unset: embedded executor, in-memory progress, rate limits in a file of the data dir |
| REELFARM_STORAGE_URL | ``file://{data_dir}/files``; or ``s3://bucket/prefix`` |
| REELFARM_S3_ENDPOINT_URL | unset: AWS; set for an S3-compatible service |
| REELFARM_SECRET_KEY | generated once into ``{data_dir}/secret_key`` (mode 0600), read back later |
| REELFARM_PUBLIC_URL | ``http://127.0.0.1:8000`` (``reelfarm serve``: its own address) |
| REELFARM_FETCH_ALLOW_PRIVATE | ``0`` |
| REELFARM_RATE_LIMIT_PRO / _CRYPTO_PRO / _AGENCY | 600 / 600 / 3000 requests per 60 s |
| REELFARM_MAX_BODY_BYTES | 2 MiB |
| REELFARM_LLM_BASE_URL / _MODEL / _API_KEY | unset: the built-in deterministic writer |
| REELFARM_APERTIUM | ``1``: the offline Apertium engine, when its command and language pairs are installed |
| REELFARM_LIBRETRANSLATE_URL / _API_KEY | unset: no LibreTranslate-compatible engine |
| REELFARM_DEEPL_API_KEY / REELFARM_DEEPL_URL | unset: no DeepL; the URL defaults by key (``:fx`` = free) |
| REELFARM_LOG_LEVEL | ``INFO`` |
| REELFARM_RETENTION_DAYS | ``30``: days dispatched events, webhook delivery attempts, unused kept segments and unused library assets are kept |
| REELFARM_GPU_QUEUE_WAIT_SEC | ``30``: seconds a chunk waits for a GPU node before CPU nodes may take it |
| REELFARM_CAPS | ``hold``: a workspace's cap holds even when places are idle; ``spare``: places nothing else takes go to workspaces at their caps |
| REELFARM_NODE_SETASIDE_AFTER | ``3``: chunk failures in a row, through a node's fault, that set it aside |
| REELFARM_NODE_COOLDOWN_SEC | ``600``: seconds a node set aside takes no work (unless an operator clears it) |
| REELFARM_CHUNK_STALL_SEC | ``120``: seconds without a new frame after which a node stops its chunk |
| REELFARM_TASK_PRIORITY | ``idle``: the embedded farm's task processes run at niceness +19 in SCHED_IDLE, on cores nothing else wants; ``low``: niceness +10 only; ``normal``: as the server |
| REELFARM_OPERATOR_KEYS | unset: no operator API; ``name:key,...`` (each key 32+ characters) opens ``/api/v1/operator`` to those keys |

An empty variable counts as unset.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from reelfarm.shared import plans
from reelfarm.shared.errors import ConfigError

T = TypeVar("T")

RATE_LIMIT_WINDOW_SEC = 60
DEFAULT_RATE_LIMITS: Mapping[str, int] = plans.DEFAULT_RATE_LIMITS
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
MIN_SECRET_LENGTH = 32
DEFAULT_RETENTION_DAYS = 30
DEFAULT_GPU_QUEUE_WAIT_SEC = 30.0
DEFAULT_NODE_SETASIDE_AFTER = 3  # reelfarm.farm.services.nodehealth's policy
DEFAULT_NODE_COOLDOWN_SEC = 600.0
DEFAULT_CHUNK_STALL_SEC = 120.0
TASK_PRIORITIES = ("idle", "low", "normal")  # reelfarm.farm.runtime.taskprocess.lower_priority
DEFAULT_TASK_PRIORITY = "idle"
DEFAULT_DATABASE_POOL_TIMEOUT_SEC = 10.0  # a thread waiting for a connection (reelfarm.shared.db.pool_bound)
MAX_RETENTION_DAYS = 36_500  # 100 years; far beyond it, "now minus the period" falls off the calendar
SECRET_FILE = "secret_key"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` requests per API key in each window of ``window_sec`` seconds."""

    limit: int
    window_sec: int = RATE_LIMIT_WINDOW_SEC

    @property
    def policy(self) -> str:
        """The ``RateLimit-Policy`` header value, e.g. ``600;w=60``."""
        return f"{self.limit};w={self.window_sec}"


@dataclass(frozen=True)
class Settings:
    """Everything configurable about one process of the service."""

    data_dir: Path
    database_url: str
    storage_url: str
    secret_key: str = field(repr=False)
    public_url: str = "http://127.0.0.1:8000"
    public_url_configured: bool = False  # REELFARM_PUBLIC_URL was set (else `serve` uses its own address)
    redis_url: str | None = None
    s3_endpoint_url: str | None = None
    fetch_allow_private: bool = False
    rate_limits: Mapping[str, RateLimit] = field(
        default_factory=lambda: MappingProxyType({p: RateLimit(n) for p, n in DEFAULT_RATE_LIMITS.items()})
    )
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    apertium: bool = True
    libretranslate_url: str | None = None
    libretranslate_api_key: str | None = field(default=None, repr=False)
    deepl_api_key: str | None = field(default=None, repr=False)
    deepl_url: str | None = None
    log_level: str = "INFO"
    retention_days: int = DEFAULT_RETENTION_DAYS
    raster: str = "auto"  # REELFARM_RASTER: auto (GL on an NVIDIA GPU, else CPU), cpu or gl
    encoder: str = "auto"  # REELFARM_ENCODER: auto (NVENC where a session opens, else x264), x264 or nvenc
    gpu_queue_wait_sec: float = DEFAULT_GPU_QUEUE_WAIT_SEC  # REELFARM_GPU_QUEUE_WAIT_SEC (farm.runtime.routing)
    trusted_proxies: int = 0  # REELFARM_TRUSTED_PROXIES: proxies in front whose X-Forwarded-* are believed
    metrics_token: str | None = field(default=None, repr=False)  # REELFARM_METRICS_TOKEN: guards /metrics
    # REELFARM_OPERATOR_KEYS: (name, key) of each operator key of /api/v1/operator (api/operator.py)
    operator_keys: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    dispatch: str = "fair"  # REELFARM_DISPATCH: fair (farm.services.fairness) or fifo (arrival order, to compare)
    caps: str = "hold"  # REELFARM_CAPS: hold (a workspace's cap always holds) or spare (gives way to idle places)
    # farm.runtime.nodehealth: a node set aside after this many chunk failures in a row, for this long
    node_setaside_after: int = DEFAULT_NODE_SETASIDE_AFTER  # REELFARM_NODE_SETASIDE_AFTER
    node_cooldown_sec: float = DEFAULT_NODE_COOLDOWN_SEC  # REELFARM_NODE_COOLDOWN_SEC
    chunk_stall_sec: float = DEFAULT_CHUNK_STALL_SEC  # REELFARM_CHUNK_STALL_SEC: a chunk this long without a frame
    task_priority: str = DEFAULT_TASK_PRIORITY  # REELFARM_TASK_PRIORITY: the embedded farm's task processes
    # reelfarm.shared.db: what a connection is on the server (session, or one transaction behind a
    # pooler), and each process's pool (unset size: by process kind)
    database_pooling: str = "session"  # REELFARM_DATABASE_POOLING
    database_pool_size: int | None = None  # REELFARM_DATABASE_POOL_SIZE
    database_pool_timeout_sec: float = DEFAULT_DATABASE_POOL_TIMEOUT_SEC  # REELFARM_DATABASE_POOL_TIMEOUT_SEC

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``environ`` (default ``os.environ``).

        Creates ``data_dir`` and its ``secret_key`` file when no secret is configured.

        Raises:
            ConfigError: a variable is malformed; ``.variable`` names it.
        """
        env = _Env(os.environ if environ is None else environ)
        data_dir = data_dir_from_env(os.environ if environ is None else environ)
        return cls(
            **_places(env, data_dir), **_database(env), **_limits(env), **_farm(env), **_studio(env),
            log_level=env.parse("REELFARM_LOG_LEVEL", _log_level) or "INFO",
            # Evaluated last (arguments go left to right): a malformed variable above leaves
            # no secret file behind.
            secret_key=env.parse("REELFARM_SECRET_KEY", _secret) or load_or_create_secret(data_dir),
        )

    def rate_limit_for(self, plan: str) -> RateLimit | None:
        """The rate limit of ``plan``; None for plans without API access (``starter``)."""
        return self.rate_limits.get(plan)


def data_dir_from_env(environ: Mapping[str, str] | None = None) -> Path:
    """``REELFARM_DATA_DIR`` (default ``./.reelfarm``), resolved; reads nothing else and creates nothing
    (``reelfarm admin restore`` looks at the folder before anything is put there)."""
    env = os.environ if environ is None else environ
    return Path(env.get("REELFARM_DATA_DIR", "").strip() or "./.reelfarm").expanduser().resolve()


def _places(env: _Env, data_dir: Path) -> dict[str, Any]:
    """Where the service keeps its data and where it is reached."""
    return {
        "data_dir": data_dir,
        "database_url": env.parse("REELFARM_DATABASE_URL", _database_url) or f"sqlite:///{data_dir}/reelfarm.db",
        "storage_url": env.parse("REELFARM_STORAGE_URL", _storage_url) or f"file://{data_dir}/files",
        "public_url": env.parse("REELFARM_PUBLIC_URL", _http_url) or "http://127.0.0.1:8000",
        "public_url_configured": bool(env.get("REELFARM_PUBLIC_URL")),
        "s3_endpoint_url": env.parse("REELFARM_S3_ENDPOINT_URL", _http_url),
        "trusted_proxies": env.parse("REELFARM_TRUSTED_PROXIES", _proxy_count) or 0,
        "metrics_token": env.parse("REELFARM_METRICS_TOKEN", _secret),
        "operator_keys": env.parse("REELFARM_OPERATOR_KEYS", _operator_keys) or (),
    }


def _database(env: _Env) -> dict[str, Any]:
    """How the database is reached: through a pooler or not, and how many connections each process keeps."""
    return {
        "database_pooling": env.parse("REELFARM_DATABASE_POOLING", _pooling) or "session",
        "database_pool_size": env.parse("REELFARM_DATABASE_POOL_SIZE", _positive_int),
        "database_pool_timeout_sec": env.parse("REELFARM_DATABASE_POOL_TIMEOUT_SEC", _seconds)
        or DEFAULT_DATABASE_POOL_TIMEOUT_SEC,
    }


def _limits(env: _Env) -> dict[str, Any]:
    """How much a client may send and ask, and how long files are kept."""
    return {
        "rate_limits": MappingProxyType({
            plan: RateLimit(env.parse(f"REELFARM_RATE_LIMIT_{plan.upper()}", _positive_int) or default)
            for plan, default in DEFAULT_RATE_LIMITS.items()
        }),
        "max_body_bytes": env.parse("REELFARM_MAX_BODY_BYTES", _positive_int) or DEFAULT_MAX_BODY_BYTES,
        "fetch_allow_private": bool(env.parse("REELFARM_FETCH_ALLOW_PRIVATE", _bool)),
        "retention_days": env.parse("REELFARM_RETENTION_DAYS", _retention_days) or DEFAULT_RETENTION_DAYS,
    }


def _farm(env: _Env) -> dict[str, Any]:
    """The queue and how nodes draw."""
    return {
        "redis_url": env.parse("REELFARM_REDIS_URL", _redis_url),
        "raster": env.parse("REELFARM_RASTER", _raster) or "auto",
        "encoder": env.parse("REELFARM_ENCODER", _encoder) or "auto",
        "gpu_queue_wait_sec": env.parse("REELFARM_GPU_QUEUE_WAIT_SEC", _seconds) or DEFAULT_GPU_QUEUE_WAIT_SEC,
        "dispatch": env.parse("REELFARM_DISPATCH", _dispatch) or "fair",
        "caps": env.parse("REELFARM_CAPS", _caps) or "hold",
        "node_setaside_after": env.parse("REELFARM_NODE_SETASIDE_AFTER", _positive_int) or DEFAULT_NODE_SETASIDE_AFTER,
        "node_cooldown_sec": env.parse("REELFARM_NODE_COOLDOWN_SEC", _seconds) or DEFAULT_NODE_COOLDOWN_SEC,
        "chunk_stall_sec": env.parse("REELFARM_CHUNK_STALL_SEC", _seconds) or DEFAULT_CHUNK_STALL_SEC,
        "task_priority": env.parse("REELFARM_TASK_PRIORITY", _task_priority) or DEFAULT_TASK_PRIORITY,
    }


def _studio(env: _Env) -> dict[str, Any]:
    """The writer (an LLM, or the built-in one) and the translation engines."""
    return {
        "llm_base_url": env.parse("REELFARM_LLM_BASE_URL", _http_url),
        "llm_model": env.get("REELFARM_LLM_MODEL"),
        "llm_api_key": env.get("REELFARM_LLM_API_KEY"),
        "apertium": env.parse("REELFARM_APERTIUM", _bool) is not False,
        "libretranslate_url": env.parse("REELFARM_LIBRETRANSLATE_URL", _http_url),
        "libretranslate_api_key": env.get("REELFARM_LIBRETRANSLATE_API_KEY"),
        "deepl_api_key": env.get("REELFARM_DEEPL_API_KEY"),
        "deepl_url": env.parse("REELFARM_DEEPL_URL", _http_url),
    }


def load_or_create_secret(data_dir: Path) -> str:
    """Read ``{data_dir}/secret_key``, creating it (mode 0600) with a fresh secret if absent.

    Safe when several processes start at once: the file is written aside and linked into
    place, so every process reads the one secret that won.
    """
    path = data_dir / SECRET_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = data_dir / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(secrets.token_urlsafe(48) + "\n")
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won the race; use its secret
        finally:
            tmp.unlink(missing_ok=True)
    secret = path.read_text("ascii").strip()
    if len(secret) < MIN_SECRET_LENGTH:
        raise ConfigError("REELFARM_SECRET_KEY", f"{path} holds fewer than {MIN_SECRET_LENGTH} characters")
    return secret


def parse_storage_url(url: str) -> tuple[str, str, str]:
    """Split a storage URL into ``("file", directory, "")`` or ``("s3", bucket, prefix)``.

    ``file://`` is followed by a path, absolute (``file:///srv/files``) or relative
    (``file://./files``). The S3 prefix has no leading or trailing slash.

    Raises:
        ValueError: not one of those two forms.
    """
    if url.startswith("file://"):
        directory = url[len("file://"):]
        if not directory:
            raise ValueError("file:// needs a directory, e.g. file:///srv/reelfarm/files")
        return "file", directory, ""
    if url.startswith("s3://"):
        bucket, _, prefix = url[len("s3://"):].partition("/")
        if not bucket:
            raise ValueError("s3:// needs a bucket, e.g. s3://my-bucket/reelfarm")
        return "s3", bucket, prefix.strip("/")
    raise ValueError("expected file://PATH or s3://BUCKET/PREFIX")


class _Env:
    """Lookups in the environment mapping; parse errors become ConfigError naming the variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def get(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def parse(self, name: str, parser: Callable[[str], T]) -> T | None:
        raw = self.get(name)
        if raw is None:
            return None
        try:
            return parser(raw)
        except ValueError as exc:
            raise ConfigError(name, f"{exc} (got {_shown(name, raw)})") from None


def _shown(name: str, raw: str) -> str:
    # URLs may embed passwords; never echo secrets or credentials into logs.
    if "KEY" in name or "URL" in name:
        return "a value that is not shown"
    return repr(raw)


def _bool(raw: str) -> bool:
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number") from None
    if value <= 0:
        raise ValueError("must be at least 1")
    return value


def _proxy_count(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number of proxies") from None
    if not 0 <= value <= 5:
        raise ValueError("must be from 0 to 5")
    return value


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number of seconds") from None
    if not 0 < value <= 86_400:
        raise ValueError("must be more than 0 and at most 86400 seconds")
    return value


def _retention_days(raw: str) -> int:
    days = _positive_int(raw)
    if days > MAX_RETENTION_DAYS:
        raise ValueError(f"must be at most {MAX_RETENTION_DAYS} days")
    return days


def _http_url(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("expected an http:// or https:// URL")
    return raw.rstrip("/")


def _database_url(raw: str) -> str:
    scheme = raw.partition("://")[0]
    if "://" not in raw or not scheme.startswith(("sqlite", "postgresql")):
        raise ValueError("expected sqlite:///PATH or postgresql+psycopg2://USER@HOST/DB")
    return raw


def _pooling(raw: str) -> str:
    if raw not in ("session", "transaction"):
        raise ValueError("expected session (the server, or a pooler in session mode) or transaction")
    return raw


def _redis_url(raw: str) -> str:
    if urlsplit(raw).scheme not in ("redis", "rediss", "unix"):
        raise ValueError("expected redis://HOST:PORT/DB, rediss://... or unix://...")
    return raw


def _storage_url(raw: str) -> str:
    parse_storage_url(raw)
    return raw


def _secret(raw: str) -> str:
    if len(raw) < MIN_SECRET_LENGTH:
        raise ValueError(f"must be at least {MIN_SECRET_LENGTH} characters")
    return raw


def _operator_keys(raw: str) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for item in (part.strip() for part in raw.split(",") if part.strip()):
        name, sep, key = item.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_.@-]{1,100}", name.strip()):
            raise ValueError("expected name:key,... (a name of letters, digits and _.@-)")
        if name.strip() in {n for n, _ in found}:
            raise ValueError(f"the name {name.strip()} is given twice")
        found.append((name.strip(), _secret(key.strip())))
    return tuple(found)


def _raster(raw: str) -> str:
    if raw not in ("auto", "cpu", "gl"):
        raise ValueError("expected auto, cpu or gl")
    return raw


def _encoder(raw: str) -> str:
    if raw not in ("auto", "x264", "nvenc"):
        raise ValueError("expected auto, x264 or nvenc")
    return raw


def _caps(raw: str) -> str:
    if raw not in ("hold", "spare"):
        raise ValueError("must be hold or spare")
    return raw


def _task_priority(raw: str) -> str:
    if raw not in TASK_PRIORITIES:
        raise ValueError(f"must be one of {', '.join(TASK_PRIORITIES)}")
    return raw


def _dispatch(raw: str) -> str:
    if raw not in ("fair", "fifo"):
        raise ValueError("must be fair or fifo")
    return raw


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in logging.getLevelNamesMapping():
        raise ValueError("expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return level


def listen_url(host: str, port: int) -> str:
    """The URL a server listening on ``host:port`` is reached at from this machine (a wildcard
    address is reached through loopback)."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"

