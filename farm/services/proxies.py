"""Draft proxies: a small H.264 copy of each library clip, made once, that drafts draw from.

A draft is drawn at 360p (``reelfarm.farm.services.drafts``); decoding a 1080p or 4K clip to show it
at that size costs most of a draft's frame. So a draft draws a library clip from its *proxy*: the
same pictures at ``PROXY_SIDE`` pixels on their short side, upright with square pixels (the clip's
display matrix and sample aspect ratio applied), a keyframe every ``KEYFRAME_SEC`` and no B-frames
(a draft's chunk starts anywhere in a clip, so seeks must be cheap), no sound (a draft is about
the picture). Every picture keeps its presentation time and the clip keeps its length, so the
clip frame a draft shows at an instant is the one the full render shows (``renderer.footage``
picks frames by time); a proxy whose index (``probe_clip``) is not the original's, to the
microsecond, is not stored. Full renders and stills never use a proxy: only the draft's asset
source (``DraftClips``) knows of them.

Where. Beside the clip in its workspace's library, ``assets/<workspace>/<sha256>.proxy.mp4``
(``storage_keys.asset_proxy_key``). No library row names that key, so no document can name it,
the workspace's own included (``reelfarm.shared.repos.objects``); a draft reaches it only through
the library row of the workspace whose document names the clip. The same bytes uploaded by two
workspaces are two rows, two keys and two proxies. Deleting the asset (``library.AssetService.delete``)
and the retention round deleting it (``reelfarm.farm.runtime.retention``) delete its proxy too.

When. Lazily, the first time a draft draws the clip, and after that draft's chunk has stored its
segment: that chunk drew from the original, and its segment is playable before the proxy is made
(its worker is busy with the proxy for a while after: about as long as decoding the clip once).
Every later draft, and the later chunks of this one that start after it, draw the proxy. Making
one at upload would hold up the upload request (the library has no background job), and would
make proxies of clips nobody previews. A proxy is made only of a clip whose short side is over
``PROXY_SIDE``; a smaller one is drawn from itself.

Once. Before making one, a chunk stores a *claim* beside it (``<sha256>.proxy.claim``: ``making``
and when); a chunk that finds one younger than ``CLAIM_SEC`` leaves the proxy to its maker and
draws from the original meanwhile. Two chunks that look at the same instant may both make it. Each
makes a whole proxy checked against the clip (x264 on one thread, so nearly always the same bytes;
a one-byte difference in a keyframe was seen once in tests, and either copy shows the same
frames), and a put replaces the whole object at once on both storages, so a reader sees one whole
proxy or none. A proxy that cannot be made turns the claim to ``failed``, and the clip is tried
again after ``RETRY_SEC``, not by every chunk; storage trouble removes the claim, and the next
draft tries again. A stored proxy that does not open is deleted, drawn around, and made again.

Failure. Making a proxy never fails a draft: whatever goes wrong (the clip does not decode, storage
refuses, the proxy's frames would not match, it takes over ``MAKE_SEC``, which keeps it well inside
a chunk job's time) is logged with why, and drafts keep the original.
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

import av
import numpy as np
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.footage import ClipIndex, display_size, probe_clip
from reelfarm.renderer.model import Asset
from reelfarm.shared import storage_keys
from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import ObjectNotFound, StorageError
from reelfarm.shared.repos import assets as assets_repo
from reelfarm.shared.storage import Storage

log = logging.getLogger("reelfarm.farm")

PROXY_SIDE = 360
KEYFRAME_SEC = 0.5
CRF = 26
MAKE_SEC = 300.0  # a proxy taking longer is given up: a draft chunk's job has 600 s in all
CLAIM_SEC = 600.0  # a claim being made holds this long (longer than MAKE_SEC: its maker died)
RETRY_SEC = 24 * 3600.0  # a proxy that could not be made is tried again after this
PROXY_CONTENT_TYPE = "video/mp4"


class ProxyRefused(Exception):
    """A proxy of the clip cannot be made, or would not show the original's frames; says why."""


@dataclass(frozen=True)
class Proxy:
    """A proxy written to a local file: its size and frame count."""

    path: str
    width: int
    height: int
    frames: int


