"""Small asset files made on the fly for tests, running a function in a forked child while
another thread holds some locks, and waiting for the product's background work."""
from __future__ import annotations

import ast
import contextlib
import os
import signal
import threading
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

WORK_CEILING_SEC = 600.0
"""How long a test waits for work the product does in the background (a render, a still, a job, a
webhook delivery, a server starting) before it calls the test hung. A ceiling that stops a stuck
test, never a claim about speed: on a loaded machine (other tests beside it, and the embedded
farm's task processes in SCHED_IDLE, which run only on cores nothing else wants) seconds of work
can take minutes. Bounds the product promises (time to detect, to recover) are asserted as such."""
WORK_CEILING_MS = int(WORK_CEILING_SEC * 1000)  # the same, for Playwright's waits


def write_tone(path: Path, seconds: float, freq: float = 440.0, rate: int = 48000) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    samples = (0.5 * np.sin(2 * np.pi * freq * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    return path


def write_png(path: Path, width: int = 320, height: int = 200) -> Path:
    from PIL import Image

    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([x * 255 // width, y * 255 // height, np.full_like(x, 128)], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(path)
    return path


def absolute_imports(package_root: Path) -> Iterator[tuple[str, str]]:
    """(file name, module) for every absolute import in a package's files, at any depth."""
    for path in package_root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                yield from ((path.name, a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield path.name, node.module


def part_of(module: str) -> str:
    """The part a module belongs to: ``reelfarm.farm.runtime.tasks`` -> ``farm``; ``reelfarm.cli`` ->
    ``reelfarm``; a third-party module -> its top-level name (``flask``)."""
    names = module.split(".")
    return names[1] if names[0] == "reelfarm" and len(names) > 1 else names[0]


def in_a_fork(work: Callable[[], object]) -> int:
    """The exit status of a forked child that runs ``work``; 3 when it has not ended in 10 s."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            work()
        finally:
            os._exit(0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return 3


@contextlib.contextmanager
def held_by_another_thread(*locks: Any) -> Iterator[None]:
    """``locks`` held by another thread for as long as the block runs (what a fork meets when it
    happens while a serving thread is inside them)."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        holder.join()


def hung(what: str) -> str:
    """The message of a wait on background work that reached ``WORK_CEILING_SEC``."""
    return f"{what}: not seen in {WORK_CEILING_SEC:g} s, the ceiling of a wait on background work (the test is stuck)"


def wait_until(check: Callable[[], T], what: str, every: float = 0.2) -> T:
    """``check()``'s first truthy answer, asked every ``every`` seconds; AssertionError naming
    ``what`` once ``WORK_CEILING_SEC`` have passed without one."""
    deadline = time.monotonic() + WORK_CEILING_SEC
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(hung(what))
        time.sleep(every)


def slide(control: Any, value: float) -> None:
    """Move a console slider (a Playwright locator of an ``<input type=range>``) to ``value`` as a
    person's drag does, firing ``input``; first waits for the page's deferred script to have run,
    since the heading of a page just opened shows before its script listens."""
    control.page.wait_for_load_state("domcontentloaded")
    control.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)
