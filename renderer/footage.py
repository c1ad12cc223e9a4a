"""Video clips as frames to draw: which clip frame a layer shows at an instant, and its pixels.

A clip is indexed once (its packets read, not decoded): the presentation timestamps of its frames,
sorted, and which of them are keyframes. The frame shown at clip second ``u`` is the one whose
presentation interval contains ``u`` (the last frame presented at or before it), whatever the
clip's frame rate, constant or not. That is a function of ``(doc, t)`` alone:
``u = trim_start + (t - layer start) * speed``, wrapped at ``trim_end`` when the layer loops, held
on the last frame before ``trim_end`` when it does not (`clip_frame`).

A `ClipReader` brings a frame's pixels by seeking to the nearest keyframe at or before it and
decoding forward (skipping the pictures before it that no other picture refers to); the frame
decoded last is kept, so the frames of one chunk, asked in order,
are each decoded once and a seek happens only when a keyframe lies between the frame held and
the one wanted (or the wanted one is earlier). A frame the index lists that decoding does not
deliver intact (a damaged file: the decoder refuses a packet, drops the picture, or patches it
from its neighbours), or one presented from where the file ends inside a packet (an upload cut
short), is an `AssetError` naming the clip and the second into it: never the frame before it
shown in its place. Frames are turned as the clip's display matrix says (phone footage),
stretched by its sample aspect ratio, and scaled by swscale to the size drawn.
`ClipStore` keeps at most `MAX_OPEN_READERS` decoders open per rasterizer, least recently used
first out, so memory stays bounded however many clips a video uses.
"""
from __future__ import annotations

import bisect
import math
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import numpy as np
import skia

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Doc, Footage

Rect = tuple[float, float, float, float]  # left, top, width, height
MAX_OPEN_READERS = 4
EPSILON = 1e-6  # seconds: float noise in t * speed, far below any frame's duration


@dataclass(frozen=True)
class ClipIndex:
    """The frames of a clip's first video stream: presentation times in seconds from its first
    frame (`starts`), their timestamps in the stream (`pts`), and the keyframes' timestamps."""

    pts: tuple[int, ...]
    starts: tuple[float, ...]
    keyframes: tuple[int, ...]
    duration: float
    damaged_from: int | None = None  # the timestamp of the first packet the file holds only part of

    def start(self, number: int) -> float:
        """Where frame `number` is presented, in seconds from the clip's first frame."""
        return self.starts[number]

    def frame_at(self, u: float, limit: float | None = None) -> int:
        """The frame whose presentation interval contains clip second `u`, among the frames that
        start before `limit` (the clip's end when None)."""
        last = len(self.starts) - 1
        if limit is not None:
            last = min(last, bisect.bisect_left(self.starts, limit - EPSILON) - 1)
        return max(0, min(bisect.bisect_right(self.starts, u + EPSILON) - 1, last))

    def keyframe_before(self, pts: int) -> int | None:
        i = bisect.bisect_right(self.keyframes, pts) - 1
        return self.keyframes[i] if i >= 0 else None


def clip_time(footage: Footage, elapsed: float, duration: float) -> tuple[float, float]:
    """The clip second shown `elapsed` seconds into a layer, and where the part used ends."""
    end = duration if footage.trim_end is None else min(footage.trim_end, duration)
    x = max(0.0, elapsed) * footage.speed
    span = end - footage.trim_start
    if footage.loop and span > EPSILON:
        x -= math.floor((x + EPSILON) / span) * span
        x = max(0.0, x)
    return footage.trim_start + x, end


def clip_frame(index: ClipIndex, footage: Footage, elapsed: float) -> int:
    """The number of the clip frame shown `elapsed` seconds into a layer playing `footage`."""
    u, end = clip_time(footage, elapsed, index.duration)
    return index.frame_at(min(u, end), end)


