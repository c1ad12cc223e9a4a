"""Clips of the media library in stories and in the linter: a story's video field names the
workspace's own video by id, and the version's document names it by storage key (a ``video`` asset)
in a video layer or a scene's background, cropped to fill every format. Another workspace's id, or
an upload of the wrong kind, is a 400 naming the field. A document is linted with the clip lengths
the library measured at upload: a clip shorter than the time it must fill (and not looping) is a
warning on the version, a trim past its end a 400."""
from __future__ import annotations

import copy

import pytest

from reelfarm.renderer.spec import FORMATS
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import png, upload
from tests.unit.farm.test_media_video import clip

CLIP = clip(size=(64, 36), frames=15, fps=10)  # 16:9, 1.5 s


@pytest.fixture
def own_clip(client, tenant) -> dict:
    answer = upload(client, tenant, CLIP)
    assert answer.status_code == 201, answer.get_json()
    asset = answer.get_json()
    assert (asset["kind"], asset["duration_sec"]) == ("video", 1.5)
    return asset


def _create(client, tenant, story: str, fmt: str = "9:16", **fields):
    return client.post("/api/v1/videos", json={"storyId": story, "format": fmt, "durationSec": 8, "fields": fields},
                       headers=tenant.headers)


def _created(client, tenant, story: str, fmt: str = "9:16", **fields) -> dict:
    answer = _create(client, tenant, story, fmt, **fields)
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["current_version"]


def _layers(doc: dict, kind: str) -> list[dict]:
    return [layer for scene in doc["scenes"] for layer in scene["layers"] if layer["type"] == kind]


def test_a_product_clip_is_a_video_asset_and_a_looping_layer_in_every_format(client, tenant, own_clip):
    version = _created(client, tenant, "product_launch", clip=own_clip["id"])
    doc = version["doc"]
    assert doc["assets"]["clip"] == {"type": "video", "key": own_clip["key"]}
    [layer] = _layers(doc, "video")
    assert (layer["asset"], layer["fit"], layer["loop"], layer["volume"]) == ("clip", "cover", True, 0.0)
    assert all(not layer.get("formats", {}).get(f, {}).get("hidden") for f in FORMATS)  # shown in all four
    assert "image" not in doc["assets"]
    assert [w for w in version["lint"] if w["code"] != "sample_value"] == []  # looping: a 1.5 s clip fills its scene


def test_the_announcements_background_and_the_testimonials_clip_name_it(client, tenant, own_clip):
    doc = _created(client, tenant, "announcement", "16:9", background_video=own_clip["id"])["doc"]
    assert doc["assets"]["background"] == {"type": "video", "key": own_clip["key"]}
    backgrounds = [s["background"] for s in doc["scenes"] if s["background"]["type"] == "video"]
    assert [(b["asset"], b["fit"], b["loop"]) for b in backgrounds] == [("background", "cover", True)] * 2

    version = _created(client, tenant, "testimonial", "4:5", clip=own_clip["id"])
    speaker = version["doc"]["scenes"][0]
    assert (speaker["id"], speaker["background"]["asset"], speaker["background"]["volume"]) == ("speaker", "clip", 1.0)
    assert version["doc"]["assets"]["clip"] == {"type": "video", "key": own_clip["key"]}
    # played once: the library says 1.5 s, the scene lasts longer, so the version says so
    [warning] = [w for w in version["lint"] if w["code"] == "clip_too_short"]
    assert warning["field"] == "/scenes/0/background/asset" and "1.50 s to play" in warning["message"]


def test_without_a_clip_the_stories_keep_their_picture_or_colour(client, tenant):
    for story in ("product_launch", "announcement", "testimonial"):
        doc = _created(client, tenant, story)["doc"]
        assert not _layers(doc, "video") and all(s["background"]["type"] != "video" for s in doc["scenes"])
        assert all(a["type"] != "video" for a in doc.get("assets", {}).values())


