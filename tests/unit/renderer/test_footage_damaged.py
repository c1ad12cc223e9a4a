"""A clip whose file is damaged partway, or cut short, fails the render where the damage is first
shown, with an `AssetError` naming the asset and the second into the clip; the part before the
damage still draws, and a failed render leaves no output file.

The clips are those of ``test_footage`` (frame ``i`` shows ``i`` as bars; keyframes every ten
frames here), damaged the way files are: bytes inside one frame's packet overwritten, or the file
cut off inside a packet (an upload that stopped; its index at the front, as phones and web
encoders write it).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.footage import probe_clip
from reelfarm.renderer.render import render_video
from reelfarm.renderer.spec import RenderSpec
from tests.unit.renderer.test_footage import FPS, SIZE, decoded, doc, expected, make_clip, read_bars, steady

SPEC = RenderSpec("1:1", SIZE, FPS)


def packet_span(path: Path, number: int) -> tuple[int, int]:
    """Where frame `number`'s packet lies in the file: byte offset and size."""
    target = probe_clip(str(path)).pts[number]
    with av.open(str(path)) as container:
        for packet in container.demux(video=0):
            if packet.pts == target and packet.size:
                return int(packet.pos), int(packet.size)
    raise AssertionError(f"no packet for frame {number}")


def damage_frame(path: Path, number: int) -> Path:
    """Overwrite the last two thirds of frame `number`'s packet (its slice data) with garbage."""
    pos, size = packet_span(path, number)
    data = bytearray(path.read_bytes())
    for k in range(pos + size // 3, pos + size):
        data[k] = (k * 37 + 11) & 0xFF
    path.write_bytes(bytes(data))
    return path


def cut_short(path: Path, number: int) -> Path:
    """The clip with its index moved to the front, cut off in the middle of frame `number`'s packet."""
    front = path.with_name("front.mp4")
    with av.open(str(path)) as src, av.open(str(front), "w", options={"movflags": "faststart"}) as out:
        stream = out.add_stream_from_template(src.streams.video[0])
        for packet in src.demux(video=0):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    pos, size = packet_span(front, number)
    path.write_bytes(front.read_bytes()[:pos + size // 2])
    return path


@pytest.fixture
def clip(tmp_path: Path) -> list[Fraction]:
    times = steady(25, 4)  # 100 frames; keyframes at 0, 10, 20...
    make_clip(tmp_path / "clip.mp4", times, gop=10)
    return times


def test_a_clip_damaged_partway_fails_the_render_naming_the_asset_and_the_second(
        tmp_path: Path, clip: list[Fraction]) -> None:
    damage_frame(tmp_path / "clip.mp4", 30)  # a keyframe: 1.20 s into the clip
    out = tmp_path / "out.mp4"
    with pytest.raises(AssetError) as caught:
        render_video(doc({}, duration=6), str(out), SPEC, workers=1, assets=LocalAssets(tmp_path))
    assert str(caught.value).startswith(
        "video asset 'clip' could not be decoded at 1.20 s into the clip (frame 31 of 100): the file is damaged there")
    assert not out.exists(), "nothing half-written is left as the output"


def test_the_part_before_the_damage_still_draws(tmp_path: Path, clip: list[Fraction]) -> None:
    damage_frame(tmp_path / "clip.mp4", 30)
    out = tmp_path / "out.mp4"
    render_video(doc({"trim_end": 1.2, "loop": True}, duration=6), str(out), SPEC, workers=1,
                 assets=LocalAssets(tmp_path))
    shown = [read_bars(rgb) for rgb in decoded(out)]
    assert shown == [expected(clip, Fraction(n, FPS), trim_end=Fraction(6, 5), loop=True) for n in range(180)]
    assert max(shown) == 29


def test_a_damaged_p_frame_is_not_shown_as_the_frame_before_it(tmp_path: Path, clip: list[Fraction]) -> None:
    damage_frame(tmp_path / "clip.mp4", 34)
    with pytest.raises(AssetError, match=r"^video asset 'clip' could not be decoded at 1\.36 s into the clip \(frame 35 of 100\)"):
        render_video(doc({}, duration=6), str(tmp_path / "out.mp4"), SPEC, workers=1, assets=LocalAssets(tmp_path))


def test_a_clip_cut_short_fails_where_it_ends(tmp_path: Path, clip: list[Fraction]) -> None:
    cut_short(tmp_path / "clip.mp4", 60)
    out = tmp_path / "out.mp4"
    with pytest.raises(AssetError) as caught:
        render_video(doc({}, duration=6), str(out), SPEC, workers=1, assets=LocalAssets(tmp_path))
    assert str(caught.value) == ("video asset 'clip' could not be decoded at 2.40 s into the clip (frame 61 of 61): "
                                 "the file is cut short before this point")
    assert not out.exists()