def index_clip(container: Any, stream: Any) -> ClipIndex:
    """Read the packets of `stream` (without decoding them) into a `ClipIndex`."""
    frames: dict[int, tuple[bool, int]] = {}
    damaged: int | None = None
    for packet in container.demux(stream):
        if packet.pts is None or packet.size == 0 or packet.is_discard:
            continue
        frames[packet.pts] = (bool(packet.is_keyframe), int(packet.duration or 0))
        if packet.is_corrupt and (damaged is None or packet.pts < damaged):
            damaged = packet.pts  # read in part: the file ends inside it
    if not frames:
        frames = _decoded_frames(container, stream)
    if not frames:
        raise AssetError("the clip has no video frames")
    pts = tuple(sorted(frames))
    base = Fraction(stream.time_base)
    starts = tuple(float((p - pts[0]) * base) for p in pts)
    # The last frame lasts as long as the one before it, or longer when its packet says so (muxers
    # often write a token duration for it).
    last_length = max(frames[pts[-1]][1], pts[-1] - pts[-2] if len(pts) > 1 else 0)
    duration = float((pts[-1] - pts[0] + last_length) * base)
    if duration <= 0:
        rate = stream.average_rate or stream.guessed_rate or 25
        duration = starts[-1] + 1.0 / float(rate)
    keys = tuple(p for p in pts if frames[p][0]) or (pts[0],)
    return ClipIndex(pts, starts, keys, duration, damaged)


def _decoded_frames(container: Any, stream: Any) -> dict[int, tuple[bool, int]]:
    # A stream whose packets carry no timestamps (a raw elementary stream): decode to learn them.
    container.seek(0)
    return {f.pts: (bool(f.key_frame), int(f.duration or 0)) for f in container.decode(stream) if f.pts is not None}


def probe_clip(path: str) -> ClipIndex:
    """The `ClipIndex` of the video file at `path`.

    Raises:
        AssetError: when it cannot be opened or has no video stream.
    """
    container, stream = _open(path)
    try:
        return index_clip(container, stream)
    finally:
        container.close()


def _open(path: str) -> tuple[Any, Any]:
    try:
        container = av.open(path)
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise AssetError(f"not a readable video file ({exc})") from None
    if not container.streams.video:
        container.close()
        raise AssetError("the file has no video stream")
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    return container, stream


def fit_size(sw: float, sh: float, bw: float, bh: float, fit: str) -> tuple[int, int, Rect]:
    """The pixel size to scale a `sw` x `sh` picture to for a `bw` x `bh` box, and where it goes in
    the box (box-relative); `cover` is cropped around the centre when drawn."""
    if fit == "fill":
        return max(1, round(bw)), max(1, round(bh)), (0.0, 0.0, bw, bh)
    scale = (max if fit == "cover" else min)(bw / sw, bh / sh)
    tw, th = max(1, round(sw * scale)), max(1, round(sh * scale))
    if fit == "cover":
        return tw, th, (0.0, 0.0, bw, bh)
    return tw, th, ((bw - tw) / 2.0, (bh - th) / 2.0, float(tw), float(th))


def display_size(frame: Any, sar: Fraction | None = None) -> tuple[float, float]:
    """A decoded frame's size as shown: stretched by the sample aspect ratio `sar`, then turned."""
    w = frame.width * (float(sar) if sar else 1.0)
    h = float(frame.height)
    return (h, w) if _quarter_turns(frame) % 2 else (w, h)


def _quarter_turns(frame: Any) -> int:
    # frame.rotation: degrees counter-clockwise that the display matrix turns the picture by
    return round((frame.rotation or 0) / 90.0) % 4


def frame_image(frame: Any, width: int, height: int) -> skia.Image:
    """`frame` scaled to `width` x `height` as shown (turned by its display matrix), as a BGRA image."""
    turns = _quarter_turns(frame)
    w, h = (height, width) if turns % 2 else (width, height)
    pixels = frame.reformat(width=w, height=h, format="bgra").to_ndarray()
    if turns:
        pixels = np.rot90(pixels, turns)
    return skia.Image.fromarray(np.ascontiguousarray(pixels), colorType=skia.kBGRA_8888_ColorType,
                                alphaType=skia.kOpaque_AlphaType)


