"""Render nodes: what each can do, and whether it is still alive.

Every ``reelfarm worker`` writes a hash ``reelfarm:node:<worker name>`` every few seconds:
hostname, pid, cores, the rasterizer its chunks draw with (``raster``: cpu or gl, and the GL
renderer's name), GPU model, NVENC, queues, state, current job, ``last_seen``, and from
nvidia-ml-py (``sample_gpu``, each beat) GPU memory total and used, utilization and NVENC
capacity, or in ``nvml`` why there are none (not installed, no driver). The hash
lives a day (so ``reelfarm farm status`` can show a node that went quiet); the node counts as
alive while ``last_seen`` is recent and, on the same host, while its pid exists. That second
test is what lets a worker that starts after a crash take over a killed node's jobs at once
(``reelfarm.farm.runtime.worker.recover_orphans``) instead of waiting for RQ's registry entries to expire.

The hash also holds the node's standing (``failures``, ``failure``, ``set_aside_until``: chunks that
failed in a row through its fault, and whether it is set aside; ``reelfarm.farm.runtime.nodehealth``),
written by the node and cleared by an operator; ``nodes()`` adds ``set_aside`` (now).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from reelfarm.farm.services.nodehealth import STANDING_FIELDS, Standing

log = logging.getLogger("reelfarm.farm")

NODE_TTL_SEC = 24 * 3600
ALIVE_SEC = 15.0  # a node that has not written for this long is gone (heartbeats every 5 s: three missed)
T = TypeVar("T")


def taken_key(namespace: str) -> str:
    """The Redis hash of jobs nodes have taken from their queues and not yet started: job id ->
    ``<node name>\n<queue name>``. ``NodeWorker`` (``reelfarm.farm.runtime.rqnode``) writes an entry as it
    takes a job and removes it once the job is registered as started; the farm's hand-back round
    (``reelfarm.farm.runtime.maintenance.recover_taken``) puts back the jobs of nodes that died in between."""
    return f"reelfarm:{namespace}taken"


def taken_notes(redis: Any, key: str) -> Iterator[tuple[str, str, str]]:
    """``(job id, node, queue)`` of each note under the taken ``key`` (``taken_key``)."""
    for raw_id, raw_note in redis.hgetall(key).items():
        note = raw_note.decode() if isinstance(raw_note, bytes) else raw_note
        node, _, queue = note.partition("\n")
        yield (raw_id.decode() if isinstance(raw_id, bytes) else raw_id), node, queue


@dataclass(frozen=True)
class Capabilities:
    """What a node is, fixed for its life; ``GpuSample`` holds what changes from beat to beat."""

    hostname: str
    pid: int
    cores: int
    gpu: str | None
    nvenc: bool
    raster: str = "cpu"  # the rasterizer chunks draw with here: "cpu" or "gl"
    gl_renderer: str = ""  # GL_RENDERER of the node's GL context (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)")
    encoder: str = "x264"  # the encoder family every chunk of this node uses: "x264" or "nvenc"


@dataclass(frozen=True)
class GpuSample:
    """The first NVIDIA GPU as NVML sees it now; ``nvml`` says why the numbers are absent.

    ``nvenc_capacity`` is ``nvmlDeviceGetEncoderCapacity`` for H.264: the share (0-100) of the
    encoder's capacity still free; None on GPUs without NVENC (H100, H200) or without an answer.
    """

    nvml: str  # "ok", or why NVML gave nothing ("nvidia-ml-py is not installed", "NVML: Driver Not Loaded")
    gpu_memory_total: int | None = None
    gpu_memory_used: int | None = None
    gpu_utilization: int | None = None  # percent busy over NVML's last sample period
    nvenc_capacity: int | None = None


def detect_capabilities(raster: str = "cpu", gl_renderer: str = "", encoder: str = "x264") -> Capabilities:
    """This machine: cores, the first NVIDIA GPU's model (pynvml, if installed) and whether NVENC
    can open a session. Every probe is guarded: a missing driver or library means "none"."""
    gpu = gpu_model()
    return Capabilities(hostname=socket.gethostname(), pid=os.getpid(), cores=os.cpu_count() or 1,
                        gpu=gpu, nvenc=_nvenc() if gpu else False, raster=raster, gl_renderer=gl_renderer,
                        encoder=encoder)


def gpu_model() -> str | None:
    return _with_nvml(lambda nvml, handle: _text(nvml.nvmlDeviceGetName(handle)))[0]


def sample_gpu() -> GpuSample:
    """Memory, utilization and NVENC capacity of the first GPU now; never raises."""
    def read(nvml: Any, handle: Any) -> GpuSample:
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        return GpuSample("ok", int(memory.total), int(memory.used),
                         _optional(lambda: int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
                         _optional(lambda: int(nvml.nvmlDeviceGetEncoderCapacity(
                             handle, nvml.NVML_ENCODER_QUERY_H264))))

    sample, reason = _with_nvml(read)
    return sample if sample is not None else GpuSample(reason)


def _with_nvml(read: Callable[[Any, Any], T]) -> tuple[T | None, str]:
    """``read(pynvml, first device handle)`` between nvmlInit and nvmlShutdown, or (None, why not)."""
    try:
        import pynvml  # nvidia-ml-py; optional (the "gpu" extra)
    except Exception:  # noqa: BLE001 - ImportError, or a broken install
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError: no driver, no library
        return None, f"NVML: {exc}"
    try:
        if pynvml.nvmlDeviceGetCount() < 1:
            return None, "NVML: no GPU"
        return read(pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)), "ok"
    except Exception as exc:  # noqa: BLE001
        return None, f"NVML: {exc}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _optional(read: Callable[[], int]) -> int | None:
    try:
        return read()
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported (no NVENC), or no answer
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvenc() -> bool:
    try:
        from reelfarm.renderer.nvenc import nvenc_available

        return bool(nvenc_available())
    except Exception:  # noqa: BLE001
        return False


def probe_gl(gpu_index: int = 0, hardware_only: bool = False, timeout: float = 120.0) -> tuple[bool, str]:
    """Whether a GL context for the GL rasterizer can be made here: (True, GL_RENDERER) or
    (False, why not). Made in a child process: EGL state must not be inherited by the work
    horses this process forks."""
    code = ("from reelfarm.renderer.gl import gl_session\n"
            "try:\n"
            f"    print('ok', gl_session({int(gpu_index)}, {bool(hardware_only)}).renderer)\n"
            "except Exception as exc:\n"
            "    print('error', type(exc).__name__ + ':', ' '.join(str(exc).split())[:300])\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"the GL probe did not finish: {exc}"
    lines = done.stdout.strip().splitlines()
    status, _, detail = (lines[-1] if lines else "").partition(" ")
    if done.returncode != 0 or status not in ("ok", "error"):
        return False, f"the GL probe exited with {done.returncode}: {done.stderr.strip()[-300:]}"
    return status == "ok", detail


class NodeRegistry:
    """Node hashes in Redis; ``namespace`` keeps deployments sharing a Redis apart."""

    def __init__(self, redis: Any, namespace: str = "") -> None:
        self.redis = redis
        self.namespace = namespace
        self.prefix = f"reelfarm:{namespace}"

    def key(self, name: str) -> str:
        return f"{self.prefix}node:{name}"

    @property
    def index_key(self) -> str:
        return f"{self.prefix}nodes"

    def beat(self, name: str, caps: Capabilities, *, queues: list[str], state: str,
             current_job: str | None, gpu: GpuSample | None = None) -> None:
        """Record that the node is alive and what it is doing (and its GPU's state, when sampled)."""
        values = {**asdict(caps), **(asdict(gpu) if gpu is not None else {})}
        fields = {k: ("" if v is None else str(int(v) if isinstance(v, bool) else v)) for k, v in values.items()}
        fields.update(queues=",".join(queues), state=state, current_job=current_job or "", last_seen=f"{time.time():.3f}")
        with self.redis.pipeline() as pipe:
            pipe.hset(self.key(name), mapping=fields)
            pipe.expire(self.key(name), NODE_TTL_SEC)
            pipe.sadd(self.index_key, name)
            pipe.execute()

    def mark_stopped(self, name: str) -> None:
        self.redis.hset(self.key(name), mapping={"state": "stopped", "current_job": "", "last_seen": f"{time.time():.3f}"})

    def nodes(self) -> list[dict[str, Any]]:
        """Every node seen in the last day, with ``alive`` and ``seen_sec_ago``; stale names are pruned."""
        found, now = [], time.time()
        for raw in sorted(self.redis.smembers(self.index_key)):
            name = raw.decode() if isinstance(raw, bytes) else raw
            data = self._data(name)
            if data is None:
                self.redis.srem(self.index_key, name)
                continue
            found.append({"name": name, **data, "alive": self._alive(data),
                          "set_aside": Standing.from_fields(data).set_aside(now),
                          "seen_sec_ago": round(now - float(data.get("last_seen") or 0), 1)})
        return found

    def known(self, name: str) -> bool:
        """Whether the registry has a record of node ``name`` (seen in the last day)."""
        return bool(self.redis.exists(self.key(name)))

    def standing(self, name: str) -> Standing:
        """The node's standing (a clean one for a node without a record)."""
        values = self.redis.hmget(self.key(name), STANDING_FIELDS)
        return Standing.from_fields({k: v.decode() if isinstance(v, bytes) else v
                                     for k, v in zip(STANDING_FIELDS, values)})

    def save_standing(self, name: str, standing: Standing) -> None:
        with self.redis.pipeline() as pipe:
            pipe.hset(self.key(name), mapping=standing.as_fields())
            pipe.expire(self.key(name), NODE_TTL_SEC)
            pipe.execute()

    def is_dead(self, name: str) -> bool:
        """True only for a node this registry knows and knows to be gone; an unknown worker (a
        plain ``rq worker``) is left to RQ's own expiry."""
        data = self._data(name)
        return data is not None and not self._alive(data)

    def _data(self, name: str) -> dict[str, str] | None:
        raw = self.redis.hgetall(self.key(name))
        if not raw:
            return None
        return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                for k, v in raw.items()}

    @staticmethod
    def _alive(data: dict[str, str]) -> bool:
        if data.get("state") == "stopped":
            return False
        if time.time() - float(data.get("last_seen") or 0) > ALIVE_SEC:
            return False
        if data.get("hostname") == socket.gethostname() and (data.get("pid") or "").isdigit():
            return pid_exists(int(data["pid"]))
        return True


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists on this machine (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
