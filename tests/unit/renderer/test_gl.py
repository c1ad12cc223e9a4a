"""The GL rasterizer for real: EGL on whatever GL this machine has (Mesa llvmpipe without a GPU).

These never skip: a machine without libEGL/Mesa fails them (CI installs libegl1, libgl1,
libegl-mesa0 and libgl1-mesa-dri).
"""
from __future__ import annotations

import logging

import av
import numpy as np
import pytest
from av.video.reformatter import VideoReformatter

from reelfarm.renderer.backends import RasterChoice, choose_raster
from reelfarm.renderer.concat import probe
from reelfarm.renderer.encode import rgba_to_bt709
from reelfarm.renderer.gl import GLRasterizer, mismatch_fraction
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer, to_rgba
from reelfarm.renderer.render import render_video
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still


def _moving_doc(doc):
    doc["scenes"][0]["layers"].append(
        {"id": "dot", "type": "shape", "shape": "ellipse", "x": 0.1, "y": 0.5, "w": 0.2, "h": 0.3,
         "fill": "#F59E0B", "keyframes": {"x": [{"t": 0, "v": 0.1}, {"t": 3, "v": 0.9}]}})
    return doc


def test_gl_draws_what_the_cpu_draws(doc):
    parsed = parse_doc(doc)
    cpu, gl = SkiaRasterizer(parsed, "16:9", 320, 180), GLRasterizer(parsed, "16:9", 320, 180)
    assert gl.pixel_format == "rgba" and gl.session.renderer
    for t in (0.0, 1.0, 2.9, 3.2, 5.9):  # both scenes and the transition between them
        assert mismatch_fraction(to_rgba(gl.render(t), "rgba"), to_rgba(cpu.render(t), cpu.pixel_format)) <= 0.003


def test_gpu_yuv_matches_swscale_and_keeps_red_at_y63():
    """Tolerance: 1 level on every plane against swscale with area averaging, which takes the
    mean of each 2x2 block for chroma as the GPU does (rounding differs by at most 1). Against
    swscale's default bilinear chroma, only samples on sharp colour edges differ (mean 0.06)."""
    red = {"version": 1, "fps": 30, "duration": 6, "format": "16:9",
           "scenes": [{"id": "s", "duration": 6, "background": {"type": "solid", "color": "#FF0000"},
                       "layers": [{"id": "t", "type": "text", "text": "Colour", "x": 0.5, "y": 0.5,
                                   "color": "#00FF80", "size": 0.2}]}]}
    parsed = parse_doc(red)
    rgba = GLRasterizer(parsed, "16:9", 640, 360).render(0.5).copy()
    yuv = GLRasterizer(parsed, "16:9", 640, 360, yuv=True)
    planes = yuv.render(0.5)
    assert yuv.pixel_format == "yuv420p" and planes.shape == (540, 640)
    source = av.VideoFrame.from_numpy_buffer(rgba, format="rgba")
    area = VideoReformatter().reformat(source, format="yuv420p", src_colorspace="ITU709", dst_colorspace="ITU709",
                                       src_color_range="JPEG", dst_color_range="MPEG", interpolation="AREA")
    assert np.abs(planes.astype(int) - area.to_ndarray()).max() <= 1
    bilinear = rgba_to_bt709(VideoReformatter(), rgba, "yuv420p", src_format="rgba").to_ndarray()
    assert np.abs(planes[:360].astype(int) - bilinear[:360]).max() <= 1
    assert np.abs(planes[360:].astype(int) - bilinear[360:]).mean() < 0.2
    assert planes[5, 5] == 63  # BT.709 limited range: pure red


def test_a_gl_mp4_is_tagged_and_matches_the_cpu_mp4(doc, tmp_path):
    doc = _moving_doc(doc)
    spec = RenderSpec("16:9", 180, 30)
    stats = render_video(doc, str(tmp_path / "gl.mp4"), spec, workers=2, raster="gl")
    render_video(doc, str(tmp_path / "cpu.mp4"), spec, workers=1, raster="cpu")
    info = probe(str(tmp_path / "gl.mp4"))
    assert info["frames"] == stats.frames == 180 and (info["width"], info["height"]) == (320, 180)
    assert info["colorspace"] == "bt709" and info["color_range"] == "tv" and info["profile"] == "High"
    with av.open(str(tmp_path / "gl.mp4")) as a, av.open(str(tmp_path / "cpu.mp4")) as b:
        pairs = zip(a.decode(video=0), b.decode(video=0))
        errors = [np.abs(fa.to_ndarray(format="yuv420p").astype(int) - fb.to_ndarray(format="yuv420p")).mean()
                  for fa, fb in pairs]
    assert len(errors) == 180 and max(errors) < 1.5  # every frame in place, none from a neighbour


def test_gl_stills_match_cpu_stills(doc):
    spec = RenderSpec("4:5", 180)
    gl, cpu = render_still(doc, 2.0, spec, raster="gl"), render_still(doc, 2.0, spec, raster="cpu")
    assert gl.shape == cpu.shape == (224, 180, 4) and mismatch_fraction(gl, cpu) <= 0.003


def test_auto_never_picks_software_gl():
    choice = choose_raster("auto")
    assert choice == RasterChoice("cpu") or choice.hardware_only
    assert choose_raster("gl", gpu_index=1) == RasterChoice("gl", 1)
    with pytest.raises(ValueError, match="auto, cpu, gl"):
        choose_raster("vulkan")


