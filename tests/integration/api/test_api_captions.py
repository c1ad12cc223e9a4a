"""Captions over the API: SRT and WebVTT files in the media library (a wrong one refused naming its
line), a story's `captions` field naming the workspace's own file only, and a render that draws
each cue's words only during its time (decoded frames, against the same video without captions),
publishes them as WebVTT (`captions_url`) and as a subtitles rendition of its HLS stream."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import av
import numpy as np
import pytest

from reelfarm.renderer.captions import Cue, parse_captions
from reelfarm.renderer.hls import TS_LEAD_SEC
from tests.integration.api.support import assert_error, fields_of
from tests.integration.api.test_api_assets import fetch, upload
from tests.integration.api.test_api_renders import _video, _wait, farm_client  # noqa: F401 - a fixture

SRT = (b"1\r\n00:00:01,000 --> 00:00:02,000\r\nThe first <i>words</i>\r\n\r\n"
       b"2\r\n00:00:03,500 --> 00:00:04,500\r\nAnd the last ones\r\n")
CUES = [Cue(1.0, 2.0, "The first words"), Cue(3.5, 4.5, "And the last ones")]
FPS = 24


def _get(client, url: str):
    parts = urlsplit(url)
    return client.get(f"{parts.path}?{parts.query}")


def test_captions_files_are_taken_and_a_wrong_one_is_refused_naming_its_line(client, tenant):
    made = upload(client, tenant, SRT, "subs.srt")
    assert made.status_code == 201, made.get_json()
    asset = made.get_json()
    assert (asset["kind"], asset["content_type"], asset["cues"], asset["duration_sec"], asset["name"]) == \
        ("captions", "application/x-subrip", 2, 4.5, "subs.srt")
    vtt = upload(client, tenant, b"WEBVTT\n\n00:00.500 --> 00:01.000\nHi\n", "subs.vtt").get_json()
    assert (vtt["kind"], vtt["content_type"], vtt["cues"]) == ("captions", "text/vtt", 1)
    listed = client.get("/api/v1/assets?kind=captions", headers=tenant.headers).get_json()
    assert {a["id"] for a in listed["data"]} == {asset["id"], vtt["id"]}

    wrong = b"WEBVTT\n\n00:00.500 --> 00:01.000\nHi\n\n00:02.000 -> 00:03.000\nThere\n"
    error = assert_error(upload(client, tenant, wrong, "wrong.vtt"), 400, "validation_failed")
    assert fields_of(error) == [("/file", "invalid_captions")]
    assert error["details"][0]["message"] == ("the captions file is wrong at line 6: '00:02.000 -> 00:03.000' is not a "
                                              "cue timing (HH:MM:SS.mmm or MM:SS.mmm --> HH:MM:SS.mmm or MM:SS.mmm)")
    listed = client.get("/api/v1/assets?kind=captions", headers=tenant.headers).get_json()
    assert len(listed["data"]) == 2, "nothing of the refused file is stored"


def test_a_video_takes_only_its_own_workspaces_captions_file(client, make_tenant):
    ours, theirs = make_tenant(credits=2), make_tenant(credits=2)
    their_file = upload(client, theirs, SRT, "subs.srt").get_json()
    error = assert_error(client.post("/api/v1/videos", json={
        "storyId": "announcement", "durationSec": 6, "fields": {"captions": {"asset_id": their_file["id"]}}},
        headers=ours.headers), 400, "validation_failed")
    assert fields_of(error) == [("/fields/captions/asset_id", "unknown_asset")]
    assert "no captions file of this workspace's media library" in error["details"][0]["message"]
    our_image = upload(client, ours, _png(), "x.png").get_json()
    error = assert_error(client.post("/api/v1/videos", json={
        "storyId": "announcement", "durationSec": 6, "fields": {"captions": {"asset_id": our_image["id"]}}},
        headers=ours.headers), 400, "validation_failed")
    assert fields_of(error) == [("/fields/captions/asset_id", "unknown_asset")], "an image is not captions"
    error = assert_error(client.post("/api/v1/videos", json={
        "storyId": "announcement", "durationSec": 6, "fields": {"captions": {"asset_id": their_file["id"],
                                                                              "style": "loud"}}},
        headers=ours.headers), 400, "validation_failed")
    assert fields_of(error) == [("/fields/captions/style", "invalid_choice")]

    our_file = upload(client, ours, SRT, "subs.srt").get_json()
    assert our_file["id"] != their_file["id"], "the same bytes are each workspace's own asset"
    video = _video(client, ours, fields={"captions": {"asset_id": our_file["id"], "style": "inverse"}})
    doc = video["current_version"]["doc"]
    assert doc["captions"] == {"cues": [c.as_dict() for c in CUES], "style": "inverse"}
    assert_error(client.delete(f"/api/v1/assets/{our_file['id']}", headers=ours.headers), 409, "asset_in_use",
                 details=None)


def _png() -> bytes:
    import io

    from PIL import Image
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (255, 0, 255)).save(out, "PNG")
    return out.getvalue()


def _frames(path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24").astype(np.int16) for f in container.decode(container.streams.video[0])]


def _render(client, tenant, video) -> dict:
    r = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720, "fps": FPS},
                    headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    done, _ = _wait(client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    return done


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_render_shows_each_cue_only_during_its_time_and_serves_them(farm_client, make_tenant, tmp_path):  # noqa: F811
    tenant = make_tenant(credits=5)
    subs = upload(farm_client, tenant, SRT, "subs.srt").get_json()
    shown = _render(farm_client, tenant, _video(farm_client, tenant, format="16:9",
                                               fields={"captions": {"asset_id": subs["id"]}}))
    bare = _render(farm_client, tenant, _video(farm_client, tenant, format="16:9"))
    assert bare["captions_url"] is None
    paths = []
    for n, render in enumerate((shown, bare)):
        paths.append(tmp_path / f"{n}.mp4")
        paths[-1].write_bytes(fetch(farm_client, render["url"]))
    with_words, without = _frames(paths[0]), _frames(paths[1])
    assert len(with_words) == len(without) == 6 * FPS
    for n, (a, b) in enumerate(zip(with_words, without)):
        t = n / FPS
        region = np.abs(a[540:684, 128:1152] - b[540:684, 128:1152]).max(axis=2) > 48  # the safe area's foot
        during = any(c.start <= t < c.end for c in CUES)
        near_an_edge = any(abs(t - edge) < 1.5 / FPS for c in CUES for edge in (c.start, c.end))
        if near_an_edge:
            continue
        if during:
            assert region.mean() > 0.03, f"frame {n} ({t:.2f} s) shows its cue"
        else:
            assert region.mean() < 0.002, f"frame {n} ({t:.2f} s) shows nothing more than the bare video"
        assert (np.abs(a - b).max(axis=2)[:500] > 48).mean() < 0.002, f"frame {n}: nothing changes above the captions"

    served = _get(farm_client, shown["captions_url"])
    assert served.status_code == 200 and served.headers["Content-Type"].startswith("text/vtt")
    assert parse_captions(served.data) == CUES

    master = _get(farm_client, shown["stream_url"])
    assert master.status_code == 200, master.get_json()
    text = master.get_data(as_text=True)
    media = re.search(r'#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Captions",DEFAULT=YES,AUTOSELECT=YES,'
                      r'URI="([^"]+)"', text)
    assert media is not None, text
    variant = re.search(r'#EXT-X-STREAM-INF:BANDWIDTH=\d+,RESOLUTION=1280x720,SUBTITLES="subs"\n(\S+)\n', text)
    assert variant is not None, text
    subtitles = _get(farm_client, media.group(1)).get_data(as_text=True)
    assert "#EXT-X-PLAYLIST-TYPE:VOD" in subtitles and "#EXTINF:6.000000," in subtitles, subtitles
    segment_uri = next(line for line in subtitles.splitlines() if line and not line.startswith("#"))
    vtt = _get(farm_client, segment_uri)
    assert vtt.status_code == 200 and vtt.headers["Content-Type"].startswith("text/vtt")
    assert "X-TIMESTAMP-MAP=MPEGTS:90000,LOCAL:00:00:00.000" in vtt.get_data(as_text=True)
    assert parse_captions(vtt.data) == CUES
    playlist = _get(farm_client, variant.group(1)).get_data(as_text=True)
    assert playlist.count("#EXTINF") >= 1 and "#EXT-X-ENDLIST" in playlist
    first_segment = next(line for line in playlist.splitlines() if line and not line.startswith("#"))
    (tmp_path / "seg0.ts").write_bytes(fetch(farm_client, first_segment))
    with av.open(str(tmp_path / "seg0.ts")) as ts:
        stream = ts.streams.video[0]
        first = min(p.pts for p in ts.demux(stream) if p.pts is not None)
        assert first * stream.time_base == TS_LEAD_SEC, "the map's MPEG-TS time is the video's second 0"

    other = make_tenant(credits=1)
    assert farm_client.get(f"/api/v1/renders/{shown['id']}", headers=other.headers).status_code == 404
    forged = re.sub(r"sig=[^&]+", "sig=forged", media.group(1))
    assert _get(farm_client, forged).status_code == 403
    assert _get(farm_client, bare["stream_url"].replace(".m3u8", "/captions.m3u8")).status_code == 404
