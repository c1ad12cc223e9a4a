"""Encoders write real MP4 files; these tests decode them back with PyAV."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from av.video.frame import PictureType

from reelfarm.renderer import backends, encode, nvenc, spec
from reelfarm.renderer.backends import EncoderUnavailable, choose_encoder
from reelfarm.renderer.concat import probe
from reelfarm.renderer.encode import X264Encoder, available_h264_encoders, encode_frames
from reelfarm.renderer.errors import EncodeError, RendererError
from reelfarm.renderer.nvenc import H264AnnexBMuxer, NvencEncoder, nvenc_available, nvenc_probe
from reelfarm.shared.config import ConfigError, Settings
from tests.stand_in_nvenc import StandInEncoder

W, H, FPS = 160, 90, 30


def moving_frames(n: int, width: int = W, height: int = H) -> Any:
    """A gradient with a moving rectangle, yielded in ONE reused buffer like the renderer does."""
    buf = np.empty((height, width, 4), np.uint8)
    ramp = np.linspace(0, 255, width, dtype=np.uint8)
    for i in range(n):
        buf[..., 0] = ramp
        buf[..., 1] = 80
        buf[..., 2] = 255 - ramp
        buf[..., 3] = 255
        x = (i * 3) % (width - 20)
        buf[20:50, x : x + 20, :3] = 255
        yield buf


def solid(rgb: tuple[int, int, int], width: int = W, height: int = H) -> np.ndarray:
    frame = np.empty((height, width, 4), np.uint8)
    frame[..., :3] = rgb
    frame[..., 3] = 255
    return frame


def decode_all(path: Path) -> list[av.VideoFrame]:
    with av.open(str(path)) as container:
        return list(container.decode(video=0))


def first_packet(path: Path) -> Any:
    with av.open(str(path)) as container:
        return next(p for p in container.demux(video=0) if p.size)


@pytest.fixture(scope="module")
def x264_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 s at 30 fps: long enough for a second keyframe interval to start."""
    path = tmp_path_factory.mktemp("enc") / "clip.mp4"
    assert encode_frames(X264Encoder(threads=1), str(path), W, H, FPS, moving_frames(60)) == 60
    return path


# ------------------------------------------------------------------------------ x264


def test_x264_stream_properties(x264_clip: Path) -> None:
    info = probe(str(x264_clip))
    assert (info["width"], info["height"], info["fps"], info["frames"]) == (W, H, 30.0, 60)
    assert info["codec"] == "h264"
    assert info["profile"] == "High"
    assert info["pix_fmt"] == "yuv420p"
    assert (info["color_primaries"], info["color_trc"], info["colorspace"]) == ("bt709",) * 3
    assert info["color_range"] == "tv"
    assert info["video_duration"] == pytest.approx(2.0)
    assert info["has_audio"] is False


def test_x264_frames_decode_at_exact_times(x264_clip: Path) -> None:
    frames = decode_all(x264_clip)
    assert len(frames) == 60
    assert [f.time for f in frames] == pytest.approx([i / FPS for i in range(60)], abs=1e-9)
    assert frames[0].key_frame
    assert frames[0].pict_type == PictureType.I
    assert first_packet(x264_clip).is_keyframe


def test_x264_settings_are_explicit(x264_clip: Path) -> None:
    """x264 writes its settings into an SEI: closed GOP, 2 s keyint, CRF 20, frame threads."""
    sei = x264_clip.read_bytes().split(b"x264 - core", 1)[1][:2000]
    for setting in (b"open_gop=0", b"keyint=60", b"crf=20.0", b"sliced_threads=0"):
        assert setting in sei


def test_pure_red_has_bt709_limited_luma(tmp_path: Path) -> None:
    path = tmp_path / "red.mp4"
    encode_frames(X264Encoder(), str(path), W, H, FPS, [solid((255, 0, 0))] * 3)
    frame = decode_all(path)[0]
    y = np.asarray(frame.to_ndarray()[:H])  # yuv420p ndarray: Y rows, then U and V
    assert np.abs(y.astype(int) - 63).max() <= 1
    assert frame.colorspace == 1 and frame.color_range == 1  # BT.709, MPEG/tv


def test_write_copies_the_callers_buffer(tmp_path: Path) -> None:
    """The caller reuses its buffer; frame 0 must stay black after the buffer turns white."""
    path = tmp_path / "reuse.mp4"
    buf = solid((0, 0, 0))
    enc = X264Encoder()
    enc.start(str(path), W, H, FPS)
    try:
        enc.write(buf)
        buf[..., :3] = 255
        enc.write(buf)
    finally:
        enc.finish()
    lumas = [f.to_ndarray()[:H].mean() for f in decode_all(path)]
    assert lumas[0] < 20 and lumas[1] > 230