def test_hardware_only_gl_without_an_nvidia_gpu_falls_back_to_the_cpu_with_a_reason(doc, caplog):
    from reelfarm.renderer.gpu import nvidia_gpu_present
    if nvidia_gpu_present(7):
        pytest.skip("this machine has an NVIDIA GPU 7; the fallback needs a missing one")
    with caplog.at_level(logging.WARNING, "reelfarm.renderer.backends"):
        raster = RasterChoice("gl", gpu_index=7, hardware_only=True).make(parse_doc(doc), RenderSpec("16:9", 180))
    assert isinstance(raster, SkiaRasterizer) and not isinstance(raster, GLRasterizer)
    assert "no NVIDIA EGL device with CUDA index 7" in caplog.text and "drawing on the CPU" in caplog.text


def _device(position, *extensions, cuda=None):
    from reelfarm.renderer.gl import EGLDevice
    return EGLDevice(position, extensions, cuda)


def test_the_device_rule_takes_nvidia_by_cuda_index_and_software_only_when_asked():
    from reelfarm.renderer.gl import pick_device
    software = _device(0, "EGL_MESA_device_software", "EGL_EXT_device_drm_render_node")
    drm = _device(1, "EGL_EXT_device_drm")
    gpu1 = _device(2, "EGL_NV_device_cuda", "EGL_EXT_device_drm", cuda=1)
    gpu0 = _device(3, "EGL_NV_device_cuda", cuda=0)
    devices = [software, drm, gpu1, gpu0]
    assert pick_device(devices, "nvidia", 0) == gpu0 and pick_device(devices, "nvidia", 1) == gpu1
    assert pick_device(devices, "nvidia", 2) is None  # never another GPU, never Mesa's device
    assert pick_device([software, drm], "nvidia", 0) is None
    assert pick_device(devices, "software") == software
    assert pick_device([drm, gpu0], "software") is None
    unknown = [_device(0, "EGL_NV_device_cuda"), _device(1, "EGL_NV_device_cuda")]  # CUDA index not given
    assert pick_device(unknown, "nvidia", 1) == unknown[1]
    assert [d.kind for d in devices] == ["software", "other", "nvidia", "nvidia"]
    assert gpu1.describe() == "NVIDIA EGL device, CUDA index 1"


def test_the_device_choice_comes_from_the_argument_then_the_environment(monkeypatch):
    from reelfarm.renderer.errors import RasterError
    from reelfarm.renderer.gl import egl_device_choice, gl_session
    monkeypatch.delenv("REELFARM_EGL_DEVICE", raising=False)
    assert egl_device_choice() == "nvidia" and egl_device_choice("software") == "software"
    monkeypatch.setenv("REELFARM_EGL_DEVICE", "Software")
    assert egl_device_choice() == "software" and egl_device_choice("nvidia") == "nvidia"
    monkeypatch.setenv("REELFARM_EGL_DEVICE", "vulkan")
    with pytest.raises(RasterError, match="unknown EGL device 'vulkan'"):
        egl_device_choice()
    with pytest.raises(RasterError, match="software EGL device was asked for.*hardware GL is required"):
        gl_session(hardware_only=True, device="software")


def test_mesa_enumerates_a_software_device_and_gl_runs_on_it_through_the_device_platform(doc, monkeypatch):
    """Mesa's EGL lists its software device (EGL_MESA_device_software); REELFARM_EGL_DEVICE=software
    opens it with eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device), as an NVIDIA node opens its GPU."""
    from reelfarm.renderer.gl import egl_devices
    assert "software" in [d.kind for d in egl_devices()]
    monkeypatch.setenv("REELFARM_EGL_DEVICE", "software")
    parsed = parse_doc(doc)
    gl = GLRasterizer(parsed, "16:9", 320, 180)
    assert gl.session.platform == "device" and gl.session.device.startswith("Mesa software EGL device")
    assert gl.session.software and "llvmpipe" in gl.session.renderer
    cpu = SkiaRasterizer(parsed, "16:9", 320, 180)
    assert mismatch_fraction(to_rgba(gl.render(1.0), "rgba"), to_rgba(cpu.render(1.0), cpu.pixel_format)) <= 0.003


def test_two_sessions_in_one_process_each_draw_in_their_own_context(doc):
    """A rasterizer makes its session's context current before it draws, so rasterizers on the
    surfaceless display and on the device platform can take turns in one process."""
    from reelfarm.renderer.gl import compare_frames
    parsed = parse_doc(doc)
    cpu = SkiaRasterizer(parsed, "16:9", 320, 180)
    surfaceless = GLRasterizer(parsed, "16:9", 320, 180, device="nvidia")
    device = GLRasterizer(parsed, "16:9", 320, 180, device="software")
    assert surfaceless.session is not device.session
    for t in (0.5, 2.0, 4.0):
        expected = to_rgba(cpu.render(t), cpu.pixel_format)
        for gl in (surfaceless, device, surfaceless):
            diff = compare_frames(to_rgba(gl.render(t), "rgba").copy(), expected)
            assert diff.ok and diff.mismatch <= 0.003 and diff.max_diff < 255
    surfaceless.close()
    device.close()


def test_frame_comparison_reports_max_mean_and_mismatch_against_the_goldens_tolerance():
    from reelfarm.renderer.gl import GL_MAX_MISMATCH, compare_frames
    base = np.zeros((40, 40, 4), np.uint8)
    base[10:30, 10:30] = 200
    same = compare_frames(base, base)
    assert (same.max_diff, same.mean_diff, same.mismatch, same.ok) == (0, 0.0, 0.0, True)
    changed = base.copy()
    changed[0:6, 0:6, :3] = 255
    diff = compare_frames(changed, base)
    assert diff.max_diff == 255 and diff.mismatch > GL_MAX_MISMATCH and not diff.ok
    assert diff.mean_diff == pytest.approx(255 * 36 / 1600)
    cropped = compare_frames(base[:20], base)
    assert cropped == compare_frames(base, base[:, :20]) and not cropped.ok
