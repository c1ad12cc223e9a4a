"""The compose farm of deploy/compose.yaml, run for real on this machine's Docker.

No registry is reachable here, so: the images are built locally (``scripts/build-images.sh`` makes
the base from Debian's packages), PostgreSQL and Redis come from Debian's packages too
(tests/deploy/images/), the containers share the host's network (Docker runs with
``--bridge=none``), each on a free loopback port, and storage is a shared folder where the file
has MinIO. Everything else is the file's own: its commands, environment, dependencies, health
checks and stop grace periods.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
IMAGES = Path(__file__).resolve().parent / "images"
DOCKER_DATA = Path("/var/tmp/reelfarm-docker")  # kept between runs: the images' layers are reused
NODES = ("worker-a", "worker-b")
METRICS_TOKEN = "compose-test-metrics-token-" + "x" * 16  # the file requires one; Prometheus sends it
BUILD_CEILING_SEC = 1800.0  # building every image from nothing (debootstrap, apt, pip) on 2 cores


def _docker_cli() -> str:
    """A Docker CLI that builds with BuildKit: Debian's docker.io does by itself."""
    for candidate in ("/usr/bin/docker", shutil.which("docker") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise AssertionError("no docker CLI: scripts/setup-system.sh --test installs Debian's docker.io")


DOCKER = _docker_cli()


def docker(*args: str, check: bool = True, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout, check=False, **kw)
    if check and run.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: exit {run.returncode}\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return run


def _daemon_answers() -> bool:
    return subprocess.run([DOCKER, "info"], capture_output=True, timeout=60, check=False).returncode == 0


@contextlib.contextmanager
def docker_daemon() -> Iterator[None]:
    """This machine's Docker daemon; started (without a bridge or iptables, as here a container
    shares the host's network) when none answers, and stopped afterwards."""
    if _daemon_answers():
        yield
        return
    DOCKER_DATA.mkdir(parents=True, exist_ok=True)
    log = open(DOCKER_DATA / "dockerd.log", "ab")  # noqa: SIM115 - held open for the daemon's life
    daemon = subprocess.Popen(["dockerd", "--bridge=none", "--iptables=false", "--data-root", str(DOCKER_DATA / "data"),
                               "--exec-root", str(DOCKER_DATA / "exec"), "--pidfile", str(DOCKER_DATA / "dockerd.pid")],
                              stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 180  # a daemon first loads what its data holds
        while not _daemon_answers():
            assert daemon.poll() is None, f"dockerd ended ({daemon.returncode}): see {DOCKER_DATA / 'dockerd.log'}"
            assert time.monotonic() < deadline, "dockerd did not answer in 180 s"
            time.sleep(0.5)
        yield
    finally:
        daemon.terminate()
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()


def build_images(tag: str, gpu_tag: str | None = None) -> None:
    """The farm's image as ``tag`` (scripts/build-images.sh, the operator's command; with
    ``gpu_tag``, the GPU node's too) and the Debian-packaged PostgreSQL and Redis the test runs in
    place of the registry's."""
    env = {**os.environ, "TAG": tag, "DOCKER": DOCKER, **({"GPU_TAG": gpu_tag} if gpu_tag else {})}
    run = subprocess.run([str(ROOT / "scripts" / "build-images.sh"), *(["--gpu"] if gpu_tag else [])], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=BUILD_CEILING_SEC, check=False)
    assert run.returncode == 0, f"scripts/build-images.sh: exit {run.returncode}\n{run.stdout[-4000:]}{run.stderr[-4000:]}"
    for name in ("postgres", "redis"):
        docker("build", "--network", "host", "-f", str(IMAGES / f"{name}.Dockerfile"), "-t", f"reelfarm-test-{name}",
               str(IMAGES), timeout=BUILD_CEILING_SEC)


@dataclass
class Ports:
    postgres: int
    redis: int
    api: int
    metrics: tuple[int, ...]

    @classmethod
    def free(cls) -> Ports:
        return cls(free_port(), free_port(), free_port(), tuple(free_port() for _ in NODES))


def farm_file(ports: Ports, files: Path, image: str, secret: str) -> dict[str, Any]:
    """deploy/compose.yaml as this machine can run it (see the module's text); ``image`` in place
    of the file's reelfarm image."""
    doc = yaml.safe_load(COMPOSE.read_text())
    services: dict[str, Any] = doc["services"]
    for name in ("minio", "bucket", "gpu-node-check", "gpu-worker"):
        services.pop(name)
    env = {k: v for k, v in services["api"]["environment"].items()
           if not k.startswith("AWS_") and k != "REELFARM_S3_ENDPOINT_URL"}
    env.update(REELFARM_DATABASE_URL=f"postgresql+psycopg2://reelfarm:reelfarm@127.0.0.1:{ports.postgres}/reelfarm",
               REELFARM_REDIS_URL=f"redis://127.0.0.1:{ports.redis}/0", REELFARM_STORAGE_URL="file:///srv/reelfarm/files",
               REELFARM_PUBLIC_URL=f"http://127.0.0.1:{ports.api}", REELFARM_SECRET_KEY=secret,
               REELFARM_METRICS_TOKEN=METRICS_TOKEN)
    shared = [f"{files}:/srv/reelfarm/files"]
    for service in services.values():
        service["network_mode"] = "host"
        service.pop("ports", None)
        service.get("depends_on", {}).pop("bucket", None)
        if service.get("image", "").startswith("reelfarm:"):
            service["image"] = image
            service.pop("build", None)
            service["environment"] = dict(env)
    pg = services["postgres"]
    pg["image"] = "reelfarm-test-postgres"
    pg["environment"] = {**pg["environment"], "PGPORT": str(ports.postgres)}
    pg["healthcheck"]["test"] = ["CMD", "pg_isready", "-h", "127.0.0.1", "-p", str(ports.postgres), "-U", "reelfarm"]
    redis = services["redis"]
    redis["image"] = "reelfarm-test-redis"
    redis["command"] = [*redis["command"], "--bind", "127.0.0.1", "--port", str(ports.redis)]
    redis["healthcheck"]["test"] = ["CMD", "redis-cli", "-p", str(ports.redis), "ping"]
    api = services["api"]
    api["command"] = [{"0.0.0.0": "127.0.0.1", "8000": str(ports.api)}.get(a, a) for a in api["command"]]
    api["healthcheck"]["test"] = [t.replace(":8000/", f":{ports.api}/") for t in api["healthcheck"]["test"]]
    api["volumes"] = shared
    worker = services.pop("worker")
    for name, port in zip(NODES, ports.metrics, strict=True):
        node = json.loads(json.dumps(worker))
        node["command"] = [str(port) if a == "9100" else a for a in node["command"]]
        node["healthcheck"]["test"] = [t.replace(":9100/", f":{port}/") for t in node["healthcheck"]["test"]]
        node["volumes"] = shared
        services[name] = node
    doc["volumes"] = {"postgres-data": {}, "redis-data": {}}
    return doc


class ComposeFarm:
    """One compose project on this machine: ``up``, ``exec``, ``stop`` and ``down`` of its services."""

    def __init__(self, folder: Path, doc: dict[str, Any]) -> None:
        self.folder = folder
        self.project = f"rftest{os.getpid()}x{int(time.time() * 1000) % 10**7}"
        self.file = folder / "compose.yaml"
        self.doc = doc
        self.retired: list[str] = []  # the logs of containers replaced since (``retire``)
        self.write()

    def write(self) -> None:
        """The file as ``doc`` now says (a service's image changed, before it is recreated)."""
        self.file.write_text(yaml.safe_dump(self.doc, sort_keys=False))

    def compose(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COMPOSE_DOCKER_CLI_BUILD": "0"}
        run = subprocess.run(["docker-compose", "-p", self.project, "-f", str(self.file), *args], capture_output=True,
                             text=True, timeout=timeout, env=env, cwd=self.folder, check=False)
        if check and run.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)}: exit {run.returncode}\n{run.stdout[-3000:]}"
                                 f"{run.stderr[-3000:]}\n{self.logs()}")
        return run

    def logs(self) -> str:
        run = subprocess.run(["docker-compose", "-p", self.project, "-f", str(self.file), "logs", "--no-color",
                              "--tail", "40"], capture_output=True, text=True, timeout=120, check=False)
        return run.stdout[-8000:]

    def retire(self, service: str) -> None:
        """Keep the logs of ``service``'s container before it is recreated (they go with it)."""
        run = docker("logs", self.container(service), check=False, timeout=120)
        self.retired.append(f"--- {service} (replaced) ---\n{run.stdout}{run.stderr}")

    def lines_about(self, *words: str, most: int = 300) -> str:
        """Every log line, of the containers replaced and of the running ones, naming any of ``words``."""
        run = subprocess.run(["docker-compose", "-p", self.project, "-f", str(self.file), "logs", "--no-color"],
                             capture_output=True, text=True, timeout=300, check=False)
        lines = [line for text in (*self.retired, run.stdout) for line in text.splitlines()
                 if line.startswith("--- ") or any(word in line for word in words)]
        return "\n".join(lines[-most:])

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).stdout.strip()

    def state(self, service: str) -> dict[str, Any]:
        return json.loads(docker("inspect", "--format", "{{json .State}}", self.container(service)).stdout)

    def down(self) -> None:
        self.compose("down", "-v", "--timeout", "20", check=False, timeout=300)


