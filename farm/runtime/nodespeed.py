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
import time
from typing import Any

from reelfarm.farm.runtime.nodes import record_speed
from reelfarm.farm.runtime.resilience import is_outage
from reelfarm.farm.services.speeds import chunk_rate

log = logging.getLogger("reelfarm.farm")

CHECK_TIMEOUT_SEC = 120.0
RECORD_RETRY_MAX_SEC = 30.0  # while Redis is away, the measure is written again at most this far apart
RECORD_WAIT_SEC = 600.0  # and for this long at most
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
        kept = self._kept()
        if kept is not None:
            self.fps, self.reused = float(kept), True
        else:
            try:
                self.fps = self._measure()
            except Exception:  # a seed of estimates: never the node's work
                log.warning("the node's speed check failed", exc_info=True)
                return
            if self.fps is None:
                return
            log.info("node speed: %.1f frames/s at 1080p (raster %s, x264)", self.fps, self.raster)
        self._record()

    def _measure(self) -> float | None:
        done = subprocess.run([sys.executable, "-m", __name__, self.raster], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT_SEC, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines and lines[-1] != "None":
            return float(lines[-1])
        log.warning("the node's speed check gave nothing (exit %s): %s", done.returncode, done.stderr.strip()[-300:])
        return None

    def _record(self) -> None:
        """Write the measure on the node's record (and, drawn here, for this host's next nodes). While
        Redis is away, or its record is not there (a Redis that came back empty, before the node's
        next heartbeat), again, for up to ``RECORD_WAIT_SEC``: the outage log tells of an outage."""
        assert self.fps is not None
        fps, wait, until = self.fps, 1.0, time.monotonic() + RECORD_WAIT_SEC
        kept = self.reused
        while True:
            try:
                if not kept:
                    self.redis.set(reuse_key(self.raster), f"{fps:.2f}", ex=REUSE_SEC)
                    kept = True
                if record_speed(self.redis, self.node_key, fps):
                    return
            except Exception as exc:  # the measure is advisory: never the node's work
                if not is_outage(exc):
                    log.warning("could not record the node's speed", exc_info=True)
                    return
            if time.monotonic() + wait > until:
                return
            time.sleep(wait)
            wait = min(wait * 2, RECORD_RETRY_MAX_SEC)

    def _kept(self) -> bytes | None:
        """This host's recent measure, if Redis has one (an outage: none, and the node measures itself)."""
        try:
            return self.redis.get(reuse_key(self.raster))
        except Exception as exc:  # without the kept measure, the node measures itself
            if not is_outage(exc):
                log.warning("could not read this host's kept speed", exc_info=True)
            return None


if __name__ == "__main__":
    from reelfarm.farm.runtime.nodecheck import QUICK_SPEED_SEC

    print(measure_chunk_rate(sys.argv[1] if len(sys.argv) > 1 else "cpu", QUICK_SPEED_SEC))
