"""Uploads of the media library in stories: an image field and the soundtrack name the workspace's
own assets by id; the version's document names them by storage key, and the render draws and mixes them.
Another workspace's id (or key, in a document) is a 400 naming the field. Each test runs on local
files and on the S3 emulator (the ``settings`` of test_api_assets)."""
from __future__ import annotations

import io

import av
import numpy as np
import pytest
from PIL import Image

from reelfarm.renderer.stills import as_doc
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import fetch, mp3, png, s3_endpoint, settings, upload  # noqa: F401
from tests.integration.api.test_api_renders import _video, _wait, farm_client  # noqa: F401
from tests.integration.api.test_api_storage_keys import with_image

MAGENTA = (255, 0, 255)


def _story_video(client, tenant, image_id: str, sound_id: str, **soundtrack):
    return _video(client, tenant, storyId="product_launch", format="16:9", durationSec=6,
                  fields={"image": image_id, "soundtrack": {"asset_id": sound_id, **soundtrack}})


def test_a_story_with_an_uploaded_image_and_soundtrack_renders_them(farm_client, make_tenant, tmp_path):  # noqa: F811
    tenant = make_tenant(credits=5)
    image = upload(farm_client, tenant, png((320, 240), MAGENTA)).get_json()
    sound = upload(farm_client, tenant, mp3(7.0)).get_json()
    video = _story_video(farm_client, tenant, image["id"], sound["id"], volume=0.8, fade_in_sec=0.5,
                         fade_out_sec=1)
    doc = video["current_version"]["doc"]
    assert doc["assets"]["image"] == {"type": "image", "key": image["key"]}
    assert doc["assets"]["soundtrack"] == {"type": "audio", "key": sound["key"]}
    assert doc["audio"] == [{"asset": "soundtrack", "start": 0, "volume": 0.8, "fade_in": 0.5, "fade_out": 1.0,
                            "fit": "loop"}]  # the default fit: a sound shorter than the video loops
    in_use = farm_client.delete(f"/api/v1/assets/{sound['id']}", headers=tenant.headers)
    assert_error(in_use, 409, "asset_in_use", details=None)  # the version names the soundtrack

    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    done, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    path = tmp_path / "out.mp4"
    path.write_bytes(fetch(farm_client, done["url"]))
    shares = []
    with av.open(str(path)) as container:
        for n, frame in enumerate(container.decode(container.streams.video[0])):
            if n % 5:  # six frames a second of the 30 are enough to find an image held for a scene
                continue
            rgb = frame.to_ndarray(format="rgb24").astype(np.int16)
            near = (np.abs(rgb - np.array(MAGENTA, dtype=np.int16)) < 40).all(axis=2)
            shares.append(near.mean())
    assert len(shares) == 36 and max(shares) > 0.05, shares  # the uploaded image is drawn large on some frames
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        samples = sum(f.samples for f in container.decode(stream))
        rate = stream.codec_context.sample_rate
    assert samples / rate == pytest.approx(6.0, abs=0.1)  # the soundtrack, cut at the video's end


def test_editing_only_the_soundtrack_keeps_the_video_chunks_fingerprints(client, services, tenant):
    from reelfarm.farm.services.segments import fingerprints
    from reelfarm.shared.repos.objects import WorkspaceObjects

    image = upload(client, tenant, png((320, 240), MAGENTA)).get_json()
    first = upload(client, tenant, mp3(3.0)).get_json()
    second = upload(client, tenant, mp3(5.0)).get_json()
    video = _story_video(client, tenant, image["id"], first["id"])
    patched = client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"soundtrack": {
        "asset_id": second["id"], "volume": 0.3}}}, headers=tenant.headers)
    assert patched.status_code == 200, patched.get_json()
    before, after = video["current_version"]["doc"], patched.get_json()["current_version"]["doc"]
    assert after["assets"]["soundtrack"]["key"] == second["key"] and after["audio"][0]["volume"] == 0.3
    assert after["assets"]["image"] == before["assets"]["image"]  # merged: the image field is kept
    scope = WorkspaceObjects(services.engine, tenant.workspace_id)
    fake = _FakeRender()
    prints = fingerprints(services.storage, scope, fake, before)
    assert len(prints) == 2 and all(prints)
    assert fingerprints(services.storage, scope, fake, before) == fingerprints(services.storage, scope, fake, after)


def test_a_soundtrack_leaves_the_poster_and_stills_as_they_are(client, services, tenant):
    from reelfarm.renderer.spec import RenderSpec
    from reelfarm.renderer.stills import iter_stills_png, poster_time
    from reelfarm.shared.repos.objects import WorkspaceObjects
    from reelfarm.studio.assets import StorageAssets

    image = upload(client, tenant, png((320, 240), MAGENTA)).get_json()
    sound = upload(client, tenant, mp3(3.0)).get_json()
    silent = _video(client, tenant, storyId="product_launch", format="16:9", durationSec=6,
                    fields={"image": image["id"]})["current_version"]["doc"]
    scored = _story_video(client, tenant, image["id"], sound["id"], volume=0.5,
                          fade_in_sec=1)["current_version"]["doc"]
    assert scored["audio"] and not silent.get("audio")
    assets = StorageAssets(services.storage, WorkspaceObjects(services.engine, tenant.workspace_id), "test/")
    times = [0.0, 1.5, poster_time(as_doc(scored)), 5.9]
    spec = RenderSpec("16:9", 720)
    with_sound = list(iter_stills_png(scored, times, spec, assets))
    assert with_sound == list(iter_stills_png(silent, times, spec, assets))
    assert len(set(with_sound)) > 1  # the stills differ in time, so equal lists compare real frames


