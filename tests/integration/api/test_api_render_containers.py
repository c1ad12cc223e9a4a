"""GIF and WebM renders over the API: the request's `container` and `transparent`, every problem
with them listed in one 400, the GIF's lowered values said in `clamped`, dedup by container, and
the file's download name, extension and content type."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from reelfarm.shared.storage import content_disposition
from tests.integration.api.support import assert_error, fields_of
from tests.integration.api.test_api_renders import _video, _wait, farm_client  # noqa: F401 - a fixture


def test_container_problems_are_listed_together(client, make_tenant):
    tenant = make_tenant(credits=3)
    video = _video(client, tenant, format="1:1")
    path = f"/api/v1/videos/{video['id']}/renders"
    error = assert_error(client.post(path, json={"format": "1:1", "container": "mov", "resolution": 5},
                                     headers=tenant.headers), 400, "validation_failed")
    assert sorted(fields_of(error)) == [("/container", "invalid_choice"), ("/resolution", "invalid_choice")]
    error = assert_error(client.post(path, json={"format": "5:4", "container": "gif", "transparent": True},
                                     headers=tenant.headers), 400, "validation_failed")
    assert sorted(fields_of(error)) == [("/format", "invalid_choice"), ("/transparent", "unsupported")]
    error = assert_error(client.post(path, json={"format": "1:1", "transparent": True}, headers=tenant.headers),
                         400, "validation_failed")
    assert fields_of(error) == [("/transparent", "unsupported")]  # an MP4 has no alpha
    error = assert_error(client.post(f"/api/v1/videos/{video['id']}/variants",
                                     json={"formats": ["1:1"], "container": "gif", "transparent": True},
                                     headers=tenant.headers), 400, "validation_failed")
    assert fields_of(error) == [("/transparent", "unsupported")]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_gif_and_a_webm_of_a_story_are_named_and_typed_by_their_container(farm_client, make_tenant):  # noqa: F811
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="1:1", title="Spring Sale")
    path = f"/api/v1/videos/{video['id']}/renders"
    gif = farm_client.post(path, json={"format": "1:1", "resolution": 1080, "fps": 60, "container": "gif"},
                           headers=tenant.headers)
    assert gif.status_code == 202, gif.get_json()
    gif = gif.get_json()
    assert (gif["container"], gif["resolution"], gif["fps"], gif["clamped"]) == ("gif", 720, 24, ["resolution", "fps"])
    again = farm_client.post(path, json={"format": "1:1", "resolution": 720, "fps": 24, "container": "gif"},
                             headers=tenant.headers).get_json()
    assert again["id"] == gif["id"] and again["clamped"] == []
    webm = farm_client.post(path, json={"format": "1:1", "resolution": 720, "fps": 24, "container": "webm",
                                        "transparent": True}, headers=tenant.headers).get_json()
    assert webm["id"] != gif["id"] and webm["transparent"] is True

    for render, ext, kind in ((gif, "gif", "image/gif"), (webm, "webm", "video/webm")):
        done, _ = _wait(farm_client, f"/api/v1/renders/{render['id']}", tenant.headers)
        assert done["status"] == "succeeded", done["error"]
        assert done["stream_url"] is None
        name = f"spring-sale-v1-1x1-720p.{ext}"
        assert parse_qs(urlsplit(done["url"]).query)["name"] == [name]
        answer = farm_client.get(f"{urlsplit(done['url']).path}?{urlsplit(done['url']).query}&download=1")
        assert answer.status_code == 200
        assert answer.headers["Content-Type"] == kind
        assert answer.headers["Content-Disposition"] == content_disposition(name)
        assert answer.data[:6] == b"GIF89a" if ext == "gif" else answer.data[:4] == b"\x1a\x45\xdf\xa3"