class ClipReader:
    """One decoder over one clip; see the module docstring for when it seeks."""

    def __init__(self, path: str, index: ClipIndex | None = None, name: str | None = None) -> None:
        self.name = f"video asset {name!r}" if name is not None else "the clip"
        self.container, self.stream = _open(path)
        self.index = index or index_clip(self.container, self.stream)
        self.sar = self.stream.codec_context.sample_aspect_ratio or self.stream.sample_aspect_ratio
        self._frames: Iterator[Any] | None = None
        self._last: Any = None      # the last frame decoded at or before the one asked for
        self._ahead: Any = None     # a frame decoded past the one asked for, kept for the next ask
        self._image: tuple[tuple[int, int, int], skia.Image] | None = None
        self.decoded = 0            # frames decoded so far
        self._target: int | None = None  # the timestamp asked for: pictures before it may be skipped
        self.seeks = 0

    def frame(self, number: int) -> Any:
        """The decoded frame number `number` of the index.

        Raises:
            AssetError: when the file does not yield that frame (damaged, or cut short).
        """
        target = self.index.pts[number]
        if self._last is not None and self._last.pts == target:
            found = self._last
        else:
            found = self._find(number, target)
        if found.is_corrupt:  # a picture patched from its neighbours, not the one the file meant to show
            raise self._undecodable(number, "the file is damaged there (the decoder could only patch the picture)")
        return found

    def _find(self, number: int, target: int) -> Any:
        damaged = self.index.damaged_from
        if damaged is not None and target >= damaged:
            raise self._undecodable(number, "the file is cut short before this point")
        try:
            if not self._can_continue(target):
                self._seek(self.index.keyframe_before(target))
            found = self._decode_to(target)
            if found is None and self._last is None:  # the seek landed past the frame: from the start
                self._seek(None)
                found = self._decode_to(target)
        except av.FFmpegError as exc:
            self._frames = None  # the decoder stopped at the damage: a later ask starts afresh
            self._last = self._ahead = None
            said = str(getattr(exc, "strerror", None) or exc).rstrip(".").lower()
            raise self._undecodable(number, f"the file is damaged there (the decoder reports: {said})") from None
        if found is None:  # decoded up to it, and it is not there: the decoder dropped a damaged packet
            raise self._undecodable(number, "the file is damaged there (the decoder gave no picture for it)")
        return found

    def _undecodable(self, number: int, why: str) -> AssetError:
        return AssetError(f"{self.name} could not be decoded at {self.index.start(number):.2f} s into the clip "
                          f"(frame {number + 1} of {len(self.index.pts)}): {why}")

    def image(self, number: int, width: int, height: int) -> skia.Image:
        """Frame `number` as shown, scaled to `width` x `height` (the last one asked is kept)."""
        key = (number, width, height)
        if self._image is None or self._image[0] != key:
            self._image = (key, frame_image(self.frame(number), width, height))
        return self._image[1]

    def close(self) -> None:
        self._frames = None
        self._last = self._ahead = self._image = None
        self.container.close()

    def _can_continue(self, target: int) -> bool:
        held = self._ahead if self._ahead is not None else self._last
        if held is None or self._frames is None or held.pts > target:
            return False
        key = self.index.keyframe_before(target)
        return key is None or key <= held.pts

    def _seek(self, keyframe: int | None) -> None:
        self.seeks += 1
        self.container.seek(keyframe if keyframe is not None else self.index.pts[0],
                            stream=self.stream, backward=True, any_frame=False)
        self._frames = self._decoded()
        self._last = self._ahead = None

    def _decoded(self) -> Iterator[Any]:
        """The stream's frames from where it was sought, as ``container.decode`` gives them, but for
        pictures no other picture refers to that are presented before the frame asked for: those
        are never shown, and the decoder is told to skip them (about half of the pictures between
        a keyframe and a frame far from it, in footage with B-frames). Every picture decoded is
        the one a full decode gives, bit for bit (``tests/unit/renderer/test_footage.py``)."""
        context = self.stream.codec_context
        for packet in self.container.demux(self.stream):
            early = packet.pts is not None and self._target is not None and packet.pts < self._target
            skip = "NONREF" if early and not packet.is_keyframe else "DEFAULT"
            if context.skip_frame != skip:
                context.skip_frame = skip
            yield from context.decode(packet)

    def _decode_to(self, target: int) -> Any:
        self._target = target
        if self._ahead is not None:
            if self._ahead.pts > target:
                return self._last if self._last is not None and self._last.pts == target else None
            self._last, self._ahead = self._ahead, None
            if self._last.pts == target:
                return self._last
        assert self._frames is not None
        for frame in self._frames:
            if frame.pts is None:
                continue
            self.decoded += 1
            if frame.pts > target:
                self._ahead = frame
                break
            self._last = frame
            if frame.pts == target:
                break
        if self._last is None or self._last.pts != target:
            return None
        return self._last