class _FakeRender:
    """What fingerprints read of a render."""
    format = "16:9"
    resolution = 720
    fps = 30
    encoder = "x264"
    container = "mp4"
    transparent = False
    chunk_starts = None
    frames = 180
    chunks = 2


def test_another_workspaces_upload_is_refused_in_fields_soundtrack_and_documents(client, make_tenant):
    a, b = make_tenant(), make_tenant()
    image = upload(client, a, png()).get_json()
    sound = upload(client, a, mp3()).get_json()
    own_sound = upload(client, b, mp3()).get_json()
    answer = client.post("/api/v1/videos", json={"storyId": "product_launch", "fields": {"image": image["id"]}},
                         headers=b.headers)
    error = assert_error(answer, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/fields/image"]
    answer = client.post("/api/v1/videos", json={"storyId": "product_launch",
                                                 "fields": {"soundtrack": {"asset_id": sound["id"]}}},
                         headers=b.headers)
    error = assert_error(answer, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/fields/soundtrack/asset_id"]
    # a sound is not an image, even the workspace's own
    answer = client.post("/api/v1/videos", json={"storyId": "product_launch", "fields": {"image": own_sound["id"]}},
                         headers=b.headers)
    assert_error(answer, 400, "validation_failed")
    video = _video(client, b)
    answer = client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"soundtrack": {"asset_id": sound["id"]}}},
                          headers=b.headers)
    assert_error(answer, 400, "validation_failed")
    doc = with_image(video["current_version"]["doc"], key=image["key"])
    error = assert_error(client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=b.headers), 400,
                         "validation_failed")
    assert any(d["code"] == "unknown_storage_key" for d in error["details"])


def test_a_kits_logo_by_asset_id_and_not_another_workspaces(client, services, make_tenant):
    a, b = make_tenant(), make_tenant()
    image = upload(client, a, png((200, 100), MAGENTA)).get_json()
    answer = client.patch(f"/api/v1/brand-kits/{a.default_kit_id}", json={"logo_asset_id": image["id"]},
                          headers=a.headers)
    assert answer.status_code == 200, answer.get_json()
    shown = answer.get_json()["tokens"]["logo"]
    assert (shown["width"], shown["height"]) == (200, 100)
    doc = _video(client, a)["current_version"]["doc"]
    key = doc["brand"]["logo"]["key"]  # stored with the kit, as an uploaded logo is
    assert key.startswith(f"brand-kits/{a.default_kit_id}/") and services.storage.exists(key)
    assert doc["assets"]["logo"] == {"type": "image", "key": key}
    pixels = np.asarray(Image.open(io.BytesIO(services.storage.get_bytes(key))).convert("RGB"))
    assert tuple(pixels[50, 100]) == MAGENTA

    before = client.get(f"/api/v1/brand-kits/{b.default_kit_id}", headers=b.headers).get_json()
    refused = client.patch(f"/api/v1/brand-kits/{b.default_kit_id}", json={"logo_asset_id": image["id"]},
                           headers=b.headers)
    error = assert_error(refused, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/logo_asset_id"]
    assert client.get(f"/api/v1/brand-kits/{b.default_kit_id}", headers=b.headers).get_json() == before
    not_an_id = client.patch(f"/api/v1/brand-kits/{b.default_kit_id}", json={"logo_asset_id": "logo.png"},
                             headers=b.headers)
    assert_error(not_an_id, 400, "validation_failed")


def test_a_drafts_preview_draws_the_workspaces_upload_and_refuses_anothers(client, services, make_tenant):
    from reelfarm.studio.errors import InvalidFieldsError
    from reelfarm.studio.previews import StoryDraft

    a, b = make_tenant(), make_tenant()
    image = upload(client, a, png((320, 240), MAGENTA)).get_json()
    draft = StoryDraft("product_launch", {"image": image["id"]}, format="16:9")
    shares = []
    for t in (0.5, 2.0, 3.5, 5.0, 6.5):
        drawn = Image.open(io.BytesIO(services.previews.draw(a.workspace_id, draft, t=t))).convert("RGB")
        pixels = np.asarray(drawn).astype(int)
        shares.append((np.abs(pixels - np.array(MAGENTA)).max(axis=2) < 40).mean())
    assert max(shares) > 0.05, shares  # drawn from storage, not as the placeholder of an address
    with pytest.raises(InvalidFieldsError) as refused:
        services.previews.draw(b.workspace_id, draft, t=1.0)
    assert [d["field"] for d in refused.value.details] == ["/fields/image"]