def test_unsupported_sizes_and_settings_fail_at_start(tmp_path: Path) -> None:
    cases = [
        (X264Encoder(), str(tmp_path / "odd.mp4"), 161, 90),
        (X264Encoder(preset="warp-speed"), str(tmp_path / "preset.mp4"), W, H),
        (X264Encoder(), str(tmp_path / "missing-dir" / "x.mp4"), W, H),
    ]
    for enc, path, width, height in cases:
        with pytest.raises(EncodeError):
            enc.start(path, width, height, FPS)
        assert enc._container is None  # a failed start closes what it opened
        enc.finish()  # safe after a failed start
        enc.finish()  # and idempotent


def test_failed_write_then_finish_does_not_raise(tmp_path: Path) -> None:
    enc = X264Encoder()
    enc.start(str(tmp_path / "bad.mp4"), W, H, FPS)
    enc.write(solid((10, 20, 30)))
    with pytest.raises(EncodeError, match="RGBA frame"):
        enc.write(np.zeros((H, W, 3), np.uint8))
    with pytest.raises(EncodeError):
        enc.write(solid((10, 20, 30)))  # a failed encoder stays failed
    enc.finish()
    enc.finish()


def test_finish_without_start_is_a_noop() -> None:
    X264Encoder().finish()


def test_encode_frames_finishes_when_frames_raise(tmp_path: Path) -> None:
    def broken() -> Any:
        yield solid((0, 0, 0))
        raise RuntimeError("draw failed")

    enc = X264Encoder()
    with pytest.raises(RuntimeError, match="draw failed"):
        encode_frames(enc, str(tmp_path / "broken.mp4"), W, H, FPS, broken())
    assert enc._container is None  # closed by finish() in finally


def test_errors_share_the_renderer_base() -> None:
    assert issubclass(EncodeError, RendererError)


def test_available_h264_encoders_lists_libx264() -> None:
    names = available_h264_encoders()
    assert "libx264" in names
    assert "h264" not in names  # the decoder name is not an encoder


# ------------------------------------------------------------------------------ choosing


@pytest.fixture
def no_nvenc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvenc, "nvenc_probe", lambda gpu_index=0: (False, "no NVENC on this GPU"))


@pytest.fixture
def with_nvenc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvenc, "nvenc_probe", lambda gpu_index=0: (True, "an H.264 NVENC session opened"))


@pytest.mark.usefixtures("no_nvenc")
def test_nvenc_asked_for_where_it_cannot_be_had_is_refused_not_replaced_by_x264() -> None:
    with pytest.raises(EncoderUnavailable, match="no NVENC on this GPU"):
        choose_encoder("nvenc")
    assert choose_encoder("auto").family == "x264", "auto falls back, and says so in the log"
    enc = choose_encoder("x264").make(crf=18, preset="faster", bitrate=5_000_000)
    assert isinstance(enc, X264Encoder) and (enc.crf, enc.preset) == (18, "faster"), "NVENC's options dropped"


@pytest.mark.usefixtures("with_nvenc")
def test_auto_prefers_nvenc_where_a_session_opens() -> None:
    choice = choose_encoder("auto", gpu_index=1)
    assert (choice.family, choice.gpu_index) == ("nvenc", 1)
    enc = choice.make(crf=18, bitrate=5_000_000)
    assert isinstance(enc, NvencEncoder) and enc.bitrate == 5_000_000
    assert choose_encoder("x264").family == "x264"


def test_one_chooser_and_one_list_of_encoder_kinds() -> None:
    with pytest.raises(ValueError, match="unknown encoder 'vp9'"):
        choose_encoder("vp9")
    assert not hasattr(nvenc, "make_encoder") and not hasattr(backends, "make_rasterizer")
    assert spec.ENCODER_KINDS == ("auto", *spec.ENCODER_FAMILIES)
    for kind in ("vp9", "hevc"):  # the settings (which import nothing of the renderer) hold the same list
        with pytest.raises(ConfigError, match="REELFARM_ENCODER"):
            Settings.from_env({"REELFARM_DATA_DIR": "/nonexistent", "REELFARM_ENCODER": kind})
    for kind in spec.ENCODER_KINDS:
        assert Settings.from_env({"REELFARM_DATA_DIR": "/nonexistent", "REELFARM_ENCODER": kind}).encoder == kind


def test_nvenc_unavailable_without_pynvvideocodec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", None)  # import now raises ImportError
    nvenc_probe.cache_clear()
    try:
        assert nvenc_available() is False
        with pytest.raises(EncodeError, match="NVENC is not available"):
            NvencEncoder().start("/tmp/never.mp4", W, H, FPS)
    finally:
        nvenc_probe.cache_clear()


