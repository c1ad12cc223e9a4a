"""Measuring instruments for the benchmarks: memory of a process tree, CPU taken by others."""
from __future__ import annotations

import os
import threading
import time
from typing import Self


class TreeMemory:
    """Samples the summed RSS (and PSS where readable) of a process and all its descendants."""

    def __init__(self, pid: int, interval: float = 0.02, pss_every: int = 10) -> None:
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.pss_every = pss_every
        self.source = "psutil" if _has_psutil() else "/proc"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            pids = _tree(self.pid)
            # statm is cheap; smaps_rollup walks page tables, so PSS is read less often.
            self.peak_rss = max(self.peak_rss, sum(_rss(p) for p in pids))
            if n % self.pss_every == 0:
                self.peak_pss = max(self.peak_pss, sum(_pss(p) for p in pids))
            self.peak_procs = max(self.peak_procs, len(pids))
            n += 1
            self._stop.wait(self.interval)


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
        return True
    except ImportError:
        return False


def _tree(pid: int) -> list[int]:
    if _has_psutil():
        import psutil

        try:
            p = psutil.Process(pid)
            return [pid] + [c.pid for c in p.children(recursive=True)]
        except psutil.Error:
            return []
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss(pid: int) -> int:
    """Resident set in bytes (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    """Proportional set in bytes (shared pages split among sharers); 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class CpuWitness:
    """CPU time the rest of the machine used while a measurement ran (other people's jobs).

    Busy jiffies of the whole machine from /proc/stat, less this process's and its waited-for
    children's CPU time, over the wall time: "other_cores" of 0.5 means half a core was taken by
    someone else, and the figure measured is too low.
    """

    def __enter__(self) -> Self:
        self._busy0, self._own0, self._t0 = _machine_busy_s(), _own_cpu_s(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._t0
        busy, own = _machine_busy_s(), _own_cpu_s()
        if busy is None or self._busy0 is None or wall <= 0:
            self.other_cores = None
        else:
            self.other_cores = max(0.0, ((busy - self._busy0) - (own - self._own0)) / wall)


def _machine_busy_s() -> float | None:
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
