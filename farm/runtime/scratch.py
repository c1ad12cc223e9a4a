"""Scratch folders for chunk and stitch work, which a killed process cannot leave behind for good.

A chunk draws and encodes into a temporary folder. A process killed mid-chunk (SIGKILL, the OOM
killer, a node losing power) never runs its cleanup, so these folders live under one root the
node owns, ``<system temp>/reelfarm-scratch`` (``TMPDIR`` moves it), each named
``<kind>-<pid>-<random>`` and holding an exclusive ``flock`` on its ``.owner`` file for as long
as its process (or a child it forked) works in it. The kernel drops the lock when the process
dies, however it dies, so ``remove_stale`` can tell an abandoned folder from a busy one without
trusting pids (which are reused): a folder whose lock it can take is removed. The node runs it at
start and in every maintenance round.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("reelfarm.farm")

ROOT_NAME = "reelfarm-scratch"
OWNER_FILE = ".owner"


def scratch_root() -> Path:
    """The folder every scratch folder of this machine lives in (created on first use)."""
    root = Path(tempfile.gettempdir()) / ROOT_NAME
    root.mkdir(mode=0o700, exist_ok=True)
    return root


@contextlib.contextmanager
def scratch_dir(kind: str) -> Iterator[str]:
    """A fresh folder for one piece of work, locked while it is used and removed afterwards."""
    path = tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=scratch_root())
    fd = os.open(os.path.join(path, OWNER_FILE), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


def remove_stale(root: Path | None = None) -> list[str]:
    """Remove the scratch folders no living process holds; returns their names."""
    root = root or scratch_root()
    removed: list[str] = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.is_dir() and _abandoned(entry):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    if removed:
        log.info("removed %d scratch folder(s) left by processes that died: %s", len(removed), ", ".join(removed))
    return removed


def _abandoned(folder: Path) -> bool:
    try:
        fd = os.open(folder / OWNER_FILE, os.O_RDWR)
    except FileNotFoundError:
        return _older_than(folder, 60.0)  # killed between creating the folder and its owner file
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # also releases the lock, if it was taken
    return True


def _older_than(folder: Path, seconds: float) -> bool:
    try:
        return time.time() - folder.stat().st_mtime > seconds
    except OSError:
        return False