# ------------------------------------------------------------------------------ NVENC plumbing

# PyNvVideoCodec cannot run here (no NVIDIA GPU with NVENC). A stand-in module with the same
# call shapes (CreateEncoder(w, h, "NV12", True, **opts); Encode(flat NV12) and EndEncode()
# returning a list of {"data": access unit}) lets the surrounding code be tested: NV12
# conversion, Annex B parsing, timestamps, keyframe flags, BT.709 tagging and MP4 muxing.


class _FakeNvEncoder(StandInEncoder):
    """Encodes with libx264 at our x264 encoder's preset into raw, untagged Annex B, like NVENC with
    bf=0 would (``tests.stand_in_nvenc`` at another preset)."""

    PRESET = "veryfast"


@pytest.fixture
def fake_pynvvideocodec(monkeypatch: pytest.MonkeyPatch) -> list[_FakeNvEncoder]:
    created: list[_FakeNvEncoder] = []

    def create(width: int, height: int, fmt: str, cpu: bool, **opts: str) -> _FakeNvEncoder:
        created.append(_FakeNvEncoder(width, height, fmt, cpu, **opts))
        return created[-1]

    module = types.ModuleType("PyNvVideoCodec")
    module.CreateEncoder = create  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", module)
    nvenc_probe.cache_clear()
    yield created
    nvenc_probe.cache_clear()


