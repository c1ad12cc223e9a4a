"""`reelfarm node check` on this machine (no GPU): the CPU is fine, GL runs on llvmpipe (software),
NVML finds no driver and NVENC none; a CPU node passes, a node asked for hardware GL or for NVENC
fails. Every run draws a story's reference frame on GL and on the CPU and compares them for real.

On a GPU node, not run here: `reelfarm node check --raster gl --hardware-gl --encoder auto` should
report NVIDIA's EGL device and renderer, NVML's model, memory and driver, and (on a GPU with
NVENC units) 60 of 60 frames decoded, and exit 0."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from reelfarm.farm.runtime.nodecheck import check_command
from reelfarm.renderer.gpu import nvidia_gpu_present

pytestmark = pytest.mark.skipif(nvidia_gpu_present(), reason="describes a machine without an NVIDIA GPU")


def _check(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(check_command, ["--quick", "--json", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.output)


def test_a_cpu_node_passes_and_reports_software_gl_no_nvml_and_no_nvenc() -> None:
    asked = ("REELFARM_RASTER", "REELFARM_ENCODER", "REELFARM_EGL_DEVICE")
    env = {k: v for k, v in os.environ.items() if k not in asked}
    done = subprocess.run([sys.executable, "-m", "reelfarm.cli", "node", "check", "--quick", "--json"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["problems"] == []
    assert report["host"]["cores"] == os.cpu_count() and report["host"]["hostname"]
    gl = report["gl"]
    assert gl["ok"] and gl["software"] and "llvmpipe" in gl["renderer"] and gl["platform"] == "surfaceless"
    assert any("EGL_MESA_device_software" in device for device in gl["devices"])
    (story,) = report["stories"]  # --quick: one story, compared for real
    assert story["ok"] and story["resolution"] == 360 and story["tolerance"] == 0.005
    assert story["mismatch"] <= story["tolerance"] and 0 < story["max_diff"] < 255 and story["mean_diff"] < 2
    assert not report["nvml"]["ok"] and report["nvml"]["reason"].startswith("NVML")
    assert not report["nvenc"]["ok"] and not report["nvenc"]["session"] and "/dev/nvidia0 absent" in report["nvenc"][
        "reason"]
    speed = report["speed"]
    assert speed["x264_fps"] > 0 and speed["cpu_raster_fps"] > 0 and speed["gl_raster_fps"] > 0
    assert report["raster"] == {"kind": "cpu", "hardware_only": False, "draws": "cpu", "ok": True,
                                "why": "auto: no NVIDIA GPU 0 here, so the CPU"}
    assert report["encoder"]["family"] == "x264" and report["encoder"]["ok"]
    assert report["queues"]["work"] == ["render", "jobs"]


def test_gl_on_llvmpipe_passes_only_where_gl_need_not_be_hardware() -> None:
    code, report = _check("--raster", "gl")
    assert code == 0 and report["raster"]["kind"] == "gl" and report["raster"]["draws"] == "gl"
    assert report["queues"]["work"] == ["render-gpu", "render", "jobs"]
    code, report = _check("--raster", "gl", "--hardware-gl")
    assert code == 1 and not report["raster"]["ok"] and report["raster"]["hardware_only"]
    assert report["problems"] == [report["problems"][0]] and "hardware GL is required but the renderer is software" \
        in report["problems"][0]
    assert report["queues"]["work"] == ["render", "jobs"]  # the worker would draw on the CPU


def test_nvenc_without_a_working_probe_fails_the_check() -> None:
    code, report = _check("--raster", "cpu", "--encoder", "nvenc")
    assert code == 1 and report["encoder"] == {"family": "nvenc", "ok": False, "why": "asked for NVENC"}
    assert len(report["problems"]) == 1 and report["problems"][0].startswith("NVENC is required but its probe failed")


def test_gl_frames_unlike_the_cpus_fail_a_gl_node(monkeypatch: pytest.MonkeyPatch) -> None:
    from reelfarm.renderer.gl import GLRasterizer

    draw = GLRasterizer.render

    def smudged(self: GLRasterizer, t: float) -> np.ndarray:
        frame = draw(self, t).copy()
        corner = frame[: frame.shape[0] // 4, : frame.shape[1] // 4, :3]
        corner[...] = 255 - corner
        return frame

    monkeypatch.setattr(GLRasterizer, "render", smudged)
    code, report = _check("--raster", "gl")
    assert code == 1 and not report["stories"][0]["ok"] and report["stories"][0]["mismatch"] > 0.005
    assert "beyond the goldens' tolerance: announcement" in report["problems"][0]


def test_the_device_platform_is_reported_when_the_software_device_is_asked_for() -> None:
    code, report = _check("--raster", "gl", env={"REELFARM_EGL_DEVICE": "software"})
    assert code == 0 and report["gl"]["platform"] == "device" and report["gl"]["asked"] == "software"
    assert report["gl"]["device"] == "Mesa software EGL device (EGL_MESA_device_software)"
    assert report["stories"][0]["ok"]


def test_the_table_names_each_finding_and_the_verdict() -> None:
    result = CliRunner().invoke(check_command, ["--quick", "--raster", "gl", "--hardware-gl"], terminal_width=200)
    assert result.exit_code == 1
    for text in ("llvmpipe", "(software)", "NVML", "NVENC", "x264", "announcement", "render,jobs",
                 "hardware GL is required", "cannot serve what it is configured for"):
        assert text in result.output, text


def test_hardware_gl_needs_gl_and_a_queue_is_needed() -> None:
    usage = CliRunner().invoke(check_command, ["--raster", "cpu", "--hardware-gl"])
    assert usage.exit_code == 2 and "--hardware-gl needs --raster gl" in usage.output
    code, report = _check("--raster", "cpu", "--encoder", "x264", "--queues", "render-gpu")
    assert code == 1 and report["queues"]["dropped"] == ["render-gpu"] and report["encoder"]["why"] == "asked for x264"
    assert report["problems"] == ["no queue left to work: render-gpu needs a node that draws with GL"]