def proxy_size(width: float, height: float, side: int = PROXY_SIDE) -> tuple[int, int] | None:
    """The even pixel size of the proxy of a clip shown at ``width`` x ``height``; None when its
    short side is already ``side`` or less (the clip is its own proxy)."""
    short = min(width, height)
    if short <= side:
        return None
    scale = side / short
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def write_proxy(src: str, dst: str, side: int = PROXY_SIDE, budget: float = MAKE_SEC) -> Proxy:
    """Write the proxy of the clip at ``src`` to ``dst`` (MP4) and check that it holds the
    original's frames at the original's times.

    Raises:
        ProxyRefused: the clip does not decode, is small enough already, took more than
            ``budget`` seconds, or the proxy's index is not the original's.
    """
    try:
        original = probe_clip(src)
        made = _encode(src, dst, side, original, budget)
        copied = probe_clip(dst)
    except (AssetError, av.FFmpegError, OSError, ValueError) as exc:
        raise ProxyRefused(f"the clip could not be read or written ({exc})") from None
    _check_same_frames(original, copied)
    return made


def _encode(src: str, dst: str, side: int, original: ClipIndex, budget: float) -> Proxy:
    deadline = time.monotonic() + budget
    with av.open(src) as source:
        stream = source.streams.video[0]
        stream.thread_type = "AUTO"
        if stream.time_base is None:
            raise ProxyRefused("the clip's video stream has no time base")
        sar = stream.codec_context.sample_aspect_ratio or stream.sample_aspect_ratio
        with av.open(dst, "w", format="mp4") as out:
            writer: _Writer | None = None
            for frame in source.decode(stream):
                if frame.pts is None:
                    raise ProxyRefused("a picture of the clip has no presentation time")
                if writer is None:
                    size = proxy_size(*display_size(frame, sar), side=side)
                    if size is None:
                        raise ProxyRefused(f"the clip is {side} pixels or less on its short side already")
                    writer = _Writer(out, stream, frame, *size)
                    # the last picture lasts as long as the clip's did, so the clip ends when it did
                    writer.last_duration = (round(Fraction(original.duration) / Fraction(stream.time_base))
                                            - (original.pts[-1] - original.pts[0]))
                writer.write(frame)
                if time.monotonic() > deadline:
                    raise ProxyRefused(f"making it took longer than {budget:g} s")
            if writer is None:
                raise ProxyRefused("the clip has no pictures that decode")
            writer.finish()
            return Proxy(dst, writer.width, writer.height, writer.frames)