def test_nvenc_plumbing_with_stand_in(tmp_path: Path, fake_pynvvideocodec: list[Any]) -> None:
    assert nvenc_available() is True
    path = tmp_path / "nvenc.mp4"
    assert encode_frames(NvencEncoder(), str(path), W, H, FPS, moving_frames(45)) == 45
    enc = fake_pynvvideocodec[-1]
    assert enc.opts["codec"] == "h264" and enc.opts["bf"] == "0" and enc.opts["gop"] == "60"
    assert enc.inputs[0] == ((W * H * 3 // 2,), np.uint8)
    info = probe(str(path))
    assert (info["width"], info["height"], info["fps"], info["frames"]) == (W, H, 30.0, 45)
    assert (info["profile"], info["pix_fmt"]) == ("High", "yuv420p")
    assert (info["color_primaries"], info["colorspace"], info["color_range"]) == (
        "bt709",
        "bt709",
        "tv",
    )
    frames = decode_all(path)
    assert [f.time for f in frames] == pytest.approx([i / FPS for i in range(45)], abs=1e-9)
    assert frames[0].key_frame and first_packet(path).is_keyframe


def test_nvenc_red_is_converted_with_bt709(tmp_path: Path, fake_pynvvideocodec: list[Any]) -> None:
    path = tmp_path / "nvenc-red.mp4"
    encode_frames(NvencEncoder(), str(path), W, H, FPS, [solid((255, 0, 0))] * 2)
    y = decode_all(path)[0].to_ndarray()[:H].astype(int)
    assert np.abs(y - 63).max() <= 1


def test_annexb_muxer_tags_and_times_a_raw_stream(tmp_path: Path) -> None:
    fake = _FakeNvEncoder(W, H, "NV12", True, fps="30", gop="10")
    sws = encode.VideoReformatter()
    data = b"".join(
        bytes(p["data"])
        for frame in moving_frames(25)
        for p in fake.Encode(encode.rgba_to_bt709(sws, frame, "nv12").to_ndarray().reshape(-1))
    ) + b"".join(bytes(p["data"]) for p in fake.EndEncode())
    muxer = H264AnnexBMuxer(str(tmp_path / "raw.mp4"), W, H, FPS)
    for i in range(0, len(data), 777):  # arbitrary chunking: the parser reassembles frames
        muxer.write(data[i : i + 777])
    muxer.close()
    assert muxer.frames == 25
    frames = decode_all(tmp_path / "raw.mp4")
    assert [i for i, f in enumerate(frames) if f.key_frame] == [0, 10, 20]
    assert probe(str(tmp_path / "raw.mp4"))["color_primaries"] == "bt709"


@pytest.mark.skipif(
    not nvenc_available(), reason="needs an NVIDIA GPU with NVENC and PyNvVideoCodec (none here)"
)
def test_real_nvenc_output(tmp_path: Path) -> None:
    path = tmp_path / "real-nvenc.mp4"
    assert (
        encode_frames(NvencEncoder(), str(path), 320, 180, FPS, moving_frames(60, 320, 180)) == 60
    )
    info = probe(str(path))
    assert (info["frames"], info["profile"], info["pix_fmt"]) == (60, "High", "yuv420p")
    assert (info["color_primaries"], info["color_range"]) == ("bt709", "tv")
    frames = decode_all(path)
    assert [f.time for f in frames] == pytest.approx([i / FPS for i in range(60)], abs=1e-9)
    red = tmp_path / "real-nvenc-red.mp4"
    encode_frames(NvencEncoder(), str(red), 320, 180, FPS, [solid((255, 0, 0), 320, 180)] * 2)
    y = decode_all(red)[0].to_ndarray()[:180].astype(int)
    assert np.abs(y[8:-8, 8:-8] - 63).max() <= 2


# ------------------------------------------------------------------------------ choosing the encoder family

def test_x264_is_chosen_when_asked_and_auto_falls_back_to_it_without_nvenc() -> None:
    from reelfarm.renderer.backends import EncoderChoice, choose_encoder

    nvenc_probe.cache_clear()
    assert choose_encoder("x264") == EncoderChoice("x264")
    assert choose_encoder("auto").family == "x264"  # no NVENC here
    assert isinstance(choose_encoder("auto").make(threads=1), X264Encoder)
    with pytest.raises(ValueError, match="unknown encoder 'vp9'"):
        choose_encoder("vp9")


def test_nvenc_asked_for_where_it_cannot_be_had_is_refused_with_the_probes_reason() -> None:
    from reelfarm.renderer.backends import EncoderUnavailable, choose_encoder

    nvenc_probe.cache_clear()
    ok, reason = nvenc_probe()
    assert not ok and ("no NVIDIA GPU 0 or driver" in reason or "PyNvVideoCodec cannot be loaded" in reason)
    with pytest.raises(EncoderUnavailable, match=f"NVENC cannot be used: {re.escape(reason)}"):
        choose_encoder("nvenc")


def test_a_gpu_without_encoder_units_and_a_full_session_table_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("PyNvVideoCodec")
    failures = iter([RuntimeError("NV_ENC_ERR_UNSUPPORTED_DEVICE"), RuntimeError("NV_ENC_ERR_OUT_OF_MEMORY")])

    def create(*_: Any, **__: Any) -> None:
        raise next(failures)

    module.CreateEncoder = create  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", module)
    nvenc_probe.cache_clear()
    try:
        assert nvenc_probe(0) == (False, "no NVENC on this GPU (NV_ENC_ERR_UNSUPPORTED_DEVICE)")
        assert nvenc_probe(1)[1].startswith("the GPU's NVENC sessions are all in use")
    finally:
        nvenc_probe.cache_clear()


def test_auto_is_nvenc_where_a_session_opens_and_its_encoders_drop_x264_options(
        fake_pynvvideocodec: list[Any]) -> None:
    from reelfarm.renderer.backends import choose_encoder

    chosen = choose_encoder("auto")
    assert chosen.family == "nvenc"
    encoder = chosen.make(threads=1, crf=18)  # x264's options are not NVENC's: dropped
    assert isinstance(encoder, NvencEncoder)


@pytest.mark.parametrize(("width", "height"), [(1080, 1350), (720, 900)])  # 4:5 at 1080p and at 720p
def test_frames_of_planes_keep_their_size_and_colours_whatever_the_height(tmp_path: Path, width: int,
                                                                          height: int) -> None:
    """The CPU rasterizer's yuv420p planes wrapped for the encoder: at 1080 x 1350 (chroma planes
    of an odd number of rows) PyAV's wrapping made a frame 1348 rows high with its chroma read
    from the wrong place."""
    from reelfarm.renderer.yuv import Bt709Planes

    bgra = np.zeros((height, width, 4), np.uint8)
    bgra[: height // 2] = (230, 40, 20, 255)  # blue above (B, G, R, A)
    bgra[height // 2:] = (20, 40, 230, 255)  # red below
    planes = Bt709Planes(width, height).convert(bgra, "bgra", None)
    assert (encode.yuv420p_frame(planes).width, encode.yuv420p_frame(planes).height) == (width, height)
    path = tmp_path / "planes.mp4"
    enc = X264Encoder()
    enc.start(str(path), width, height, FPS, pixel_format="yuv420p")
    try:
        for _ in range(3):
            enc.write(planes)
    finally:
        enc.finish()
    for frame in decode_all(path):
        rgb = frame.to_ndarray(format="rgb24").astype(int)
        top, bottom = rgb[height // 4, width // 2], rgb[height * 3 // 4, width // 2]
        assert top[2] > 180 and top[0] < 60, top
        assert bottom[0] > 180 and bottom[2] < 60, bottom
        assert np.abs(rgb[: height // 2 - 8] - top).max() <= 12  # one colour all over, no band of another
