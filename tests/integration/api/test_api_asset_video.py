"""Videos in the media library (``kind: "video"``): a phone's clip uploaded directly or by a
presigned upload is stored with its poster and measured as displayed; hostile clips (cut short, a
zip named .mp4, over 4096 pixels, longer than allowed, sound outlasting the pictures) are a 400 on
``/file`` naming the reason and leave no file and no row; the quota counts a video's bytes (its
poster free); another workspace neither sees nor uses it. SQLite and PostgreSQL, local files and
the S3 emulator (the fixtures of ``test_api_assets``)."""
from __future__ import annotations

import io
import zipfile
from types import MappingProxyType

import pytest
from PIL import Image

from reelfarm.farm.services import media
from reelfarm.shared import plans
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_asset_uploads import ON_S3, complete, put, staged, start
from tests.integration.api.test_api_assets import (  # noqa: F401  (fixtures)
    ASSET_KEYS,
    fetch,
    s3_endpoint,
    settings,
    stored,
    upload,
)
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image
from tests.unit.farm.test_media_video import clip

PHONE = clip(rotate=-90, audio_sec=1.5)  # recorded upright: 64x48 coded, shown 48x64, with sound


def library(client, tenant) -> dict[str, int]:
    return client.get("/api/v1/me", headers=tenant.headers).get_json()["library"]


def assert_nothing_kept(client, services, tenant) -> None:
    assert stored(services, tenant) == []
    assert client.get("/api/v1/assets", headers=tenant.headers).get_json()["data"] == []
    assert library(client, tenant)["used_bytes"] == 0


def test_a_phone_clip_is_stored_with_its_poster_and_measured_as_shown(client, services, tenant):
    response = upload(client, tenant, PHONE, name="IMG_0042.txt")  # the name says nothing
    assert response.status_code == 201, response.get_json()
    asset = response.get_json()
    assert set(asset) == ASSET_KEYS
    assert (asset["kind"], asset["content_type"], asset["bytes"]) == ("video", "video/mp4", len(PHONE))
    assert (asset["width"], asset["height"], asset["duration_sec"], asset["fps"], asset["has_audio"]) == (
        48, 64, 1.5, 10.0, True)
    assert asset["key"].startswith(f"assets/{tenant.workspace_id}/") and asset["key"].endswith(".mp4")
    assert sorted(stored(services, tenant)) == sorted([asset["key"], asset["key"][:-4] + ".thumb.jpg"])
    assert fetch(client, asset["url"]) == PHONE
    poster = Image.open(io.BytesIO(fetch(client, asset["thumbnail_url"])))
    assert poster.format == "JPEG" and poster.size == (48, 64)
    assert library(client, tenant)["used_bytes"] == len(PHONE)  # the poster is free
    listed = client.get("/api/v1/assets?kind=video", headers=tenant.headers).get_json()["data"]
    assert [a["id"] for a in listed] == [asset["id"]]
    assert client.get("/api/v1/assets?kind=image", headers=tenant.headers).get_json()["data"] == []
    again = upload(client, tenant, PHONE).get_json()  # the same bytes: the same asset, one copy
    assert again["id"] == asset["id"] and len(stored(services, tenant)) == 2
    assert client.delete(f"/api/v1/assets/{asset['id']}", headers=tenant.headers).status_code == 204
    assert_nothing_kept(client, services, tenant)


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("clip.mp4", PHONE)
    return out.getvalue()


