"""A node measures its own speed as it starts, for a cold farm's start estimates (``reelfarm.farm.services.speeds``).

``SpeedCheck`` runs, once, beside a starting ``reelfarm worker``: a child process (GL state must
not be inherited by the work horses this process forks, as ``nodes.probe_gl`` says) draws 1080p
frames with the node's rasterizer and encodes them with x264 for about ``QUICK_SPEED_SEC`` each,
with ``reelfarm node check``'s own measures, and the node's record gets the chunk rate
(``speeds.SPEED_FIELD``). ``reelfarm node check --redis-url`` writes its longer measure on this
host's live nodes the same way. A check that fails leaves the field out: that node adds nothing
to the seed.

A host's measure is kept in Redis for ``REUSE_SEC`` (``reelfarm:speed:<host>:<raster>``): a node
started again on it, or a second node beside it, takes that measure rather than spend about 1.5 s
of CPU drawing it again beside the nodes already working there (a farm's hosts restart nodes in a
rolling upgrade; a test suite starts hundreds). ``reelfarm node check --redis-url`` measures anew.
"""
from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
from typing import Any

from reelfarm.farm.runtime.nodes import record_speed
from reelfarm.farm.services.speeds import chunk_rate

log = logging.getLogger("reelfarm.farm")

CHECK_TIMEOUT_SEC = 120.0
REUSE_SEC = 3600  # a host's measure is taken again by the nodes started on it within the hour


def reuse_key(raster: str, host: str | None = None) -> str:
    """Where this host's measure with rasterizer ``raster`` is kept for the nodes started after it."""
    return f"reelfarm:speed:{host or socket.gethostname()}:{raster}"


def measure_chunk_rate(raster: str, seconds: float) -> float | None:
    """This process's chunk rate with rasterizer ``raster`` ("cpu" or "gl"): ``node check``'s measures."""
    from reelfarm.farm.runtime.nodecheck import NodeConfig, _raster_rate, _x264_rate

    return chunk_rate(_raster_rate(raster, seconds, NodeConfig(raster=raster)), _x264_rate(seconds))


class SpeedCheck(threading.Thread):
    """Measure the node in a child process and write the rate on its record (module docstring)."""

    def __init__(self, redis: Any, node_key: str, raster: str) -> None:
        super().__init__(name="reelfarm-node-speed", daemon=True)
        self.redis, self.node_key, self.raster = redis, node_key, raster
        self.fps: float | None = None
        self.reused = False  # the host's recent measure was taken rather than drawn again

    def run(self) -> None:
        try:
            kept = self.redis.get(reuse_key(self.raster))
            if kept is not None:
                self.fps, self.reused = float(kept), True
                record_speed(self.redis, self.node_key, self.fps)
                return
            done = subprocess.run([sys.executable, "-m", __name__, self.raster], capture_output=True, text=True,
                                  timeout=CHECK_TIMEOUT_SEC, check=False)
            lines = done.stdout.strip().splitlines()
            self.fps = float(lines[-1]) if done.returncode == 0 and lines and lines[-1] != "None" else None
            if self.fps is None:
                log.warning("the node's speed check gave nothing (exit %s): %s", done.returncode,
                            done.stderr.strip()[-300:])
                return
            record_speed(self.redis, self.node_key, self.fps)
            self.redis.set(reuse_key(self.raster), f"{self.fps:.2f}", ex=REUSE_SEC)
            log.info("node speed: %.1f frames/s at 1080p (raster %s, x264)", self.fps, self.raster)
        except Exception:  # a seed of estimates: never the node's work
            log.warning("the node's speed check failed", exc_info=True)


if __name__ == "__main__":
    from reelfarm.farm.runtime.nodecheck import QUICK_SPEED_SEC

    print(measure_chunk_rate(sys.argv[1] if len(sys.argv) > 1 else "cpu", QUICK_SPEED_SEC))
