"""Render nodes: what each can do, and whether it is still alive.

Every ``reelfarm worker`` writes a hash ``reelfarm:node:<worker name>`` every few seconds:
hostname, pid, cores, GPU model, NVENC, queues, state, current job, ``last_seen``. The hash
lives a day (so ``reelfarm farm status`` can show a node that went quiet); the node counts as
alive while ``last_seen`` is recent and, on the same host, while its pid exists. That second
test is what lets a worker that starts after a crash take over a killed node's jobs at once
(``farm.worker.recover_orphans``) instead of waiting for RQ's registry entries to expire.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger("reelfarm.farm")

NODE_TTL_SEC = 24 * 3600
ALIVE_SEC = 30.0  # a node that has not written for this long is gone (heartbeats every 5 s)


@dataclass(frozen=True)
class Capabilities:
    hostname: str
    pid: int
    cores: int
    gpu: str | None
    nvenc: bool


def detect_capabilities() -> Capabilities:
    """This machine: cores, the first NVIDIA GPU's model (pynvml, if installed) and whether NVENC
    can open a session. Every probe is guarded: a missing driver or library means "none"."""
    gpu = gpu_model()
    return Capabilities(hostname=socket.gethostname(), pid=os.getpid(), cores=os.cpu_count() or 1,
                        gpu=gpu, nvenc=_nvenc() if gpu else False)


def gpu_model() -> str | None:
    try:
        import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py; optional ("nvenc" extra)
    except Exception:  # noqa: BLE001 - ImportError, or a broken install
        return None
    try:
        pynvml.nvmlInit()
        try:
            if pynvml.nvmlDeviceGetCount() < 1:
                return None
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
            return name.decode() if isinstance(name, bytes) else str(name)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVMLError: no driver, no device
        return None


def _nvenc() -> bool:
    try:
        from renderer import nvenc_available

        return bool(nvenc_available())
    except Exception:  # noqa: BLE001
        return False


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
             current_job: str | None) -> None:
        """Record that the node is alive and what it is doing."""
        fields = {k: ("" if v is None else str(int(v) if isinstance(v, bool) else v)) for k, v in asdict(caps).items()}
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
        found = []
        for raw in sorted(self.redis.smembers(self.index_key)):
            name = raw.decode() if isinstance(raw, bytes) else raw
            data = self._data(name)
            if data is None:
                self.redis.srem(self.index_key, name)
                continue
            found.append({"name": name, **data, "alive": self._alive(data),
                          "seen_sec_ago": round(time.time() - float(data.get("last_seen") or 0), 1)})
        return found

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
