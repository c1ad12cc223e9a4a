"""Where each kind of stored file lives: every storage key the farm writes is named here.

Each top-level folder holds one kind of file, and every key below it starts with the id of what
owns it (a render, a job, a draft or a workspace), so retention, deletion and the checks that two
workspaces never share a file can read ownership from the key.

    renders/<render>/seg<i>.mp4, video.mp4, poster.jpg   a render's chunks, video and poster
                                                          (video.gif, video.webm in those containers;
                                                          a WebM's chunks are VP9 under the same names)
    renders/<render>/assets/...                           its imported remote assets
    renders/<render>/stream/seg<i>.ts, audio.m4a           its HLS stream
    jobs/<job>/still-<i>.png                               a stills job's images (and assets/...)
    drafts/<workspace>/<draft>/seg<i>.ts                   an animated preview of unsaved values
    segments/<workspace>/<fingerprint>.mp4                 chunks kept for reuse by the workspace
    brand-kits/<kit>/logo.png, logo-<hash>.png             a brand kit's extracted or uploaded logo
    previews/<workspace>/thumbnails/<story>-<w>x<h>.png    a workspace's story gallery thumbnails
    assets/<workspace>/<sha256>.<ext>, <sha256>.thumb.jpg  its media library: an upload and its thumbnail
                                                           (.thumb.webp where it keeps transparency)
    assets/<workspace>/<sha256>.proxy.mp4, .proxy.claim    a clip's draft proxy, and who is making it
    uploads/<workspace>/<upload>                           a presigned upload's bytes, until checked

A render's or stills job's remote assets are imported below its own folder
(``<prefix>/assets/<hash of the asset id>``, ``imported_key``).
"""
from __future__ import annotations

import hashlib

RENDERS = "renders"
JOBS = "jobs"
DRAFTS = "drafts"
SEGMENTS = "segments"
BRAND_KITS = "brand-kits"
PREVIEWS = "previews"
ASSETS = "assets"
UPLOADS = "uploads"


def render_prefix(render_id: str) -> str:
    """The storage folder of a render's files (segments, imported assets, the video, the poster)."""
    return f"{RENDERS}/{render_id}"


def segment_key(render_id: str, index: int) -> str:
    return f"{render_prefix(render_id)}/seg{index}.mp4"


def video_key(render_id: str, container: str = "mp4") -> str:
    """The render's file; its extension is its container's (``mp4``, ``gif``, ``webm``), which
    names its downloads and gives its content type."""
    if container not in ("mp4", "gif", "webm"):
        raise ValueError(f"unknown container {container!r}")
    return f"{render_prefix(render_id)}/video.{container}"


def poster_key(render_id: str) -> str:
    return f"{render_prefix(render_id)}/poster.jpg"


def captions_key(render_id: str) -> str:
    """The WebVTT file of a render of a video with captions."""
    return f"{render_prefix(render_id)}/captions.vtt"


def stream_folder(render_id: str) -> str:
    return f"{render_prefix(render_id)}/stream"


def stream_segment_key(render_id: str, index: int) -> str:
    return f"{stream_folder(render_id)}/seg{index}.ts"


def stream_audio_key(render_id: str) -> str:
    return f"{stream_folder(render_id)}/audio.m4a"


def stills_prefix(job_id: str) -> str:
    """The storage folder of a stills job's images (and the remote assets it imported)."""
    return f"{JOBS}/{job_id}"


def stills_key(job_id: str, index: int) -> str:
    return f"{stills_prefix(job_id)}/still-{index}.png"


def draft_prefix(workspace_id: str, draft_id: str) -> str:
    return f"{DRAFTS}/{workspace_id}/{draft_id}"


def draft_segment_key(workspace_id: str, draft_id: str, index: int) -> str:
    return f"{draft_prefix(workspace_id, draft_id)}/seg{index}.ts"


def cache_key(workspace_id: str, fingerprint: str) -> str:
    """A chunk kept for reuse by later renders of the same workspace."""
    return f"{SEGMENTS}/{workspace_id}/{fingerprint}.mp4"


def logo_key(kit_id: str) -> str:
    return f"{BRAND_KITS}/{kit_id}/logo.png"


def uploaded_logo_key(kit_id: str, content_hash: str) -> str:
    """An uploaded logo, named by its content: the same picture uploaded again is the same key."""
    return f"{BRAND_KITS}/{kit_id}/logo-{content_hash[:16]}.png"


def story_thumbnail_key(workspace_id: str, story_id: str, fmt: str) -> str:
    """A story's thumbnail in a workspace's gallery (drawn with its brand), one per format."""
    return f"{PREVIEWS}/{workspace_id}/thumbnails/{story_id}-{fmt.replace(':', 'x')}.png"


def imported_key(prefix: str, asset_id: str) -> str:
    """Where asset ``asset_id`` of a render (or stills job) stored under ``prefix`` is imported to."""
    return f"{prefix}/assets/{hashlib.sha256(asset_id.encode()).hexdigest()[:24]}"


def asset_key(workspace_id: str, sha256: str, extension: str) -> str:
    """Where an upload to the media library is stored: under its workspace, named by its content."""
    return f"{ASSETS}/{workspace_id}/{sha256}.{extension}"


def asset_thumbnail_key(key: str, alpha: bool = False) -> str:
    """Where a library image's thumbnail is stored, beside it: a JPEG, or with ``alpha`` a WebP
    that keeps the image's transparency."""
    return key.rsplit(".", 1)[0] + (".thumb.webp" if alpha else ".thumb.jpg")


def asset_proxy_key(key: str) -> str:
    """Where a library clip's draft proxy is stored, beside it (``reelfarm.farm.services.proxies``)."""
    return key.rsplit(".", 1)[0] + ".proxy.mp4"


def asset_proxy_claim_key(key: str) -> str:
    """Where the claim of whoever is making a library clip's draft proxy is stored, beside it."""
    return key.rsplit(".", 1)[0] + ".proxy.claim"


def staging_key(workspace_id: str, upload_id: str) -> str:
    """Where a presigned upload's bytes wait to be checked: under its workspace, named by the upload."""
    return f"{UPLOADS}/{workspace_id}/{upload_id}"
