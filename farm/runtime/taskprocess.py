"""What runs inside the embedded queue's pool processes (``reelfarm.farm.runtime.embedded``): their
initializer (a lower priority, signals left to the serving process, death with it) and the call
that runs one task and hands its freed memory back before the next."""
from __future__ import annotations

import functools
import gc
import logging
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from reelfarm.farm.runtime.queue import resolve

log = logging.getLogger("reelfarm.farm")

# Added to the serving process's niceness in every pool process (``REELFARM_TASK_PRIORITY``):
# ``idle`` the most there is. At +19 a process weighs 15 against a request thread's 1024 in the
# kernel's scheduler (+10: 110): by those weights four renders drawing would take about 3% of the
# cores from a burst of requests, not 18% (worked out, not measured). With ``idle`` pool processes
# are also SCHED_IDLE on Linux (``lower_priority``).
TASK_NICENESS = {"idle": 19, "low": 10, "normal": 0}
_PR_SET_PDEATHSIG = 1


def fork_pool(workers: int, priority: str) -> ProcessPoolExecutor:
    """A pool of ``workers`` task processes, each forked now (where the platform forks).

    What the serving process has dropped but not yet collected is collected here first, and what
    is left is frozen (``gc.freeze``) while the children fork, so that no child ever collects what
    it inherited: an object whose finalizer needs a thread of the parent never runs in a child,
    where that thread does not exist. A dropped video decoder is one (FFmpeg's frame threads: its
    ``avcodec_free_context`` waits on their condition variables for ever, and the pool with it).
    """
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    gc.collect()
    gc.freeze()
    try:
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=prepare, initargs=(priority,))
        pool.submit(noop).result()  # fork every worker now, before the caller does anything else
    finally:
        gc.unfreeze()
    return pool


def execute(func_path: str, args: Sequence[Any]) -> None:
    """Runs in a pool process; hands the task's freed memory back before the next task."""
    try:
        resolve(func_path)(*args)
    finally:
        release_free_memory()


def release_free_memory() -> None:
    """Collect a finished task's cyclic garbage and give the free pages of the C heap back.

    A chunk allocates and frees frame-sized buffers (3.7 MB a frame at 720p, 33 MB at 4K). Once
    glibc has freed one such block it raises its mmap threshold past that size, serves the next
    ones from its heap and keeps what is freed there: a long-lived pool process held 50-60 MB of
    free heap between 720p tasks, which its RSS counted. ``malloc_trim(0)`` hands
    those pages back in a few milliseconds; the collection before it takes 30-130 ms (a chunk
    takes seconds). Elsewhere than glibc nothing is trimmed.
    """
    gc.collect()
    trim = malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # a C library without it (musl)
        return None


def noop() -> None:
    return None



def prepare(priority: str = "idle") -> None:
    """Pool process initializer: yield the cores to the serving process's request threads (as far
    as ``priority`` says), leave SIGINT and SIGTERM to the serving process
    (``reelfarm.farm.runtime.embedded``'s docstring, "Stopping"), and end with it should it be
    killed (a worker past gunicorn's graceful timeout), so that no task runs on while the next
    start runs it again."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent()
    lower_priority(priority)


def lower_priority(priority: str = "idle") -> None:
    """This process (and the threads it starts later) at ``TASK_NICENESS[priority]`` and, for
    ``idle`` on Linux, in the SCHED_IDLE class: it runs on a core only while nothing else wants it.

    That is also its cost: SCHED_IDLE yields to every other process of the host, not only to the
    server's request threads, so on a host whose cores other work keeps busy, renders wait until
    that work ends (a GIF's stitch, 5 s of work, had not ended after 10 minutes beside four busy
    processes on two cores). ``low`` (niceness +10) still yields most of the cores to anything
    else; ``normal`` shares them evenly: the choices for a host that does other work.

    With niceness alone, in the burst of ``benchmarks.burst`` (4 request threads a worker, 4 renders
    drawing) about one run in two had every create take 24 ms in the server instead of 14 and the
    creates' p99 at 0.7-0.85 s; with SCHED_IDLE every run gave 0.49-0.62 s (six runs each,
    interleaved). The likely cause: a core running a niced render still looks busy to the kernel
    when it places a waking request thread, and one with only SCHED_IDLE work counts as idle, so
    request threads are no longer put beside each other. Lowering one's own class needs no
    privilege."""
    if priority == "normal":
        return
    try:
        os.nice(TASK_NICENESS[priority])
    except OSError as exc:  # not allowed to (a container without CAP_SYS_NICE only blocks raising it)
        log.warning("could not lower the priority of a task process: %s", exc)
    if priority == "idle" and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError as exc:  # a kernel without the class
            log.warning("could not make a task process SCHED_IDLE: %s", exc)


def die_with_parent() -> None:
    """SIGKILL this process when the one that forked it exits (Linux's ``PR_SET_PDEATHSIG``)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError) as exc:
        log.warning("a task process cannot be tied to the serving process: %s", exc)
        return
    if os.getppid() != parent:  # its parent died before it could be told
        os.kill(os.getpid(), signal.SIGKILL)
