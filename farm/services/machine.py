"""What this machine can do (hostname, cores, GPU, NVENC), for the pages that show the embedded
mode's one node: read once per process, since probing the GPU takes a moment."""
from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def this_machine() -> Any:
    from reelfarm.farm.runtime.nodes import detect_capabilities

    return detect_capabilities()
