"""Bad nodes set aside, stuck chunks stopped: a farm on RQ obeying ``reelfarm.farm.services.nodehealth``.

**Setting a node aside.** A node's standing lives in its hash in Redis (``reelfarm.farm.runtime.nodes``:
fields ``failures``, ``failure``, ``set_aside_until``), so ``reelfarm farm status``, the routing,
the dispatcher, the node's metrics and ``reelfarm node check`` all see it, whichever process asks.
The node keeps the count itself (``NodeWorker`` in ``reelfarm.farm.runtime.rqnode``):

- What counts (``counts_against_node``): a chunk (``render_chunk``) that raised in the work horse,
  or whose work horse died (the OOM killer, a driver crash, or this node stopping it as stuck).
  Not: Redis or the database unreachable (``is_outage``); a problem the user must fix
  (``reelfarm.farm.runtime.tasks.PERMANENT``, the render fails at once); the farm's storage
  service failing (``StorageError``, the same for every node); a chunk of an encoder family this
  node does not have (``OtherEncoderFamily``, a matter of routing); a chunk stopped by a cancel or
  by the node's own shutdown. Other jobs (stitches, imports, stills) neither count nor clear.
- The failure that sets a node aside spends none of the chunk's retries: the node takes it on
  itself and the chunk goes back to the front of its queue, for another node. Every earlier
  failure spends one, as any failure does. A chunk has 3 attempts (2 retries); with
  ``REELFARM_NODE_SETASIDE_AFTER`` at most that (the default is 3) a chunk that failed on a bad node
  every time so far still has an attempt left when the node is set aside, so the render finishes
  on other nodes, charged once. A larger value lets one bad node fail a render.
- Set aside, a node heartbeats with the state ``set aside: <failure>``, dispatches and takes no
  job (a ``--burst`` node leaves), and counts as working no queue (``routing.works``), so chunks are
  routed and dispatched as if it were gone. It looks at its standing before each job, and every
  ``SET_ASIDE_POLL_SEC`` while set aside: a clear takes effect within a second.

**Stopping a stuck chunk.** A chunk's work horse adds the frames it draws to the node's
``FrameCounter`` (memory it shares with the node's main process; the task context's
``frames_drawn``). Each time RQ's horse monitor wakes (every quarter of the stall time, at most
30 s) the main process looks: when no frame was drawn for ``REELFARM_CHUNK_STALL_SEC`` (120 s)
while the database answers (a chunk waiting out a database outage is not stuck), it kills the
horse and says why. RQ then treats the chunk as any chunk whose horse died: it counts against the
node as above, and RQ retries it on whichever node takes it first. A stuck chunk is stopped
between the stall time and a quarter of it later.

The embedded queue has neither: on one machine there is no other node to hand work to, and its
process pool cannot stop one task without breaking the pool (``reelfarm.farm.runtime.embedded``).
"""
from __future__ import annotations

import logging
import mmap
import os
import signal
import struct
import time
from dataclasses import dataclass

from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.runtime.resilience import is_outage
from reelfarm.farm.runtime.routing import works
from reelfarm.farm.services.nodehealth import SetAsidePolicy, StallClock, Standing, after_failure, one_line
from reelfarm.farm.services.queues import GPU_QUEUE, NVENC_QUEUE, RENDER_QUEUE

log = logging.getLogger("reelfarm.farm")

CHUNK_TASK = "render_chunk"
SET_ASIDE_POLL_SEC = 1.0
MAX_MONITOR_SEC = 30  # RQ's own interval between looks at a running horse


def is_chunk(func_name: str | None) -> bool:
    """Whether a job running ``func_name`` draws a chunk."""
    return (func_name or "").rpartition(".")[2] == CHUNK_TASK


def counts_against_node(func_name: str | None, exc: BaseException | None) -> bool:
    """Whether a failure of a job running ``func_name`` is its node's fault (module docstring);
    ``exc`` is None when the job's work horse died."""
    if not is_chunk(func_name):
        return False
    if exc is None:
        return True
    from reelfarm.farm.runtime.tasks import PERMANENT  # late: the renderer, only where a chunk ran
    from reelfarm.farm.services.lifecycle import OtherEncoderFamily
    from reelfarm.shared.errors import StorageError

    return not is_outage(exc) and not _caused_by(exc, (*PERMANENT, OtherEncoderFamily, StorageError))


