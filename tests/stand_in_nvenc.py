"""A stand-in for NVENC on machines without it: a ``PyNvVideoCodec`` module whose encoder is libx264
at the ultrafast preset (no CABAC: another profile and other SPS/PPS than our x264 encoder's, as
NVENC's would be), with PyNvVideoCodec's call shapes (``CreateEncoder(w, h, "NV12", True, **opts)``,
``Encode`` / ``EndEncode`` returning access units). ``NvencEncoder`` runs over it for real: NV12
conversion, Annex B muxing, timestamps. Named as a stand-in wherever it is used."""
from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.renderer.nvenc import nvenc_probe


class StandInEncoder:
    """One PyNvVideoCodec encoder session; it keeps the options it was made with (``opts``) and the
    shape of each input (``inputs``) for tests to look at."""

    PRESET = "ultrafast"

    def __init__(self, width: int, height: int, fmt: str, cpu: bool, **opts: Any) -> None:
        assert fmt == "NV12" and cpu is True
        self.width, self.height, self.opts, self.inputs = width, height, opts, []
        cc = av.CodecContext.create("libx264", "w")
        cc.width, cc.height, cc.pix_fmt = width, height, "nv12"
        cc.time_base = Fraction(1, int(opts.get("fps", "30")))
        cc.max_b_frames = int(opts.get("bf", "0"))
        cc.gop_size = int(opts.get("gop", "60"))
        cc.options = {"preset": self.PRESET, "crf": "20", "repeat-headers": "1"}
        cc.open()
        self.cc, self.pts = cc, 0

    def _units(self, frame: Any) -> list[dict[str, Any]]:
        return [{"data": bytes(p)} for p in self.cc.encode(frame)]

    def Encode(self, nv12: np.ndarray) -> list[dict[str, Any]]:  # PyNvVideoCodec's name
        self.inputs.append((nv12.shape, nv12.dtype))
        frame = av.VideoFrame(self.width, self.height, "nv12")
        y_size = self.width * self.height
        frame.planes[0].update(nv12[:y_size].tobytes())
        frame.planes[1].update(nv12[y_size:].tobytes())
        frame.pts, self.pts = self.pts, self.pts + 1
        return self._units(frame)

    def EndEncode(self) -> list[dict[str, Any]]:  # PyNvVideoCodec's name
        return self._units(None)


@pytest.fixture
def stand_in_nvenc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PyNvVideoCodec replaced by the stand-in for the test (NVENC's probe then opens a session)."""
    module = types.ModuleType("PyNvVideoCodec")
    module.CreateEncoder = StandInEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", module)
    nvenc_probe.cache_clear()
    yield
    nvenc_probe.cache_clear()
