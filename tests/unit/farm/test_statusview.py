"""``reelfarm farm status``'s view: a node's Redis strings typed for ``--json``, and the text view
within 80 columns with every id whole, on a busy GPU node, a node set aside, a held-up render."""
from __future__ import annotations

import time

from reelfarm.farm.runtime.statusview import status_lines, typed_node, typed_status

GPU_NODE = {"name": "gpu-node-eu-west-1a-0007", "hostname": "render-7.internal.example.com", "pid": "4121",
            "cores": "64", "gpu": "NVIDIA L4", "nvenc": "1", "raster": "gl",
            "gl_renderer": "NVIDIA L4/PCIe/SSE2", "encoder": "nvenc", "nvml": "ok",
            "gpu_memory_total": str(24 * 1024 ** 3), "gpu_memory_used": str(6 * 1024 ** 3),
            "gpu_utilization": "87", "nvenc_capacity": "40", "queues": "render-gpu,render,jobs", "state": "busy",
            "current_job": "render-0f1e2d3c-4b5a-6978-8877-665544332211-chunk-12", "last_seen": "1795856003.377",
            "failures": "0", "failure": "", "set_aside_until": "0.000", "alive": True, "set_aside": False,
            "seen_sec_ago": 1.2}
SET_ASIDE = {**GPU_NODE, "name": "cpu-node-2", "gpu": "", "nvenc": "0", "raster": "cpu", "gl_renderer": "",
             "encoder": "x264", "gpu_memory_total": "", "gpu_memory_used": "", "gpu_utilization": "",
             "nvenc_capacity": "", "queues": "render,jobs", "state": "set aside", "current_job": "",
             "failures": "3", "failure": "EncodeError: [Errno 28] No space left on device while writing the segment "
             "of chunk 4 to /var/lib/reelfarm/scratch", "set_aside_until": f"{time.time() + 300:.3f}",
             "set_aside": True}
RENDER = {"id": "0f1e2d3c-4b5a-6978-8877-665544332211", "status": "running", "format": "9:16", "encoder": "nvenc",
          "raster": "gl", "reused_frames": 30, "resolution": 2160, "fps": 60, "frames_done": 1234,
          "frames_total": 3600, "chunks": 12, "elapsed_sec": 41.5, "frames_per_sec": 29.7,
          "held_up": {"chunk": 3, "reason": "node_stopped", "message": "waiting for chunk 3 (its node stopped)"}}
STATUS = {"mode": "farm", "nodes": [GPU_NODE, SET_ASIDE],
          "queues": {"render": {"queued": 3, "waiting": 120, "started": 2, "deferred": 1, "scheduled": 0,
                                "failed": 0}, "render-gpu": {"queued": 0, "waiting": 4, "started": 1,
                                                             "deferred": 0, "scheduled": 0, "failed": 7}},
          "workspaces": [{"id": "3c2b1a09-8f7e-4d6c-9b5a-1234567890ab", "name": "A workspace with a long name indeed",
                          "running": 12, "waiting": 340, "waiting_frames": 1_234_567, "weight": 2.0, "cap": 16,
                          "share": 0.6667}],
          "renders": [RENDER]}


def test_a_nodes_fields_are_typed_for_json() -> None:
    node = typed_node(GPU_NODE)
    assert (node["pid"], node["cores"], node["gpu_utilization"], node["nvenc_capacity"], node["failures"]) == \
        (4121, 64, 87, 40, 0)
    assert node["gpu_memory_total"] == 24 * 1024 ** 3 and node["last_seen"] == 1795856003.377
    assert node["nvenc"] is True and node["queues"] == ["render-gpu", "render", "jobs"]
    plain = typed_node(SET_ASIDE)
    assert plain["gpu"] is None and plain["nvenc"] is False and plain["gpu_memory_total"] is None
    assert plain["failures"] == 3 and plain["current_job"] is None
    assert typed_status(STATUS)["nodes"] == [node, plain] and STATUS["nodes"][0]["pid"] == "4121"


def test_the_text_view_fits_80_columns_and_keeps_ids_whole() -> None:
    lines = status_lines(typed_status(STATUS), 80)
    text = "\n".join(lines)
    assert max(len(line) for line in lines) <= 80, text
    flat = " ".join(text.split())
    for whole in (GPU_NODE["name"], GPU_NODE["current_job"], RENDER["id"]):  # never cut across lines
        assert any(whole in line for line in lines), whole
    assert "gpu-node-eu-west-1a-0007: busy, job render-0f1e2d3c-4b5a-6978-8877-665544332211-chunk-12" in flat
    assert "GPU NVIDIA L4 (6.0/24.0 GiB, 87 % busy); NVENC yes (40 % free)" in flat
    assert "cpu-node-2: set aside until" in flat and "No space left on device while writing" in flat
    assert f"{RENDER['id']} running: waiting for chunk 3 (its node stopped)" in flat
    assert "    9:16 2160p60, nvenc/gl; 1234/3600 frames (30 reused); 29.7 frames/s; 41.5 s" in lines
    assert "  A workspace with a~ 3c2b1a09       12      340  1,234,567       2   16   67 %" in lines
    assert "  render-gpu         0       7       0          0        1        4" in lines
    assert max(len(line) for line in status_lines(typed_status(STATUS), 200)) > 80  # a wide terminal is used


def test_an_idle_embedded_farm_says_so() -> None:
    lines = status_lines({"mode": "embedded", "nodes": [], "queues": {}, "workspaces": [], "renders": []})
    assert lines == ["mode: embedded", "", "queues", "  (none)", "", "renders in flight: none"]