def describe_failure(exc: BaseException) -> str:
    """A failure as an operator reads it: the exception's kind and first line."""
    return one_line(f"{type(exc).__name__}: {exc}")


def describe_death(status: int | None) -> str:
    """A work horse's death as an operator reads it, from its ``waitpid`` status."""
    if status is None:
        return "its work horse died; its status could not be read"
    if os.WIFSIGNALED(status):
        return f"its work horse died ({signal.Signals(os.WTERMSIG(status)).name})"
    return f"its work horse died (exit status {os.WEXITSTATUS(status)})"


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, kinds):
            return True
        current = current.__cause__ or current.__context__
    return False


class NodeHealth:
    """The standings of a farm's nodes under ``policy``, kept in their hashes (``NodeRegistry``)."""

    def __init__(self, registry: NodeRegistry, policy: SetAsidePolicy | None = None) -> None:
        self.registry = registry
        self.policy = policy or SetAsidePolicy()

    def standing(self, name: str) -> Standing:
        return self.registry.standing(name)

    def failed(self, name: str, failure: str) -> Standing:
        """Count one more chunk failure that was node ``name``'s fault; its standing after it."""
        now = time.time()
        after = after_failure(self.standing(name), failure, now, self.policy, self._others_working(name))
        self.registry.save_standing(name, after)
        if after.set_aside(now):
            log.warning("node %s set aside for %g s after %d chunk failures in a row (the last: %s); it takes "
                        "no work until then, or until `reelfarm node clear %s`", name, self.policy.cooldown_sec,
                        after.failures, after.failure, name)
        elif after.failures >= self.policy.after:
            log.warning("node %s failed %d chunks in a row (the last: %s) but is the only node taking work: "
                        "not set aside", name, after.failures, after.failure)
        else:
            log.info("node %s: chunk failure %d in a row (at %d it is set aside): %s", name, after.failures,
                     self.policy.after, after.failure)
        return after

    def succeeded(self, name: str) -> None:
        """A chunk succeeded on node ``name``: its count starts again."""
        if self.standing(name) != Standing():
            self.registry.save_standing(name, Standing())

    def clear(self, name: str) -> Standing | None:
        """An operator takes node ``name`` back into work now, its count at 0. Returns its standing
        before, or None for a node the farm does not know."""
        if not self.registry.known(name):
            return None
        before = self.standing(name)
        self.registry.save_standing(name, Standing())
        log.info("node %s cleared by an operator (it had %d chunk failures in a row)", name, before.failures)
        return before

    def _others_working(self, name: str) -> bool:
        return any(node["name"] != name and any(works(node, q) for q in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE))
                   for node in self.registry.live_nodes())


QUIET_REPORT_SEC = 30.0


class FrameCounter:
    """Frames drawn by a node's chunks, in memory it shares with the work horses it forks: a horse
    adds, the node's main process reads (one writer at a time: a node runs one horse)."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, 8)  # anonymous and MAP_SHARED: a forked child's writes are seen here

    def add(self, frames: int) -> None:
        struct.pack_into("Q", self._memory, 0, self.value() + frames)

    def value(self) -> int:
        return int(struct.unpack_from("Q", self._memory, 0)[0])


@dataclass
class StallWatch:
    """A node's watch on the chunk it runs: its frames drawn against a ``StallClock``."""

    frames: FrameCounter
    clock: StallClock

    def restart(self) -> None:
        self.clock.restart(self.frames.value(), time.monotonic())

    def stalled(self) -> bool:
        return self.clock.stalled(self.frames.value(), time.monotonic())

    def quiet_sec(self) -> float:
        """Seconds since the running chunk last drew a frame, as of the last look (``stalled``);
        0 when frames were drawn since. Reads only: the heartbeat thread asks, the monitor decides."""
        if self.frames.value() != self.clock.frames:
            return 0.0
        return max(0.0, time.monotonic() - self.clock.since)

    @property
    def quiet_report_sec(self) -> float:
        """From how long without a frame the node says so in its heartbeat (the render's
        ``held_up: no_frames``): a quarter of the stall time, at most ``QUIET_REPORT_SEC``, well
        before the node stops the chunk as stuck."""
        return min(QUIET_REPORT_SEC, self.clock.after_sec / 4)

    @property
    def monitor_sec(self) -> int:
        """How often RQ's horse monitor should wake (whole seconds: it times itself with SIGALRM)."""
        return max(1, min(MAX_MONITOR_SEC, int(self.clock.after_sec / 4)))
