"""Videos in the media library, probed from their bytes (``reelfarm.farm.services.media``): real
clips made here with PyAV (H.264, HEVC and AV1 in MP4/MOV, VP8 and VP9 in WebM, a phone's turned
clip, sound, variable frame rates) are measured as displayed; hostile ones (cut short, a zip named
.mp4, over 4096 pixels, too long, too many frames, sound outlasting the pictures) are refused,
each with its reason. The clips are tiny (64x48, about a second) so the tests stay quick."""
from __future__ import annotations

import io
import zipfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from reelfarm.farm.services import media
from reelfarm.farm.services.media import MediaRefused, admit

RED, BLUE = (255, 0, 0), (0, 0, 255)


def clip(fmt: str = "mp4", codec: str = "h264", size: tuple[int, int] = (64, 48), frames: int = 15, fps: int = 10,
         rotate: float | None = None, audio_sec: float | None = None, times: list[float] | None = None,
         movflags: str | None = None, tmp: Path | None = None) -> bytes:
    """A clip of ``frames`` pictures, red on the left half and blue on the right, at ``fps`` (or at
    the seconds in ``times``), turned ``rotate`` degrees counter-clockwise by its display matrix,
    with ``audio_sec`` of a tone. ``movflags`` (``faststart``) needs ``tmp``, a folder to write in."""
    target: Path | io.BytesIO = tmp / f"clip.{fmt}" if tmp is not None else io.BytesIO()
    options = {"movflags": movflags} if movflags else {}
    with av.open(target, "w", format=fmt, options=options) as container:
        video = container.add_stream(codec, rate=fps)
        video.width, video.height, video.pix_fmt = size[0], size[1], "yuv420p"
        if times is not None:
            video.codec_context.time_base = Fraction(1, 1000)
        if rotate is not None:
            video.set_display_rotation(rotate)
        sound = _sound_stream(container, "aac" if fmt in ("mp4", "mov") else "libopus") if audio_sec else None
        picture = np.zeros((size[1], size[0], 3), np.uint8)
        picture[:, : size[0] // 2], picture[:, size[0] // 2:] = RED, BLUE
        for i in range(len(times) if times is not None else frames):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            if times is not None:
                frame.pts, frame.time_base = round(times[i] * 1000), Fraction(1, 1000)
            else:
                frame.pts = i
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode(None):
            container.mux(packet)
        if sound is not None and audio_sec:
            _tone(container, sound, audio_sec)
    return target.read_bytes() if isinstance(target, Path) else target.getvalue()


def _sound_stream(container: av.container.OutputContainer, codec: str) -> av.AudioStream:
    sound = container.add_stream(codec, rate=48000)
    sound.layout = "mono"
    return sound


def _tone(container: av.container.OutputContainer, sound: av.AudioStream, seconds: float) -> None:
    total = int(48000 * seconds)
    for start in range(0, total, 960):
        tone = np.sin(np.arange(start, min(total, start + 960)) / 10).astype(np.float32).reshape(1, -1) * 0.3
        frame = av.AudioFrame.from_ndarray(tone, format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 48000, start
        for packet in sound.encode(frame):
            container.mux(packet)
    for packet in sound.encode(None):
        container.mux(packet)


def refusal(data: bytes) -> MediaRefused:
    with pytest.raises(MediaRefused) as caught:
        admit(data)
    return caught.value


def poster(found: media.Media) -> Image.Image:
    assert found.poster is not None
    image = Image.open(io.BytesIO(found.poster))
    assert image.format == "JPEG"
    return image.convert("RGB")


@pytest.mark.parametrize(("fmt", "codec", "content_type"), [
    ("mp4", "h264", "video/mp4"), ("mov", "h264", "video/quicktime"), ("mp4", "hevc", "video/mp4"),
    ("mp4", "libsvtav1", "video/mp4"), ("webm", "libvpx", "video/webm"), ("webm", "libvpx-vp9", "video/webm")])
def test_a_clip_is_measured_from_its_bytes(fmt, codec, content_type):
    data = clip(fmt, codec)
    stored, found = admit(data)
    assert stored == data
    assert (found.kind, found.content_type, found.extension) == ("video", content_type, fmt)
    assert (found.width, found.height, found.duration_sec, found.fps, found.has_audio) == (64, 48, 1.5, 10.0, False)
    image = poster(found)
    assert image.size == (64, 48)
    assert image.getpixel((8, 24))[0] > 200 and image.getpixel((56, 24))[2] > 200  # red left, blue right


@pytest.mark.parametrize(("degrees", "red_at"), [(90, (24, 56)), (-90, (24, 8))])
def test_a_turned_phone_clip_is_measured_and_shown_as_displayed(degrees, red_at):
    found = admit(clip(rotate=degrees))[1]
    assert (found.width, found.height) == (48, 64)  # taller than wide, as a phone shows it
    image = poster(found)
    assert image.size == (48, 64)
    # counter-clockwise by 90: the picture's left (red) comes to the bottom; by -90, to the top
    assert image.getpixel(red_at)[0] > 200 and image.getpixel(red_at)[2] < 60


def test_sound_is_found_and_a_little_overrun_is_taken():
    found = admit(clip(audio_sec=1.5))[1]
    assert (found.has_audio, found.duration_sec) == (True, 1.5)
    assert admit(clip("webm", "libvpx-vp9", audio_sec=1.8))[1].has_audio is True  # 0.3 s over: encoder padding


def test_sound_that_outlasts_the_pictures_is_refused():
    refused = refusal(clip(audio_sec=3.0))
    assert refused.code == "unsupported_media"
    assert "sound lasts 3.0" in refused.reason and "1.50 s of pictures" in refused.reason


def test_a_variable_rate_clip_has_its_average_rate():
    times = [0.0, 0.1, 0.15, 0.2, 0.5, 0.55, 0.6, 0.9, 0.95, 1.0]
    found = admit(clip(times=times, fps=20))[1]
    assert found.duration_sec == pytest.approx(1.05, abs=0.06)
    assert found.fps == pytest.approx(10 / found.duration_sec, abs=0.01)


def test_a_sound_in_an_mp4_is_still_a_sound():
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        _tone(container, _sound_stream(container, "aac"), 1.0)
    found = admit(out.getvalue())[1]
    assert (found.kind, found.content_type, found.poster) == ("audio", "audio/mp4", None)


def test_cut_short_clips_are_refused(tmp_path):
    whole = clip()  # its index (moov) is at its end: cut, no stream is left to read
    assert "truncated" in refusal(whole[: len(whole) * 2 // 3]).reason
    faststart = clip(frames=30, movflags="faststart", tmp=tmp_path)  # index first: the pictures run out
    assert "truncated" in refusal(faststart[: len(faststart) * 2 // 3]).reason
    webm = clip("webm", "libvpx-vp9", frames=30)
    refused = refusal(webm[: len(webm) // 2])
    assert refused.reason.startswith("the video is truncated: ") and "(3.00 s) it declares" in refused.reason


def test_a_zip_named_mp4_is_no_video():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("clip.mp4", clip())
    refused = refusal(out.getvalue())
    assert refused.code == "unsupported_media" and "an MP4, MOV or WebM video, nor an SRT or WebVTT captions file" in refused.reason


def test_more_than_4096_pixels_on_a_side_is_refused():
    refused = refusal(clip(size=(4098, 16), frames=2))
    assert refused.code == "too_large"
    assert refused.reason == "the video is 4098×16 pixels; at most 4096 pixels on a side are allowed"
    assert admit(clip(size=(4096, 16), frames=2))[1].width == 4096


def test_a_clip_longer_than_600_s_is_refused_whatever_it_declares():
    refused = refusal(clip(times=[0.0, 1.0, 700.0], fps=1))  # three pictures, 700 s apart
    assert refused.code == "too_large" and "600 s" in refused.reason


def test_too_many_frames_or_too_fast_or_too_many_pixels_is_refused(monkeypatch):
    fast = clip(times=[i / 1000 for i in range(200)], fps=1000)  # 200 frames in a fifth of a second
    refused = refusal(fast)
    assert refused.code == "too_large"
    assert refused.reason == "the video has 1000 frames a second; at most 120 are allowed"
    monkeypatch.setattr(media, "MAX_VIDEO_FRAMES", 14)  # the budget stops decoding a million tiny frames
    refused = refusal(clip("webm", "libvpx-vp9"))  # WebM declares no frame count: decoding counts
    assert (refused.code, refused.reason) == ("too_large", "the video has more than the 14 frames allowed")
    refused = refusal(clip())  # MP4 declares one: refused before decoding
    assert refused.reason == "the video has 15 frames, more than the 14 allowed"
    monkeypatch.setattr(media, "MAX_VIDEO_FRAMES", 72_000)
    monkeypatch.setattr(media, "MAX_VIDEO_PIXELS", 64 * 48 * 10)
    assert refusal(clip()).reason.startswith("the video holds more than the 30720 pixels allowed in all")