def test_another_workspaces_clip_and_an_upload_of_the_wrong_kind_are_refused(client, make_tenant):
    a, b = make_tenant(), make_tenant()
    theirs = upload(client, a, CLIP).get_json()
    mine = upload(client, b, CLIP).get_json()
    picture = upload(client, b, png()).get_json()
    assert theirs["id"] != mine["id"] and theirs["key"] != mine["key"]
    for story, field, value in [("product_launch", "clip", theirs["id"]), ("announcement", "background_video",
                                                                           theirs["id"]),
                                ("testimonial", "clip", picture["id"]),  # an image is not a clip
                                ("product_launch", "image", mine["id"])]:  # nor a clip an image
        error = assert_error(_create(client, b, story, **{field: value}), 400, "validation_failed")
        assert [(d["field"], d["code"]) for d in error["details"]] == [(f"/fields/{field}", "unknown_asset")]
    error = assert_error(_create(client, b, "product_launch", clip="https://example.com/clip.mp4"), 400,
                         "validation_failed")
    # a clip is an upload, not an address
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/fields/clip", "invalid_format")]
    assert "is not the id of a video of the media library" in error["details"][0]["message"]

    video = client.post("/api/v1/videos", json={"storyId": "product_launch", "durationSec": 8,
                                                "fields": {"clip": mine["id"]}}, headers=b.headers).get_json()
    patched = client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"clip": theirs["id"]}},
                           headers=b.headers)
    error = assert_error(patched, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/fields/clip"]
    assert video["current_version"]["doc"]["assets"]["clip"]["key"] == mine["key"]


def _with_clip_layer(doc: dict, key: str, **footage) -> dict:
    """``doc`` with a video layer over its first scene playing the clip stored under ``key``."""
    doc = copy.deepcopy(doc)
    doc.setdefault("assets", {})["footage"] = {"type": "video", "key": key}
    doc["scenes"][0]["layers"].append({"id": "footage", "type": "video", "asset": "footage", "x": 0.1, "y": 0.1,
                                       "w": 0.5, "h": 0.5, **footage})
    return doc


def test_a_document_is_linted_with_the_clip_length_the_library_measured(client, tenant, own_clip):
    video = client.post("/api/v1/videos", json={"storyId": "quote", "durationSec": 8}, headers=tenant.headers)
    video = video.get_json()
    doc = video["current_version"]["doc"]
    assert doc["scenes"][0]["duration"] > 3

    def patch(**footage):
        body = {"doc": _with_clip_layer(doc, own_clip["key"], **footage)}
        return client.patch(f"/api/v1/videos/{video['id']}", json=body, headers=tenant.headers)

    short = patch(end=3.0)
    assert short.status_code == 200, short.get_json()
    [warning] = [w for w in short.get_json()["current_version"]["lint"] if w["code"] == "clip_too_short"]
    assert warning["field"] == "/scenes/0/layers/{}/asset".format(len(doc["scenes"][0]["layers"]))
    assert "1.50 s to play from 0 s but must fill 3.00 s" in warning["message"]

    for fine in ({"end": 3.0, "loop": True}, {"end": 1.4}, {"end": 3.0, "speed": 0.5}):
        answer = patch(**fine)
        assert answer.status_code == 200, answer.get_json()
        assert [w for w in answer.get_json()["current_version"]["lint"] if w["code"] == "clip_too_short"] == [], fine

    error = assert_error(patch(trim_start=2.0), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [
        ("/doc/scenes/0/layers/{}/trim_start".format(len(doc["scenes"][0]["layers"])), "bad_trim")]
    assert "past the end of clip 'footage' (1.5 s)" in error["details"][0]["message"]


def test_another_workspaces_clip_lengths_are_not_used(client, make_tenant):
    a, b = make_tenant(), make_tenant()
    theirs = upload(client, a, CLIP).get_json()
    video = client.post("/api/v1/videos", json={"storyId": "quote", "durationSec": 8}, headers=b.headers).get_json()
    doc = _with_clip_layer(video["current_version"]["doc"], theirs["key"], trim_start=2.0)
    error = assert_error(client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=b.headers), 400,
                         "validation_failed")
    # refused for naming another workspace's file; nothing about that file's length is told
    assert [d["code"] for d in error["details"]] == ["unknown_storage_key"]


def test_a_drafts_preview_plays_the_workspaces_clip_and_refuses_anothers(client, services, make_tenant):
    import io

    import numpy as np
    from PIL import Image

    from reelfarm.studio.errors import InvalidFieldsError
    from reelfarm.studio.previews import StoryDraft
    from tests.unit.farm.test_media_video import BLUE, RED

    a, b = make_tenant(), make_tenant()
    asset = upload(client, a, CLIP).get_json()
    draft = StoryDraft("testimonial", {"clip": asset["id"]}, format="9:16")
    drawn = np.asarray(Image.open(io.BytesIO(services.previews.draw(a.workspace_id, draft, t=0.5))).convert("RGB"))
    h, w, _ = drawn.shape
    # the 16:9 clip (red left, blue right) fills the tall frame, cropped about its centre
    assert np.abs(drawn[h // 4, w // 4].astype(int) - RED).max() < 40
    assert np.abs(drawn[h // 4, 3 * w // 4].astype(int) - BLUE).max() < 40
    with pytest.raises(InvalidFieldsError) as refused:
        services.previews.draw(b.workspace_id, draft, t=0.5)
    assert [d["field"] for d in refused.value.details] == ["/fields/clip"]
