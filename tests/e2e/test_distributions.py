"""Both distributions installed as a user installs them, each in a fresh virtual environment.

- The server (``pip install .``, built as a wheel) installs one top-level package, ``reelfarm``:
  none of the former top-level names (``api``, ``shared``, ``client``, ...) can be found, and a
  working directory holding a user's own ``client.py``, ``api.py`` and ``shared.py`` changes
  nothing: ``reelfarm serve`` starts there, and the SDK imports there.
- The client (``pip install ./client``) brings the SDK and the ``reelfarm`` command with HTTP
  dependencies only (no Skia, PyAV, numpy, Flask, SQLAlchemy, scikit-learn), and renders and
  downloads a story video through that server.
- The server runs without REELFARM_PUBLIC_URL on a port of its own, so the download works only if
  the URLs it hands out lead to the address it listens on.

The server's dependencies come from the environment running the tests (a ``.pth`` line makes them
visible): what is checked is the server's own package, not PyPI. The client's venv gets its
dependencies from the package index, like a user's.
"""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import pytest

from reelfarm.farm.runtime.queue import FORMER_TOP_LEVEL
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("skia-python", "av", "numpy", "flask", "sqlalchemy", "scikit-learn", "psycopg2-binary", "PyOpenGL",
         "alt-profanity-check", "boto3", "rq")
USER_MODULE = "raise ImportError('the user\\'s own {name}.py was imported')\n"


def source_copy(path: Path, into: Path) -> Path:
    """A copy of a project folder to build from: pip builds in the source tree (``build/``,
    ``*.egg-info``), which must not land in the checkout."""
    target = into / path.name
    shutil.copytree(path, target, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".*cache",
                                                  ".reelfarm", "tests", "benchmarks", "docs", "deploy"))
    return target


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin"


def pip(bin_dir: Path, *args: str) -> None:
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def run(bin_dir: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("REELFARM_", "PYTHON"))}
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], cwd=cwd, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with a user's own modules named like the former top-level packages."""
    path = tmp_path_factory.mktemp("user")
    for name in ("client", "api", "shared"):
        (path / f"{name}.py").write_text(USER_MODULE.format(name=name))
    return path


@pytest.fixture(scope="module")
def server_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the server's wheel; its dependencies from the test environment."""
    bin_dir = make_venv(tmp_path_factory.mktemp("server-venv") / "venv")
    site_packages = next((bin_dir.parent / "lib").glob("python3*/site-packages"))
    (site_packages / "dependencies-from-the-tests.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    wheels = tmp_path_factory.mktemp("wheels")
    source = source_copy(ROOT, tmp_path_factory.mktemp("server-source"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            "-w", str(wheels), str(source)], capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next(wheels.glob("reelfarm-*.whl"))
    pip(bin_dir, "--no-deps", str(wheel))
    return bin_dir


@pytest.fixture(scope="module")
def client_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = make_venv(tmp_path_factory.mktemp("client-venv") / "venv")
    pip(bin_dir, str(source_copy(ROOT / "client", tmp_path_factory.mktemp("client-source"))))
    return bin_dir


@pytest.fixture(scope="module")
def server(server_bin: Path, user_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    port = free_port()
    process, lines = start_server(tmp_path_factory.mktemp("served") / "data", port,
                                  command=(str(server_bin / "reelfarm"),), cwd=user_dir, public_url=False)
    try:
        key, _ = wait_for_key(lines)
        base = f"http://127.0.0.1:{port}"
        wait_for_health(base)
        yield {"base": base, "key": key}
    finally:
        stop(process)


def test_the_server_wheel_installs_only_the_reelfarm_package(server_bin: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util, json, sys\n"
             f"print(json.dumps([n for n in {sorted(FORMER_TOP_LEVEL)!r} if importlib.util.find_spec(n)]))")
    done = run(server_bin, "python", "-P", "-c", probe, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    top_level = run(server_bin, "python", "-c", "import importlib.metadata as m; "
                    "print(m.distribution('reelfarm').read_text('top_level.txt'))", cwd=tmp_path)
    assert top_level.stdout.split() == ["reelfarm"]


def test_a_users_own_client_api_and_shared_modules_change_nothing(server_bin: Path, user_dir: Path) -> None:
    code = ("from reelfarm.client import Client\nimport reelfarm.api.app, reelfarm.shared.config\n"
            "print(Client.__module__, reelfarm.api.app.__name__)")
    done = run(server_bin, "python", "-c", code, cwd=user_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["reelfarm.client._sync.client", "reelfarm.api.app"]


def test_the_client_distribution_is_light(client_bin: Path, tmp_path: Path) -> None:
    listed = run(client_bin, "python", "-m", "pip", "list", "--format", "json", cwd=tmp_path)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "reelfarm-client" in names
    assert names & {h.lower() for h in HEAVY} == set()
    assert "reelfarm" not in names
    helped = run(client_bin, "reelfarm", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("login", "whoami", "stories", "videos", "renders", "jobs", "brand", "webhooks", "mcp"):
        assert f"  {command} " in helped.stdout, command
    for server_command in ("serve", "worker", "render ", "admin"):
        assert f"  {server_command}" not in helped.stdout
    no_mcp = run(client_bin, "reelfarm", "mcp", cwd=tmp_path, env={"REELFARM_API_KEY": "rf_live_x"})
    assert no_mcp.returncode != 0 and "pip install 'reelfarm-client[mcp]'" in no_mcp.stderr
    assert "Traceback" not in no_mcp.stderr


def test_the_client_renders_and_downloads_a_story_video_from_the_server(client_bin: Path, user_dir: Path,
                                                                         server: dict[str, Any]) -> None:
    env = {"REELFARM_API_KEY": server["key"], "REELFARM_API_URL": server["base"]}
    created = run(client_bin, "reelfarm", "videos", "create", "--story", "quote", "--field", "quote=Ship it",
                  "--format", "1:1", "--duration", "6", "--json", cwd=user_dir, env=env)
    assert created.returncode == 0, created.stdout + created.stderr
    video = json.loads(created.stdout)
    target = user_dir / "quote.mp4"
    rendered = run(client_bin, "reelfarm", "videos", "render", video["id"], "--resolution", "720",
                   "--download", str(target), "--json", cwd=user_dir, env=env, timeout=600)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    assert json.loads(rendered.stdout)["url"].startswith(server["base"] + "/files/")
    with av.open(str(target)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (720, 720)
        assert sum(1 for _ in container.decode(stream)) == 6 * 30

    sdk = ("from reelfarm.client import Client\nrf = Client()\n"
           f"print(rf.videos.get({video['id']!r}).status)")
    done = run(client_bin, "python", "-c", sdk, cwd=user_dir, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ready"