def build_previous_release(commit: str, tag: str, folder: Path) -> None:
    """The farm's image of an earlier release (``commit`` of this repository), built as ``tag`` by
    today's Dockerfile and build script (the earlier ones named registry images this machine
    cannot pull; what the image holds is the release's own code and requirements)."""
    def present() -> bool:
        return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True,
                              check=False).returncode == 0

    if not present():  # a shallow clone: the release is fetched from where the clone came from
        subprocess.run(["git", "fetch", "--quiet", "origin", commit], cwd=ROOT, capture_output=True, check=False,
                       timeout=300)
    if not present():
        subprocess.run(["git", "fetch", "--quiet", "--unshallow", "origin"], cwd=ROOT, capture_output=True,
                       check=False, timeout=600)
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=False)
    assert archive.returncode == 0, (f"git archive {commit}: {archive.stderr.decode()[-2000:]} (the release "
                                     "must be in this clone's history)")
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    for path in ("deploy/docker/Dockerfile", "scripts/build-images.sh", ".dockerignore"):
        shutil.copy2(ROOT / path, folder / path)
    env = {**os.environ, "TAG": tag, "DOCKER": DOCKER}
    run = subprocess.run([str(folder / "scripts" / "build-images.sh")], cwd=folder, env=env, capture_output=True,
                         text=True, timeout=BUILD_CEILING_SEC, check=False)
    assert run.returncode == 0, f"building {commit}: exit {run.returncode}\n{run.stdout[-4000:]}{run.stderr[-4000:]}"


def wait_healthy(url: str, ceiling: float = 300.0) -> None:
    deadline = time.monotonic() + ceiling
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer in {ceiling:g} s"
        time.sleep(1)


def shared_files() -> Path:
    """A folder the containers' user (uid 10001) can write, standing in for the bucket."""
    folder = Path(tempfile.mkdtemp(prefix="reelfarm-compose-files-"))
    os.chown(folder, 10001, 10001)
    return folder
