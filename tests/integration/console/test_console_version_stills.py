"""The Versions table's Show still: a still of any version of the video, drawn for that version, and
the Versions table's account of what each version changed; never another workspace's video."""
from __future__ import annotations

from html import unescape

from reelfarm.shared.repos import jobs as jobs_repo
from tests.integration.console.conftest import csrf_token, signed_in_owner

JSON = {"Accept": "application/json"}


def test_a_still_of_an_older_version_is_drawn_of_that_version_in_its_workspace_only(app, services, make_tenant,
                                                                                  create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    video = create_video(acme, title="Teaser", format="9:16", fields={"headline": "First take"})
    first = services.videos.get(acme.workspace_id, video["id"])["current_version"]["id"]
    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Second take"})
    path = f"/app/videos/{video['id']}"
    page = unescape(ann.get(path).get_data(as_text=True))
    assert "Headline:</span> <span class=\"change-old\">First take</span>" in page
    assert "Show still<span class=\"visually-hidden\"> of version 1</span>" in page

    token = csrf_token(ann, path)
    asked = ann.post(f"{path}/stills", data={"csrf_token": token, "time": "1.5", "version": "1"}, headers=JSON)
    assert asked.status_code == 202, asked.get_json()
    with services.engine.connect() as conn:
        job = jobs_repo.get_job(conn, acme.workspace_id, asked.get_json()["id"])
    assert job.params["version_id"] == first and job.params["times"] == [1.5]

    plain = ann.post(f"{path}/stills", data={"csrf_token": token, "time": "1", "version": "1"})
    assert plain.status_code == 303 and "of=1" in plain.headers["Location"]
    assert ann.post(f"{path}/stills", data={"csrf_token": token, "time": "1", "version": "7"},
                    headers=JSON).status_code == 404
    theirs = bob.post(f"{path}/stills", data={"csrf_token": csrf_token(bob, "/app/videos"), "time": "1",
                                              "version": "1"}, headers=JSON)
    assert theirs.status_code == 404
