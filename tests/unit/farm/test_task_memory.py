"""A pool process gives a finished task's freed memory back (``reelfarm.farm.runtime.embedded``)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from reelfarm.farm.runtime.taskprocess import malloc_trim

# What a chunk does to glibc's heap: frame-sized blocks, served from the heap once one mmapped
# block was freed, each followed by a smaller block that outlives it; then the frames are freed.
FRAGMENTED_HEAP = textwrap.dedent("""
    import ctypes
    from reelfarm.farm.runtime.taskprocess import release_free_memory

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    FRAME = 4 << 20

    def rss_mb():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096 / 2**20

    libc.free(libc.malloc(FRAME))
    frames, kept = [], []
    for _ in range(40):
        frames.append(libc.malloc(FRAME))
        ctypes.memset(frames[-1], 1, FRAME)
        kept.append(libc.malloc(64 * 1024))
    for block in frames:
        libc.free(block)
    before = rss_mb()
    release_free_memory()
    print(before, rss_mb())
""")


@pytest.mark.skipif(malloc_trim() is None, reason="a C library without malloc_trim")
def test_the_free_heap_a_task_leaves_goes_back_to_the_kernel():
    out = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, check=True)
    before, after = map(float, out.stdout.split())
    assert before - after > 120, (before, after)  # 160 MB of freed frames were held
