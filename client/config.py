"""Where the client finds its API key and URL, and where ``reelfarm login`` keeps them.

Order, first found wins: the argument, ``REELFARM_API_KEY`` / ``REELFARM_API_URL``, the login file,
then ``http://127.0.0.1:8000`` for the URL (a key has no default). The login file is
``$XDG_CONFIG_HOME/reelfarm/credentials.json`` (``~/.config`` when unset), written with mode 0600.
This is the only module of the client that reads the environment.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class Credentials:
    api_key: str | None
    base_url: str


def config_dir() -> Path:
    """The user's config folder for reelfarm."""
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root) / "reelfarm"


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


def normalize_url(url: str) -> str:
    """The server's root URL: no trailing slash, no ``/api/v1``."""
    url = url.strip().rstrip("/")
    return url.removesuffix(API_PREFIX)


def load_saved() -> dict[str, str]:
    """What ``reelfarm login`` stored, or nothing."""
    try:
        data = json.loads(credentials_path().read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def resolve(api_key: str | None = None, base_url: str | None = None) -> Credentials:
    """The key and URL to use, from the argument, the environment or the login file."""
    saved = load_saved()
    key = api_key or os.environ.get("REELFARM_API_KEY") or saved.get("api_key")
    url = base_url or os.environ.get("REELFARM_API_URL") or saved.get("api_url") or DEFAULT_URL
    return Credentials(api_key=key or None, base_url=normalize_url(url))


def save(api_key: str, base_url: str) -> Path:
    """Store a key and URL for later commands, readable by the user alone."""
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"api_key": api_key, "api_url": normalize_url(base_url)}, out)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_TRUNC
    return path