class _Writer:
    """One x264 stream of upright, square-pixel pictures at the source's timestamps."""

    def __init__(self, out: Any, source: Any, first: Any, width: int, height: int) -> None:
        self.out, self.width, self.height, self.frames = out, width, height, 0
        self.last_duration = 0
        self._held: Any = None  # the packet written last is held until its duration is known
        self.turns = round((first.rotation or 0) / 90.0) % 4
        rate = source.average_rate or source.guessed_rate or Fraction(30)
        gop = max(1, round(float(rate) * KEYFRAME_SEC))
        self.stream = out.add_stream("libx264", rate=rate, options={
            "preset": "veryfast", "crf": str(CRF), "tune": "fastdecode", "forced-idr": "1",
            "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0"})
        self.key_every = round(KEYFRAME_SEC / source.time_base)  # a variable-rate clip's gaps vary: by time too
        self._last_key: int | None = None
        self.stream.width, self.stream.height, self.stream.pix_fmt = width, height, "yuv420p"
        self.stream.time_base = source.time_base
        context = self.stream.codec_context
        context.time_base = source.time_base
        context.thread_count = 1  # one thread: (nearly always) the same bytes whichever node makes it
        for tag in ("colorspace", "color_range", "color_primaries", "color_trc"):
            value = getattr(first, tag, None)
            if value:
                setattr(context, tag, value)

    def write(self, frame: Any) -> None:
        picture = self._upright(frame)
        picture.pts, picture.time_base = frame.pts, frame.time_base
        if self._last_key is None or frame.pts - self._last_key >= self.key_every:
            picture.pict_type = av.video.frame.PictureType.I
            self._last_key = frame.pts
        if frame.duration:
            picture.duration = frame.duration
        self._mux(self.stream.encode(picture))
        self.frames += 1

    def finish(self) -> None:
        self._mux(self.stream.encode(None))
        if self._held is not None:
            if self.last_duration > 0:
                self._held.duration = self.last_duration
            self.out.mux(self._held)

    def _mux(self, packets: list[Any]) -> None:
        for packet in packets:
            if self._held is not None:
                self.out.mux(self._held)
            self._held = packet

    def _upright(self, frame: Any) -> Any:
        """The picture scaled, turned upright, in a frame of its own: a frame handed on from the
        decoder carries the clip's picture types into the encoder, and made proxies that differed
        from one run to the next."""
        w, h = (self.height, self.width) if self.turns % 2 else (self.width, self.height)
        planes = frame.reformat(width=w, height=h, format="yuv420p").to_ndarray()
        if self.turns:
            # sliced as flat planes: a chroma plane is not whole rows of luma width where h / 2 is odd
            flat, n, c = planes.reshape(-1), w * h, (w // 2) * (h // 2)
            y, u, v = flat[:n].reshape(h, w), flat[n:n + c].reshape(h // 2, w // 2), flat[n + c:].reshape(h // 2, w // 2)
            planes = np.concatenate([np.rot90(p, self.turns).reshape(-1) for p in (y, u, v)]).reshape(-1, self.width)
        picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(planes), format="yuv420p")
        picture.colorspace, picture.color_range = frame.colorspace, frame.color_range
        return picture


def _check_same_frames(original: ClipIndex, copied: ClipIndex) -> None:
    if len(copied.starts) != len(original.starts):
        raise ProxyRefused(f"the proxy holds {len(copied.starts)} pictures where the clip holds {len(original.starts)}")
    moved = max((abs(a - b) for a, b in zip(original.starts, copied.starts, strict=True)), default=0.0)
    if moved > 1e-6 or abs(original.duration - copied.duration) > 1e-6:
        raise ProxyRefused(f"the proxy's pictures would not show at the clip's times (off by {moved:.6f} s, "
                           f"length {copied.duration:.6f} s against {original.duration:.6f} s)")


class ClipProxies:
    """The proxies of the library clips of every workspace, in storage (module docstring)."""

    def __init__(self, engine: Engine, storage: Storage, clock: Clock, *, claim_sec: float = CLAIM_SEC,
                 retry_sec: float = RETRY_SEC, make_sec: float = MAKE_SEC) -> None:
        self.engine = engine
        self.storage = storage
        self.clock = clock
        self.claim_sec = claim_sec
        self.retry_sec = retry_sec
        self.make_sec = make_sec

    def clip(self, workspace_id: str, key: str) -> assets_repo.Asset | None:
        """The workspace's library video stored under ``key`` that would have a proxy, else None
        (another workspace's, not a video, not in the library, small enough already)."""
        with self.engine.connect() as conn:
            asset = assets_repo.find_clip(conn, workspace_id, key)
        if asset is None or asset.width is None or asset.height is None:
            return None
        return asset if proxy_size(asset.width, asset.height) is not None else None

    def open(self, asset: assets_repo.Asset) -> str | None:
        """A local path of the clip's stored proxy, or None while it has none."""
        try:
            return self.storage.open_local(storage_keys.asset_proxy_key(asset.key))
        except ObjectNotFound:
            return None

    def make(self, asset: assets_repo.Asset, original: str) -> bool:
        """Make and store the clip's proxy from its local copy ``original`` unless it is stored or
        claimed; whether this call stored it. Never raises for the proxy's sake: it logs why."""
        key = storage_keys.asset_proxy_key(asset.key)
        claim = storage_keys.asset_proxy_claim_key(asset.key)
        try:
            if self.storage.exists(key) or self._claimed(claim):
                return False
            self._claim(claim, "making")
            with tempfile.TemporaryDirectory(prefix="reelfarm-proxy-") as tmp:
                made = write_proxy(original, os.path.join(tmp, "proxy.mp4"), budget=self.make_sec)
                self.storage.put_file(key, made.path, PROXY_CONTENT_TYPE)
            self.storage.delete(claim)
            if self.clip(asset.workspace_id, asset.key) is None:  # the clip was deleted meanwhile
                delete_proxy(self.storage, asset.key)
                return False
        except ProxyRefused as exc:
            log.warning("no draft proxy of clip %s (%s): %s; drafts draw it from the original",
                        asset.id, asset.key, exc)
            self._claim(claim, "failed")
            return False
        except (StorageError, OSError) as exc:
            log.warning("the draft proxy of clip %s (%s) could not be stored: %s; drafts draw it from the "
                        "original", asset.id, asset.key, exc)
            self._unclaim(claim)  # storage trouble passes: the next draft tries again
            return False
        log.info("made the draft proxy of clip %s (%s): %dx%d, %d pictures", asset.id, asset.key,
                 made.width, made.height, made.frames)
        return True

    def _claim(self, claim: str, state: str) -> None:
        try:
            self.storage.put_bytes(claim, f"{state} {self.clock.now().isoformat()}".encode("ascii"), "text/plain")
        except StorageError:
            if state == "making":
                raise
            # a failure not written down is only tried again sooner

    def _unclaim(self, claim: str) -> None:
        try:
            self.storage.delete(claim)
        except StorageError:
            pass  # it lapses after claim_sec

    def _claimed(self, claim: str) -> bool:
        """Whether a claim holds: one being made for ``claim_sec``; one that failed for ``retry_sec``."""
        try:
            state, _, when = self.storage.get_bytes(claim).decode("ascii").partition(" ")
            made_at = datetime.fromisoformat(when)
        except ObjectNotFound:
            return False
        except (UnicodeDecodeError, ValueError):
            return False  # unreadable: as if there were none
        hold = self.retry_sec if state == "failed" else self.claim_sec
        return self.clock.now() - made_at < timedelta(seconds=hold)


def delete_proxy(storage: Storage, key: str) -> None:
    """Delete the proxy (and any claim) of the library object stored under ``key``."""
    storage.delete(storage_keys.asset_proxy_key(key))
    storage.delete(storage_keys.asset_proxy_claim_key(key))


@dataclass
class DraftClips:
    """A draft's ``renderer.AssetSource``: a library clip of the draft's workspace is drawn from its
    proxy when one is stored; anything else, and a clip without one, comes from ``inner`` (which
    checks whose it is), and the clips drawn from their originals are kept in ``wanted`` so the
    chunk can make their proxies once its segment is stored (``make_wanted``)."""

    inner: AssetSource
    proxies: ClipProxies
    workspace_id: str
    wanted: dict[str, tuple[assets_repo.Asset, str]] = field(default_factory=dict)

    def path(self, asset_id: str, asset: Asset) -> str:
        clip = self._clip(asset)
        found = self._proxy(clip) if clip is not None else None
        if found is not None:
            return found
        path = self.inner.path(asset_id, asset)
        if clip is not None:
            self.wanted[clip.key] = (clip, path)
        return path

    def make_wanted(self) -> int:
        """Make the proxies of the clips this draft drew from their originals; how many were stored.
        Never raises: a draft does not fail for its proxies."""
        made = 0
        for clip, path in self.wanted.values():
            try:
                made += self.proxies.make(clip, path)
            except Exception:
                log.exception("the draft proxy of clip %s (%s) could not be made; drafts draw the original",
                              clip.id, clip.key)
        return made

    def _clip(self, asset: Asset) -> assets_repo.Asset | None:
        if asset.type != "video" or asset.key is None:
            return None
        try:
            return self.proxies.clip(self.workspace_id, asset.key)
        except SQLAlchemyError as exc:  # the proxy is an optimisation: the original is always there to draw
            log.warning("the draft proxy of %s could not be looked up: %s; drawing the original", asset.key, exc)
            return None

    def _proxy(self, clip: assets_repo.Asset) -> str | None:
        try:
            found = self.proxies.open(clip)
            if found is not None:
                probe_clip(found)  # a proxy that does not open is not drawn: it goes, and is made again
            return found
        except AssetError as exc:
            log.warning("the draft proxy of clip %s does not open (%s); deleting it and drawing the original",
                        clip.id, exc)
            try:
                delete_proxy(self.proxies.storage, clip.key)
            except StorageError:
                pass  # drawn from the original all the same
            return None
        except (StorageError, OSError) as exc:
            log.warning("the draft proxy of clip %s could not be read: %s; drawing the original", clip.id, exc)
            return None

