"""A draft proxy (``reelfarm.farm.services.proxies.write_proxy``) shows the clip's pictures at the
clip's times: a variable-rate clip keeps every timestamp and its length; a phone clip turned by
its display matrix comes out upright; a clip already small gets none."""
from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from reelfarm.farm.services.proxies import PROXY_SIDE, ProxyRefused, proxy_size, write_proxy
from reelfarm.renderer.footage import ClipReader, probe_clip
from tests.unit.renderer.test_footage import make_clip, read_bars, steady


def same_pictures(src: Path, proxy: str, width: int, height: int, vertical: bool = True) -> None:
    original, copied = ClipReader(str(src)), ClipReader(proxy)
    try:
        assert copied.index.starts == original.index.starts and copied.index.duration == original.index.duration
        for n in range(len(original.index.pts)):
            a = original.image(n, width, height).toarray()[..., :3]
            b = copied.image(n, width, height).toarray()[..., :3]
            assert read_bars(b, vertical) == read_bars(a, vertical), n
            assert np.abs(a.astype(int) - b.astype(int)).mean() < 8, n
    finally:
        original.close()
        copied.close()


def test_a_variable_rate_clip_keeps_every_timestamp_and_its_length(tmp_path: Path) -> None:
    rng = random.Random(7)
    times = sorted({Fraction(rng.randint(0, 2000), 1000) for _ in range(40)} | {Fraction(0)})
    src = make_clip(tmp_path / "vfr.mp4", times, 720, 400, gop=25)
    made = write_proxy(str(src), str(tmp_path / "proxy.mp4"))
    assert (made.width, made.height, made.frames) == (648, PROXY_SIDE, len(times))
    same_pictures(src, made.path, made.width, made.height)
    index = probe_clip(made.path)
    keys = set(index.keyframes)
    last_key = 0.0
    for pts, start in zip(index.pts, index.starts, strict=True):  # no frame is half a second past a keyframe
        if pts in keys:
            last_key = start
        assert start - last_key < 0.5, (start, last_key)


def test_a_turned_phone_clip_comes_out_upright(tmp_path: Path) -> None:
    src = make_clip(tmp_path / "phone.mp4", steady(25, 1), 720, 400, rotation=90, gop=25)
    made = write_proxy(str(src), str(tmp_path / "proxy.mp4"))
    assert (made.width, made.height) == (PROXY_SIDE, 648)
    assert ClipReader(made.path).frame(0).rotation == 0
    same_pictures(src, made.path, made.width, made.height, vertical=False)


def test_a_turned_clip_whose_coded_height_is_not_a_multiple_of_four_comes_out_upright(tmp_path: Path) -> None:
    """Turned upright, this clip is coded 362 rows high at the proxy's size: its chroma planes have
    181 rows, which slicing the planes by whole rows of luma width cut short (no proxy made)."""
    src = make_clip(tmp_path / "square.mp4", steady(25, 0.4), 720, 724, rotation=90, gop=25)
    made = write_proxy(str(src), str(tmp_path / "proxy.mp4"))
    assert (made.width, made.height) == (362, PROXY_SIDE)
    same_pictures(src, made.path, made.width, made.height, vertical=False)


def test_a_clip_already_small_gets_no_proxy(tmp_path: Path) -> None:
    assert proxy_size(640, 360) is None and proxy_size(1920, 1080) == (640, 360)
    assert proxy_size(1080, 1920) == (360, 640) and proxy_size(1000, 1001) == (360, 360)
    src = make_clip(tmp_path / "small.mp4", steady(25, 0.2), 640, 360)
    with pytest.raises(ProxyRefused, match="360 pixels or less"):
        write_proxy(str(src), str(tmp_path / "proxy.mp4"))
