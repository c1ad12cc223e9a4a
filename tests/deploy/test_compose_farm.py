"""deploy/compose.yaml's farm, built and run: the images build here and start as their non-root
user, the farm renders a video end to end over HTTP, a node stopped with SIGTERM mid-render (RQ's
warm shutdown) loses nothing: the render still succeeds, whole; and a rolling upgrade from the
previous release (the README's procedure) drops no request, render or credit. They share one file
so that the suite's workers (a file each) run them one after another, not as two farms at once.

tests/deploy/composefarm.py says what the test changes in the file to run on this machine.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import av
import httpx
import pytest

from tests.deploy.composefarm import (
    METRICS_TOKEN,
    NODES,
    ComposeFarm,
    Ports,
    build_images,
    build_previous_release,
    docker,
    docker_daemon,
    farm_file,
    shared_files,
    wait_healthy,
)
from tests.helpers import wait_until
from tests.servers import free_port

IMAGE = "reelfarm:compose-test"
GPU_IMAGE = "reelfarm-gpu:compose-test"


@pytest.fixture(scope="module")
def images() -> Iterator[None]:
    """This machine's Docker daemon with the farm's images built (scripts/build-images.sh)."""
    with docker_daemon():
        build_images(IMAGE)
        yield


@contextlib.contextmanager
def _farm_up(folder: Path, image: str, apis: int = 1,
             host_pids: bool = False) -> Iterator[tuple[ComposeFarm, list[str], str]]:
    """The farm up (PostgreSQL, Redis, the schema, ``apis`` API instances and two nodes), its first
    workspace made with ``reelfarm admin init``: (farm, the APIs' bases, key). ``host_pids``: the
    farm's containers in the host's PID namespace too (``pid: host``), for releases that judged a
    node on "this host" (the hostname, which host networking gives every container) by its pid."""
    ports = Ports.free()
    doc = farm_file(ports, shared_files(), image, secrets.token_urlsafe(36))
    if host_pids:
        for service in doc["services"].values():
            if service.get("image") == image:
                service["pid"] = "host"
    bases = [f"http://127.0.0.1:{ports.api}"]
    for n in range(1, apis):  # more instances of the API, as a load balancer's pool
        port = free_port()
        more = json.loads(json.dumps(doc["services"]["api"]))
        more["command"] = [str(port) if a == str(ports.api) else a for a in more["command"]]
        more["healthcheck"]["test"] = [t.replace(f":{ports.api}/", f":{port}/") for t in more["healthcheck"]["test"]]
        doc["services"][f"api-{n}"] = more
        bases.append(f"http://127.0.0.1:{port}")
    farm = ComposeFarm(folder, doc)
    try:
        farm.compose("up", "-d", "--no-build", *api_services(farm), *NODES, timeout=900)
        for base in bases:
            wait_healthy(base + "/readyz")
        made = farm.compose("exec", "-T", "api", "reelfarm", "admin", "init", "--json")
        yield farm, bases, json.loads(made.stdout)["key"]
    finally:
        farm.down()


def api_services(farm: ComposeFarm) -> list[str]:
    return [name for name in farm.doc["services"] if name == "api" or name.startswith("api-")]


@pytest.fixture(scope="module")
def farm(images, tmp_path_factory) -> Iterator[tuple[ComposeFarm, str, str]]:
    """The farm of the file, one API: (farm, API base, key)."""
    with _farm_up(tmp_path_factory.mktemp("compose"), IMAGE) as (up, bases, key):
        yield up, bases[0], key


def _api(base: str, key: str, method: str, path: str, body: dict | None = None) -> dict:
    answer = httpx.request(method, f"{base}/api/v1{path}", json=body, timeout=60,
                           headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code < 300, answer.text
    return answer.json()


def _render(base: str, key: str, fmt: str, seconds: int, fps: int) -> dict:
    video = _api(base, key, "POST", "/videos", {"storyId": "flash_sale", "format": fmt, "durationSec": seconds,
                                                "fields": {"discount": "30% off"}})
    return _api(base, key, "POST", f"/videos/{video['id']}/renders", {"format": fmt, "resolution": 720, "fps": fps})


def _finished(base: str, key: str, render_id: str, farm: ComposeFarm | None = None) -> dict:
    def ended() -> dict | None:
        render = _api(base, key, "GET", f"/renders/{render_id}")
        return render if render["status"] in ("succeeded", "failed", "canceled") else None

    try:
        return wait_until(ended, f"render {render_id} to end", every=1.0)
    except AssertionError as exc:  # what the farm said meanwhile
        last = _api(base, key, "GET", f"/renders/{render_id}")
        raise AssertionError(f"{exc}\n{last}\n{farm.logs() if farm else ''}") from None


def _frames(base: str, url: str) -> tuple[int, int, int]:
    answer = httpx.get(url, timeout=120)
    mp4 = answer.content
    assert answer.status_code == 200 and mp4[4:8] == b"ftyp", (url, answer.status_code, answer.headers, mp4[:300])
    with av.open(io.BytesIO(mp4)) as container:
        stream = container.streams.video[0]
        return sum(1 for _ in container.decode(stream)), stream.width, stream.height


def test_the_gpu_image_builds_and_starts_its_nvidia_parts_waiting_for_a_device(images):
    """The GPU node's image builds here (on the Debian base) and its node check runs on the CPU;
    what needs NVIDIA's driver (NVENC through PyNvVideoCodec, EGL through glvnd) is absent until
    the container toolkit mounts it, and says so."""
    build_images(IMAGE, GPU_IMAGE)
    run = docker("run", "--rm", "--network", "host", GPU_IMAGE, "sh", "-c",
                 "id -u; reelfarm node check --raster cpu --queues render; python3.11 -c 'import PyNvVideoCodec'",
                 check=False)
    out = run.stdout + run.stderr
    assert out.startswith("10001\n") and "this node can serve what it is configured for" in out, out
    assert run.returncode != 0 and "PyNvVideoCodec" in out  # no driver here: the import names what is missing


def test_the_images_run_as_their_own_user_with_the_health_checks_the_file_declares(farm):
    compose, _, _ = farm
    for service in ("api", *NODES):
        uid = compose.compose("exec", "-T", service, "id", "-u").stdout.strip()
        assert uid == "10001", service
        wait_until(lambda s=service: compose.state(s).get("Health", {}).get("Status") == "healthy",
                   f"{service}'s health check to pass", every=2.0)


def test_the_apis_metrics_answer_only_the_scraper_with_the_token(farm):
    _, base, _ = farm
    assert httpx.get(f"{base}/metrics", timeout=30).status_code == 401
    scraped = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert scraped.status_code == 200 and "reelfarm_" in scraped.text


def test_the_compose_farm_renders_a_video_end_to_end(farm):
    _, base, key = farm
    render = _finished(base, key, _render(base, key, "1:1", 6, 24)["id"])
    assert render["status"] == "succeeded", render.get("error")
    assert _frames(base, render["url"]) == (6 * 24, 720, 720)


def test_the_image_carries_no_build_secret(farm):
    history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", IMAGE).stdout
    assert "BEGIN CERTIFICATE" not in history
    files = docker("run", "--rm", "--network", "host", "--entrypoint", "sh", IMAGE, "-c",
                   "ls /run/secrets 2>/dev/null; cat /etc/pip.conf 2>/dev/null; echo end").stdout
    assert files.strip() == "end"


TRAFFIC_RENDERS = 12  # the clients' renders during the roll: well within the workspace's 100 credits


# The release before this one's schema (0013): the last commit CI passed before migration 0014.
# Move it forward at each release: the upgrade the test runs is from it to this checkout.
PREVIOUS_RELEASE = "bcaad9c14781dd3edafa38055db1151a7fed1bca"
PREVIOUS_IMAGE = "reelfarm:previous-release"


class Balancer:
    """What a load balancer does, for the test: requests go round the API instances in rotation;
    one leaves the rotation before it is stopped (as Kubernetes takes a pod out of its Service
    before the SIGTERM that follows its preStop sleep) and comes back once its /readyz answers."""

    def __init__(self, bases: list[str]) -> None:
        self.rotation, self.turn, self.lock = list(bases), 0, threading.Lock()

    def pick(self) -> str:
        with self.lock:
            self.turn += 1
            return self.rotation[self.turn % len(self.rotation)]

    def out(self, base: str) -> None:
        with self.lock:
            self.rotation.remove(base)

    def back(self, base: str) -> None:
        wait_healthy(base + "/readyz")
        with self.lock:
            self.rotation.append(base)


def _traffic(balancer: Balancer, key: str, stop: threading.Event, renders: list[str], failures: list[str]) -> None:
    """Clients while the farm is upgraded: reads, and now and then a new video and its render."""
    n = 0
    while not stop.is_set():
        base = balancer.pick()
        try:
            if n % 6 == 0 and len(renders) < TRAFFIC_RENDERS:
                renders.append(_render(base, key, "1:1", 6, 24)["id"])
            else:
                _api(base, key, "GET", "/me")
        except Exception as exc:  # noqa: BLE001 - every failure is the finding
            failures.append(f"{base}: {exc!r}")
        n += 1
        time.sleep(0.2)


def test_a_rolling_upgrade_from_the_previous_release_drops_nothing(images, tmp_path):
    """The README's upgrade procedure, run: the farm on the previous release with renders under
    way and clients calling, then the new schema migrated (the old API and nodes keep working on
    it), the two API instances rolled one at a time, then the nodes one at a time (a warm
    shutdown each). No request fails, every render succeeds whole, each video is charged once."""
    build_previous_release(PREVIOUS_RELEASE, PREVIOUS_IMAGE, Path(tempfile.mkdtemp(prefix="reelfarm-previous-")))
    # the previous release named nodes by hostname and judged them by pid alone: on the host's
    # network (this machine's stand-in for a container network) its two nodes took one name, and its
    # API found them gone. The host's PID namespace gives it what separate hosts would.
    with _farm_up(tmp_path, PREVIOUS_IMAGE, apis=2, host_pids=True) as (up, bases, key):
        balancer = Balancer(bases)
        long_ones = [_render(bases[0], key, "16:9", 20, 30)["id"] for _ in range(2)]
        renders: list[str] = []
        failures: list[str] = []
        stop = threading.Event()
        clients = threading.Thread(target=_traffic, args=(balancer, key, stop, renders, failures))
        clients.start()
        try:
            services = up.doc["services"]
            services["migrate"]["image"] = IMAGE  # expand: the old code keeps working on the new schema
            up.write()
            up.compose("run", "--rm", "--no-deps", "migrate", timeout=300)
            time.sleep(3)  # old API and nodes on the new schema, under traffic
            for service, base in zip(api_services(up), bases, strict=True):
                balancer.out(base)
                time.sleep(2)  # the preStop pause: requests already sent finish
                up.compose("stop", service, timeout=120)  # SIGTERM: gunicorn drains
                up.retire(service)
                services[service]["image"] = IMAGE
                up.write()
                up.compose("up", "-d", "--no-deps", "--no-build", service, timeout=300)
                balancer.back(base)
            for node in NODES:
                up.compose("stop", "-t", "600", node, timeout=700)  # the chunk in hand is finished
                up.retire(node)
                services[node]["image"] = IMAGE
                up.write()
                up.compose("up", "-d", "--no-deps", "--no-build", node, timeout=300)
                wait_until(lambda n=node: up.state(n).get("Health", {}).get("Status") == "healthy",
                           f"{node} on the new image to pass its health check", every=2.0)
            time.sleep(3)  # and the new farm under traffic
        finally:
            stop.set()
            clients.join(120)
        if failures:  # each failure with what the farm logged about its request
            ids = re.findall(r"req_[0-9a-f]+", " ".join(failures))
            raise AssertionError("\n".join(failures) + "\n" + up.lines_about(*ids, "Traceback", "ERROR"))
        for service in (*api_services(up), *NODES):
            image = docker("inspect", "--format", "{{.Config.Image}}", up.container(service)).stdout.strip()
            assert image == IMAGE, service
        assert len(renders) >= 3
        for render_id in long_ones + renders:
            done = _finished(bases[0], key, render_id, up)
            if done["status"] != "succeeded":
                raise AssertionError(f"{render_id}: {done.get('error')}\n{up.lines_about(render_id)}")
            expected = (20 * 30, 1280, 720) if render_id in long_ones else (6 * 24, 720, 720)
            try:
                assert _frames(bases[0], done["url"]) == expected
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{up.lines_about(render_id)}") from None
        assert _api(bases[0], key, "GET", "/me")["workspace"]["credits"] == 100 - len(long_ones) - len(renders)


def test_a_node_stopped_with_sigterm_mid_render_loses_nothing(farm):
    compose, base, key = farm
    credits = _api(base, key, "GET", "/me")["workspace"]["credits"]
    render = _render(base, key, "16:9", 30, 30)

    def running() -> dict | None:
        now = _api(base, key, "GET", f"/renders/{render['id']}")
        assert now["status"] not in ("failed", "canceled"), now
        return now if now["status"] == "running" and 0.05 <= (now.get("progress") or 0) < 0.6 else None

    wait_until(running, "the long render to be under way", every=0.3)
    stopping = threading.Thread(target=compose.compose, args=("stop", "-t", "600", NODES[0]), kwargs={"timeout": 700})
    started = time.monotonic()
    stopping.start()  # SIGTERM, then the file's grace period: the chunk in hand is finished first
    done = _finished(base, key, render["id"], compose)
    stopping.join(700)
    if done["status"] != "succeeded":
        raise AssertionError(f"{done.get('error')}\n{compose.lines_about(render['id'])}")
    assert _frames(base, done["url"]) == (30 * 30, 1280, 720)
    state, took = compose.state(NODES[0]), time.monotonic() - started
    if not (state["Status"] == "exited" and state["ExitCode"] == 0 and took < 600):  # a warm shutdown, not a kill
        # a node that overran its grace period logged its threads' stacks before Docker killed it
        node_log = docker("logs", "--tail", "300", compose.container(NODES[0]), check=False)
        raise AssertionError(f"{state}\nstopped after {took:.0f} s\n{node_log.stdout[-12000:]}{node_log.stderr[-12000:]}")
    assert _api(base, key, "GET", "/me")["workspace"]["credits"] == credits - 1  # charged once
