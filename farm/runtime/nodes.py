"""Render nodes: what each can do, and whether it is still alive.

Liveness is one sorted set, ``reelfarm:<ns>nodes:seen``: node name -> time of its last heartbeat.
Every ``reelfarm worker`` beats every few seconds (``ZADD``), so the live nodes are one
``ZRANGEBYSCORE`` over the last ``ALIVE_SEC``, however many nodes the farm has had. Beside it each
node keeps a hash ``reelfarm:<ns>node:<name>``: hostname, pid (and when that process started),
cores, the rasterizer its chunks draw with (``raster``: cpu or gl, and the GL renderer's name), GPU
model, NVENC, queues, state, current job, ``last_seen``, and from nvidia-ml-py (``sample_gpu``,
each beat) GPU memory total and used, utilization and NVENC capacity, or in ``nvml`` why there are
none. A caller reads the hashes of only the nodes it needs, in one pipeline. A hash expires
``NODE_TTL_SEC`` after the node's last beat, so a gone node's record goes by itself; its entry
in the set stays ``FORGET_SEC`` (the hand-back round still knows the node as dead, not unknown)
and the maintenance round removes it then (``prune``).

A node counts as alive while its last beat is recent and, on the same host, while its process
exists (the same pid, started at the same moment). That second test lets a node started after a
crash take over a killed node's jobs, and its name, at once. "The same host" is the same hostname
*and* the same PID namespace (``pid_ns``): containers on the host's network share its hostname but
each sees only its own processes (every one of them is pid 1 to itself), so a record from another
PID namespace, or from a release that did not say its namespace, is judged by its beats alone, as a
node of another host is.

Names are identities that survive a restart: ``--name``, or by default ``<host>-<n>`` with the
lowest slot ``n`` free on that host (``claim``). A name is free when no node of it is alive: a
node started under the name of a dead one takes it over at once (``reelfarm.farm.runtime.worker``
hands back what the dead one left); under the name of a live one it is refused, since two nodes
must never share a name.

The hash also holds the node's standing (``failures``, ``failure``, ``set_aside_until``: chunks that
failed in a row through its fault, and whether it is set aside; ``reelfarm.farm.runtime.nodehealth``),
written by the node and cleared by an operator; ``nodes()`` adds ``set_aside`` (now). A node
restarted under its name within ``NODE_TTL_SEC`` keeps its standing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from reelfarm.farm.services.nodehealth import STANDING_FIELDS, Standing
from reelfarm.farm.services.speeds import SPEED_FIELD

log = logging.getLogger("reelfarm.farm")

ALIVE_SEC = 15.0  # a node that has not written for this long is gone (heartbeats every 5 s: three missed)
SILENT_SEC = 8.0  # a live node not heard from for this long is shown as silent (a beat missed, and then some)
NODE_TTL_SEC = 30  # a node's hash outlives its last beat by this: six beats
FORGET_SEC = 3600.0  # a gone node's entry in the liveness set: its jobs are handed back long before
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
    pid_started: str = ""  # when the process started (``process_started``): tells a pid used again apart
    pid_ns: str = ""  # the PID namespace it runs in (``pid_namespace``): whose pids its pid is among
    tags: str = ""  # the node's tags, written as a pool (``reelfarm.farm.services.pools``)


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
                        encoder=encoder, pid_started=process_started(os.getpid()), pid_ns=pid_namespace())


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


class NameTaken(ValueError):
    """A node was started under the name of a node that is alive."""


# Take a name if its entry in the liveness set is still the one the caller judged (a compare and set),
# writing the node's record: KEYS seen set, node hash; ARGV name, score judged ("" for none), now, ttl,
# then the record's fields and values
_CLAIM = """
local score = redis.call('zscore', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  if score then return 0 end
elseif not score or tonumber(score) ~= tonumber(ARGV[2]) then
  return 0
end
redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
redis.call('hset', KEYS[2], unpack(ARGV, 5))
redis.call('expire', KEYS[2], ARGV[4])
return 1
"""


@dataclass(frozen=True)
class Holder:
    """What the registry says of a name now: its last beat (the raw score; None when unknown) and
    the fields of its hash that tell whose it is."""

    name: str
    score: float | None
    data: dict[str, str]

    @property
    def last_beat(self) -> float:
        return self.score if self.score is not None else 0.0

    def describe(self, now: float) -> str:
        return (f"it sent a heartbeat {max(0.0, now - self.last_beat):.1f} s ago from "
                f"{self.data.get('hostname') or 'an unknown host'} (pid {self.data.get('pid') or '?'})")


class NodeRegistry:
    """The liveness set and node hashes in Redis (module docstring); ``namespace`` keeps
    deployments sharing a Redis apart."""

    def __init__(self, redis: Any, namespace: str = "") -> None:
        self.redis = redis
        self.namespace = namespace
        self.prefix = f"reelfarm:{namespace}"

    def key(self, name: str) -> str:
        return f"{self.prefix}node:{name}"

    @property
    def seen_key(self) -> str:
        """The sorted set of node name -> time of its last heartbeat."""
        return f"{self.prefix}nodes:seen"

    # -- writes -------------------------------------------------------------------------------

    def beat(self, name: str, caps: Capabilities, *, queues: list[str], state: str,
             current_job: str | None, gpu: GpuSample | None = None, frames_quiet: float | None = None) -> None:
        """Record that the node is alive and what it is doing (and its GPU's state, when sampled;
        ``frames_quiet``: how long the chunk it runs has drawn no frame, when that is long)."""
        now = time.time()
        fields = _record(caps, gpu, queues, state, current_job, now)
        fields["frames_quiet"] = "" if frames_quiet is None else f"{frames_quiet:.1f}"
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.key(name), mapping=fields)
            pipe.expire(self.key(name), NODE_TTL_SEC)
            pipe.zadd(self.seen_key, {name: now})
            pipe.execute()

    def mark_stopped(self, name: str) -> None:
        """The node stopped: it is dead from now on (its name free at once), its record kept as long
        as a killed node's."""
        now = time.time()
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.key(name), mapping={"state": "stopped", "current_job": "", "last_seen": f"{now:.3f}"})
            pipe.zadd(self.seen_key, {name: now - ALIVE_SEC - 1}, xx=True)
            pipe.execute()

    def prune(self) -> int:
        """Forget the nodes gone for ``FORGET_SEC``; how many."""
        return int(self.redis.zremrangebyscore(self.seen_key, "-inf", time.time() - FORGET_SEC))

    # -- names --------------------------------------------------------------------------------

    def claim(self, name: str | None, caps: Capabilities | None = None, queues: Sequence[str] = (), *,
              pid: int | None = None) -> tuple[str, Holder]:
        """Take ``name`` (None: ``<host>-<n>``, the lowest slot free on this host) for the node
        ``caps`` describes, which will work ``queues`` (without ``caps``: the process ``pid`` of this
        host), writing its record as a beat would, in state "starting". Returns the name and what the
        registry held under it before (``Holder.score`` None: nobody), so that the caller can take
        over what a dead holder left.

        A name whose holder is alive on another host cannot be judged by its process: this waits
        until the holder beats again (alive: refused) or its last beat is ``ALIVE_SEC`` old (dead),
        so at most ``ALIVE_SEC``.

        Raises:
            NameTaken: a node of that name is alive.
        """
        pid = caps.pid if caps is not None else pid or os.getpid()
        caps = caps or Capabilities(socket.gethostname(), pid, 0, None, False, pid_started=process_started(pid),
                                    pid_ns=pid_namespace())
        if name is None:
            return self._claim_slot(caps, queues)
        first: Holder | None = None
        while True:
            holder = self.holder(name)
            verdict = self._judge(holder, caps)
            if verdict == "free":
                if self._take(holder, caps, queues):
                    return name, holder
                continue  # it changed under us: judge it again
            now = time.time()
            if verdict == "live" or (first is not None and holder.score != first.score):
                raise NameTaken(f"a node named {name!r} is alive: {holder.describe(now)}. Two nodes cannot share a "
                                "name: stop that node first, or start this one under another --name (without "
                                "--name it takes <host>-<n>, the lowest slot free on its host)")
            if first is None:
                log.info("node name %r: %s; waiting up to %.0f s to see whether it beats again", name,
                         holder.describe(now), holder.last_beat + ALIVE_SEC - now)
            first = first or holder
            time.sleep(min(0.5, max(0.05, holder.last_beat + ALIVE_SEC - now)))

    def _claim_slot(self, caps: Capabilities, queues: Sequence[str]) -> tuple[str, Holder]:
        slot = 1
        while True:
            holder = self.holder(f"{self.namespace}{caps.hostname}-{slot}")
            if self._judge(holder, caps) != "free":
                slot += 1  # a live node's
            elif self._take(holder, caps, queues):
                return holder.name, holder

    def holder(self, name: str) -> Holder:
        """The name's last beat and the fields of its hash that say whose it is, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.zscore(self.seen_key, name)
            pipe.hmget(self.key(name), IDENTITY_FIELDS)
            score, values = pipe.execute()
        return Holder(name, None if score is None else float(score),
                      {k: _text(v) for k, v in zip(IDENTITY_FIELDS, values) if v is not None})

    def _judge(self, holder: Holder, caps: Capabilities) -> str:
        """"free" (nobody, or a dead node), "live" (a live node), or "unsure" (a recent beat from
        another host)."""
        if holder.score is None or not _fresh(holder.last_beat) or holder.data.get("state") == "stopped":
            return "free"
        if holder.data.get("hostname") != caps.hostname or not caps.pid_ns \
                or holder.data.get("pid_ns") != caps.pid_ns:
            return "unsure"  # another host, or another PID namespace of this one: its pids are not ours
        if holder.data.get("pid") == str(caps.pid):  # a dead holder that had this process's pid (a container's)
            return "free"
        return "live" if _process_alive(holder.data) else "free"

    def _take(self, holder: Holder, caps: Capabilities, queues: Sequence[str]) -> bool:
        now = time.time()
        judged = "" if holder.score is None else repr(holder.score)
        fields = _record(caps, None, queues, "starting", None, now)
        return bool(self.redis.eval(_CLAIM, 2, self.seen_key, self.key(holder.name), holder.name, judged, repr(now),
                                    NODE_TTL_SEC, *(item for pair in fields.items() for item in pair)))

    # -- reads --------------------------------------------------------------------------------

    def live(self) -> list[str]:
        """The names of the nodes whose last beat is within ``ALIVE_SEC``: one command."""
        return [_text(raw) for raw in self.redis.zrangebyscore(self.seen_key, f"({time.time() - ALIVE_SEC}", "+inf")]

    def live_nodes(self) -> list[dict[str, Any]]:
        """The live nodes with their records (as ``nodes``): the liveness set, then the hashes of
        those nodes alone, in one pipeline."""
        return [node for node in self._records(self.live()) if node["alive"]]

    def nodes(self) -> list[dict[str, Any]]:
        """The nodes alive or seen within ``NODE_TTL_SEC`` (whose record has not expired), with
        ``alive`` and ``seen_sec_ago``."""
        since = time.time() - ALIVE_SEC - NODE_TTL_SEC
        return self._records([_text(raw) for raw in self.redis.zrangebyscore(self.seen_key, since, "+inf")])

    def _records(self, names: list[str]) -> list[dict[str, Any]]:
        if not names:
            return []
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.zmscore(self.seen_key, names)
            for name in names:
                pipe.hgetall(self.key(name))
            scores, *raws = pipe.execute()
        found, now = [], time.time()
        for name, score, raw in sorted(zip(names, scores, raws), key=lambda entry: entry[0]):
            if not raw or score is None:
                continue  # its record expired, or it was forgotten meanwhile
            data = {_text(k): _text(v) for k, v in raw.items()}
            found.append({"name": name, **data, "alive": _alive(float(score), data),
                          "set_aside": Standing.from_fields(data).set_aside(now),
                          "seen_sec_ago": round(now - float(data.get("last_seen") or score), 1)})
        return found

    def disable(self, name: str, by: str, reason: str = "") -> dict[str, Any]:
        """An operator takes node ``name`` out of work until ``enable``: it finishes the chunk it
        has and takes nothing new (kept across its restarts: the record outlives the node's own,
        which expires). Returns the record (by, at, reason); disabling again keeps the first."""
        record = {"by": by, "at": time.time(), "reason": reason}
        self.redis.hsetnx(self.disabled_key, name, json.dumps(record))
        return self.disabled(name) or record

    def enable(self, name: str) -> bool:
        """Node ``name`` takes work again; False when it was not disabled."""
        return bool(self.redis.hdel(self.disabled_key, name))

    def disabled(self, name: str) -> dict[str, Any] | None:
        """The operator's record that took node ``name`` out of work, or None."""
        raw = self.redis.hget(self.disabled_key, name)
        return json.loads(raw) if raw is not None else None

    def disabled_all(self) -> dict[str, dict[str, Any]]:
        """Every node an operator took out of work: name -> record."""
        return {_text(k): json.loads(v) for k, v in self.redis.hgetall(self.disabled_key).items()}

    @property
    def disabled_key(self) -> str:
        return f"{self.prefix}nodes:disabled"

    def known(self, name: str) -> bool:
        """Whether the registry has a record of node ``name`` (seen within ``NODE_TTL_SEC``)."""
        return bool(self.redis.exists(self.key(name)))

    def standing(self, name: str) -> Standing:
        """The node's standing (a clean one for a node without a record)."""
        values = self.redis.hmget(self.key(name), STANDING_FIELDS)
        return Standing.from_fields({k: _text(v) if v is not None else None
                                     for k, v in zip(STANDING_FIELDS, values)})

    def save_standing(self, name: str, standing: Standing) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.key(name), mapping=standing.as_fields())
            pipe.expire(self.key(name), NODE_TTL_SEC)
            pipe.execute()

    def silence(self, name: str) -> tuple[str, float] | None:
        """("dead", seconds) for a node this registry knows to be gone, ("silent", seconds) for one
        not heard from for ``SILENT_SEC`` but not yet ``ALIVE_SEC``, else None (an unknown worker
        included); the seconds since its last beat."""
        holder = self.holder(name)
        if holder.score is None:
            return None
        quiet = time.time() - holder.last_beat
        if not _alive(holder.last_beat, holder.data):
            return "dead", quiet
        return ("silent", quiet) if quiet >= SILENT_SEC else None

    def frames_quiet(self, name: str) -> float | None:
        """How long the chunk node ``name`` runs has drawn no frame, as its last beat said (only
        once that is long: ``StallWatch.quiet_report_sec``); None otherwise."""
        value = _text(self.redis.hget(self.key(name), "frames_quiet") or b"")
        return float(value) if value else None

    def is_dead(self, name: str) -> bool:
        """True only for a node this registry knows and knows to be gone; an unknown worker (a
        plain ``rq worker``) is left to RQ's own expiry."""
        holder = self.holder(name)
        return holder.score is not None and not _alive(holder.last_beat, holder.data)


