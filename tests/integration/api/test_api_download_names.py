"""A render's and a still's signed URLs name their downloads after the video's title, the number of
the version they show, the format and the resolution by themselves (two versions' files never
share a name): ``download=1`` alone on local storage, and S3's own
``Content-Disposition`` on a presigned URL (``ResponseContentDisposition``, signed with the rest).

Renders and stills are made for real by the app's embedded farm; S3 is moto's server on loopback,
reached over HTTP as a client would.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from reelfarm.farm.services.resources import download_name
from reelfarm.shared.storage import content_disposition
from tests.integration.api.test_api_assets import s3_endpoint, settings  # noqa: F401 - fixtures: local files or moto's S3
from tests.integration.api.test_api_renders import _video, _wait, farm_client  # noqa: F401 - a fixture

TITLE = "Spring Sale! (é)"


def _fetch(client, url: str, download: bool) -> tuple[bytes, str]:
    """The file behind ``url`` and its Content-Disposition: from this app (local storage, with
    ``download=1`` added when asked) or from S3 (as handed out: its query is signed)."""
    parts = urlsplit(url)
    if "/files/" in parts.path:
        answer = client.get(f"{parts.path}?{parts.query}{'&download=1' if download else ''}")
        assert answer.status_code == 200
        return answer.data, answer.headers["Content-Disposition"]
    answer = httpx.get(url, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.content, answer.headers["Content-Disposition"]


def test_download_names_come_from_the_title_version_format_and_resolution():
    assert download_name("Spring Sale!", "9:16", 1080, version=2) == "spring-sale-v2-9x16-1080p"
    assert download_name("Spring Sale!", "9:16", 1080, "1.5s", 1) == "spring-sale-v1-9x16-1080p-1.5s"
    assert download_name("Spring Sale!", "9:16", 1080) == "spring-sale-9x16-1080p"
    assert download_name("  Café   crème — 50% off ", "1:1", 720, "1.5s") == "cafe-creme-50-off-1x1-720p-1.5s"
    assert download_name("春のセール", "16:9", 2160) == "video-16x9-2160p"
    assert download_name(None, "4:5", 720) == "video-4x5-720p"
    assert len(download_name("x" * 500, "9:16", 1080)) == 80 + len("-9x16-1080p")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # names come from storage, whatever the database
def test_a_renders_and_a_stills_urls_name_their_downloads(farm_client, make_tenant, settings):  # noqa: F811
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="9:16", title=TITLE)
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    done, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    local = settings.storage_url.startswith("file:")

    data, disposition = _fetch(farm_client, done["url"], download=True)
    assert data[4:8] == b"ftyp"
    assert disposition == content_disposition("spring-sale-e-v1-9x16-720p.mp4")
    assert disposition.startswith('attachment; filename="spring-sale-e-v1-9x16-720p.mp4"')
    _, poster = _fetch(farm_client, done["poster_url"], download=True)
    assert poster == content_disposition("spring-sale-e-v1-9x16-720p-poster.jpg")
    if local:  # without download=1 the same URL stays inline for players
        assert _fetch(farm_client, done["url"], download=False)[1].startswith("inline")
        assert parse_qs(urlsplit(done["url"]).query)["name"] == ["spring-sale-e-v1-9x16-720p.mp4"]
    else:
        assert "response-content-disposition" in urlsplit(done["url"]).query

    listed = farm_client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"]
    assert _fetch(farm_client, listed[0]["url"], download=True)[1] == disposition

    job = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [0.5, 3], "format": "1:1"},
                           headers=tenant.headers)
    assert job.status_code == 202, job.get_json()
    finished, _ = _wait(farm_client, f"/api/v1/jobs/{job.get_json()['id']}", tenant.headers)
    assert finished["status"] == "succeeded", finished["error"]
    names = [_fetch(farm_client, s["url"], download=True)[1] for s in finished["result"]["stills"]]
    assert names == [content_disposition("spring-sale-e-v1-1x1-1080p-0.5s.png"),
                     content_disposition("spring-sale-e-v1-1x1-1080p-3s.png")]

    # version 2's MP4 is not saved under version 1's name
    patched = farm_client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"headline": "Second take"}},
                                headers=tenant.headers)
    assert patched.status_code == 200, patched.get_json()
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    second, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert second["status"] == "succeeded", second["error"]
    assert _fetch(farm_client, second["url"], download=True)[1] == content_disposition("spring-sale-e-v2-9x16-720p.mp4")
    listed = farm_client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"]
    assert sorted(_fetch(farm_client, x["url"], download=True)[1] for x in listed) == [
        content_disposition("spring-sale-e-v1-9x16-720p.mp4"), content_disposition("spring-sale-e-v2-9x16-720p.mp4")]