HOSTILE = {
    "cut_short": (lambda: clip("webm", "libvpx-vp9", frames=30)[:700], "unsupported_media", "the video is truncated"),
    "zip_named_mp4": (_zip, "unsupported_media", "an MP4, MOV or WebM video, nor an SRT or WebVTT captions file"),
    "over_4096": (lambda: clip(size=(4100, 16), frames=2), "payload_too_large", "at most 4096 pixels on a side"),
    "longer_than_600_s": (lambda: clip(times=[0.0, 1.0, 650.0], fps=1), "payload_too_large", "the 600 s allowed"),
    "sound_outlasts_pictures": (lambda: clip(audio_sec=4.0), "unsupported_media", "longer than its 1.50 s of pictures"),
}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_a_hostile_clip_is_a_400_naming_why_and_leaves_nothing(client, services, tenant, what):
    make, code, reason = HOSTILE[what]
    status, top = (413, code) if code == "payload_too_large" else (400, "validation_failed")
    error = assert_error(upload(client, tenant, make(), name="clip.mp4"), status, top)
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/file", code)]
    assert reason in error["details"][0]["message"]
    assert_nothing_kept(client, services, tenant)


@ON_S3
def test_a_video_takes_the_presigned_path_too(client, services, tenant):
    presigned = start(client, tenant, PHONE, content_type="video/mp4").get_json()
    assert put(presigned, PHONE).status_code == 200
    done = complete(client, tenant, presigned["id"])
    assert done.status_code == 201, done.get_json()
    asset = done.get_json()
    assert (asset["kind"], asset["width"], asset["height"], asset["has_audio"]) == ("video", 48, 64, True)
    assert staged(services, tenant) == [] and len(stored(services, tenant)) == 2
    assert fetch(client, asset["url"]) == PHONE

    cut = clip("webm", "libvpx-vp9", frames=30)[:700]  # refused there as it is here: deleted, nothing kept
    presigned = start(client, tenant, cut, content_type="video/webm").get_json()
    assert put(presigned, cut).status_code == 200
    error = assert_error(complete(client, tenant, presigned["id"]), 400, "validation_failed")
    assert "the video is truncated" in error["details"][0]["message"]
    assert staged(services, tenant) == [] and stored(services, tenant) == [asset["key"], asset["key"][:-4] + ".thumb.jpg"]


def test_the_quota_counts_a_videos_bytes(client, services, make_tenant):
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, "pro": len(PHONE) + 100})
    a = make_tenant(name="a")
    assert upload(client, a, PHONE).status_code == 201
    assert library(client, a) == {"used_bytes": len(PHONE), "limit_bytes": len(PHONE) + 100}
    other = clip(frames=12)
    assert_error(upload(client, a, other), 413, "quota_exceeded", details=None)
    assert len(stored(services, a)) == 2 and library(client, a)["used_bytes"] == len(PHONE)


def test_another_workspace_neither_sees_nor_uses_a_video(client, services, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    asset = upload(client, a, PHONE).get_json()
    assert client.get("/api/v1/assets?kind=video", headers=b.headers).get_json()["data"] == []
    assert_error(client.get(f"/api/v1/assets/{asset['id']}", headers=b.headers), 404, "not_found", details=None)
    assert_error(client.delete(f"/api/v1/assets/{asset['id']}", headers=b.headers), 404, "not_found", details=None)
    video = _video(client, b)  # B names A's key in its own document: refused as any key not B's
    doc = with_image(video["current_version"]["doc"], key=asset["key"])
    error = assert_error(client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=b.headers),
                         400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/doc/assets/pic/key"]
    assert library(client, b)["used_bytes"] == 0 and stored(services, b) == []
    assert client.get(f"/api/v1/assets/{asset['id']}", headers=a.headers).status_code == 200


def test_the_api_document_states_the_video_limits_the_probe_applies(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    text = " ".join(spec["paths"]["/api/v1/assets"]["post"]["description"].split())
    for stated in (f"at most {media.MAX_VIDEO_SIDE} pixels on a side", f"{media.MAX_DURATION_SEC:.0f} s",
                   f"{media.MAX_VIDEO_FPS:.0f} frames a second on average", f"{media.MAX_VIDEO_FRAMES:,} frames",
                   f"{media.MAX_VIDEO_PIXELS // 1_000_000_000} billion pixels decoded in all",
                   f"more than {media.MAX_AUDIO_OVERRUN_SEC} s", f"at most {media.MAX_UPLOAD_BYTES >> 20} MiB in all"):
        assert stated in text