IDENTITY_FIELDS = ("hostname", "pid", "pid_started", "pid_ns", "state")


def _record(caps: Capabilities, gpu: GpuSample | None, queues: Sequence[str], state: str, current_job: str | None,
            now: float) -> dict[str, str]:
    """A node's hash as a beat writes it."""
    values = {**asdict(caps), **(asdict(gpu) if gpu is not None else {})}
    fields = {k: ("" if v is None else str(int(v) if isinstance(v, bool) else v)) for k, v in values.items()}
    fields.update(queues=",".join(queues), state=state, current_job=current_job or "", last_seen=f"{now:.3f}")
    return fields


def _fresh(last_beat: float) -> bool:
    return time.time() - last_beat <= ALIVE_SEC


def _alive(last_beat: float, data: dict[str, str]) -> bool:
    """A node is alive while it beats, has not stopped and, on this host, its process exists."""
    if data.get("state") == "stopped" or not _fresh(last_beat):
        return False
    if data.get("hostname") == socket.gethostname() and data.get("pid_ns") and data.get("pid_ns") == pid_namespace():
        return _process_alive(data)
    return True


def _process_alive(data: dict[str, str]) -> bool:
    """Whether the process a record names exists on this host: its pid, started when the record
    says (a pid used again by another process is not the node)."""
    pid = data.get("pid") or ""
    if not pid.isdigit():
        return True  # nothing to tell by: the beat alone decides
    if not pid_exists(int(pid)):
        return False
    started = data.get("pid_started") or ""
    return not started or process_started(int(pid)) in ("", started)


def record_speed(redis: Any, node_key: str, fps: float) -> bool:
    """Write a node's measured chunk rate on its record (``NodeRegistry.key``), if the record exists
    (``reelfarm.farm.runtime.nodespeed``, ``reelfarm node check``); whether it did."""
    if not redis.exists(node_key):
        return False
    redis.hset(node_key, SPEED_FIELD, f"{fps:.2f}")
    return True


def pid_namespace() -> str:
    """This process's PID namespace (``pid:[4026531836]``, Linux); "" where it cannot be read."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def process_started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``), as text; ""
    where that cannot be read (not Linux, or no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else ""


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists on this machine (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