class ClipStore:
    """The clips of one document: their indexes (kept) and a few open decoders (bounded)."""

    def __init__(self, doc: Doc, assets: AssetSource | None, max_open: int = MAX_OPEN_READERS) -> None:
        self.doc = doc
        self.assets = assets
        self.max_open = max_open
        self._paths: dict[str, str] = {}
        self._indexes: dict[str, ClipIndex] = {}
        self._readers: OrderedDict[tuple[str, str], ClipReader] = OrderedDict()

    def index(self, asset_id: str) -> ClipIndex:
        if asset_id not in self._indexes:
            self._indexes[asset_id] = self._named(asset_id, lambda: probe_clip(self.path(asset_id)))
        return self._indexes[asset_id]

    def frame_number(self, asset_id: str, footage: Footage, elapsed: float) -> int:
        return clip_frame(self.index(asset_id), footage, elapsed)

    def path(self, asset_id: str) -> str:
        if asset_id not in self._paths:
            asset = self.doc.asset(asset_id)
            if asset is None:
                raise AssetError(f"asset {asset_id!r} is not in the document's asset table")
            if asset.type != "video":
                raise AssetError(f"asset {asset_id!r} is {asset.type}, not video")
            if self.assets is None:
                raise AssetError(f"asset {asset_id!r}: no asset source was given to the renderer")
            self._paths[asset_id] = self.assets.path(asset_id, asset)
        return self._paths[asset_id]

    def reader(self, asset_id: str, slot: str) -> ClipReader:
        """The decoder of `asset_id` for one place that shows it (a layer, a scene's background):
        two layers showing one clip at different times each keep their own position."""
        key = (asset_id, slot)
        reader = self._readers.get(key)
        if reader is None:
            index = self.index(asset_id)
            reader = self._named(asset_id, lambda: ClipReader(self.path(asset_id), index, asset_id))
            self._readers[key] = reader
            while len(self._readers) > self.max_open:
                self._readers.popitem(last=False)[1].close()
        self._readers.move_to_end(key)
        return reader

    def fitted(self, asset_id: str, slot: str, number: int, box_w: float, box_h: float, fit: str,
               zoom: float = 1.0) -> tuple[skia.Image, Rect]:
        """Clip frame `number` scaled for a box, and where it goes in the box (box-relative);
        `cover` is scaled `zoom` times over, for Ken Burns."""
        reader = self.reader(asset_id, slot)
        frame = self._named(asset_id, lambda: reader.frame(number))
        sw, sh = display_size(frame, reader.sar)
        tw, th, dest = fit_size(sw, sh, box_w * (zoom if fit == "cover" else 1.0),
                                box_h * (zoom if fit == "cover" else 1.0), fit)
        if fit == "cover":
            dest = (0.0, 0.0, box_w, box_h)
        return reader.image(number, tw, th), dest

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    @staticmethod
    def _named(asset_id: str, make: Any) -> Any:
        try:
            return make()
        except AssetError as exc:
            if asset_id in str(exc):
                raise
            raise AssetError(f"video asset {asset_id!r}: {exc}") from None
        except av.FFmpegError as exc:
            raise AssetError(f"video asset {asset_id!r} could not be decoded: {exc}") from None
