"""What a version's lint says about a story's values: a ``sample_value`` warning per field still
holding the story's sample (the API's and the CLI's way to see them), and ``sound_ends_early`` for a
soundtrack played once that ends before the video, measured by the media library at upload (a story's
soundtrack, or a document's sound by its key); a
looping soundtrack (the default) has no warning, and the document names the fit."""
from __future__ import annotations

from tests.integration.api.test_api_assets import mp3, upload


def _create(client, tenant, story: str, **fields) -> dict:
    answer = client.post("/api/v1/videos", json={"storyId": story, "format": "16:9", "durationSec": 14,
                                                 "fields": fields}, headers=tenant.headers)
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()


def test_fields_left_at_the_storys_samples_are_warned_about_one_by_one(client, tenant):
    video = _create(client, tenant, "webinar", title="Pricing, plainly", speaker="Ada Moreau")
    samples = {w["field"]: w["message"] for w in video["current_version"]["lint"] if w["code"] == "sample_value"}
    assert "/fields/speaker" not in samples and "/fields/title" not in samples
    assert samples["/fields/speaker_role"] == ('Speaker role still holds the story\'s sample ("Head of Design, '
                                               'Northwind"); change it, or clear it if it may be empty')
    assert {"/fields/kicker", "/fields/when", "/fields/url"} <= set(samples)
    assert "/fields/theme" not in samples and "/fields/photo" not in samples  # settings, not samples

    patched = client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"speaker": "Maya Okafor"}},
                           headers=tenant.headers)
    assert patched.status_code == 200, patched.get_json()
    again = [w["field"] for w in patched.get_json()["current_version"]["lint"] if w["code"] == "sample_value"]
    assert "/fields/speaker" in again  # typed back to the sample: warned again


def test_a_soundtrack_played_once_that_ends_early_is_warned_about(client, tenant):
    sound = upload(client, tenant, mp3(6.0)).get_json()
    once = _create(client, tenant, "announcement", soundtrack={"asset_id": sound["id"], "fit": "once"})
    assert once["current_version"]["doc"]["audio"][0]["fit"] == "once"
    [early] = [w for w in once["current_version"]["lint"] if w["code"] == "sound_ends_early"]
    assert early["field"] == "/audio/0/fit"
    assert early["message"].startswith("the sound ends at 6.0 s, 8.0 s before the video")
    looped = _create(client, tenant, "announcement", soundtrack={"asset_id": sound["id"]})
    assert looped["current_version"]["doc"]["audio"][0]["fit"] == "loop"
    assert not [w for w in looped["current_version"]["lint"] if w["code"] == "sound_ends_early"]
    doc = looped["current_version"]["doc"]  # a whole document sent back is linted with the sound's length too
    doc["audio"][0]["fit"] = "once"
    patched = client.patch(f"/api/v1/videos/{looped['id']}", json={"doc": doc}, headers=tenant.headers)
    assert patched.status_code == 200, patched.get_json()
    assert [w["field"] for w in patched.get_json()["current_version"]["lint"]
            if w["code"] == "sound_ends_early"] == ["/audio/0/fit"]
    refused = client.post("/api/v1/videos", json={"storyId": "announcement", "fields": {
        "soundtrack": {"asset_id": sound["id"], "fit": "stretch"}}}, headers=tenant.headers)
    assert refused.status_code == 400 and refused.get_json()["error"]["details"][0]["field"] == "/fields/soundtrack/fit"
