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


# The serving process drops a video decoder (FFmpeg's frame threads running) that a reference cycle
# keeps until the next collection, then forks its task processes.
DROPPED_DECODER = textwrap.dedent("""
    import gc, sys
    from fractions import Fraction
    import av, numpy as np
    from reelfarm.farm.runtime.taskprocess import fork_pool

    path = sys.argv[1]
    with av.open(path, "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for i in range(30):
            frame = av.VideoFrame.from_ndarray(np.full((240, 320, 3), i * 8, np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    gc.disable()  # what is dropped waits for a collection, as between two of the parent's
    container = av.open(path)
    video = container.streams.video[0]
    video.thread_type = "AUTO"
    next(container.decode(video))
    cycle = [container]
    cycle.append(cycle)
    del container, video, cycle
    pool = fork_pool(2, "normal")
    pool.submit(gc.collect).result()
    print("started")
    pool.shutdown()
""")


def test_task_processes_forked_beside_a_dropped_decoder_start_and_collect(tmp_path):
    import os
    import signal

    child = subprocess.Popen([sys.executable, "-c", DROPPED_DECODER, str(tmp_path / "clip.mp4")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail("the task processes never started: a child collected the decoder it inherited")
    assert child.returncode == 0 and out.strip() == "started", err
