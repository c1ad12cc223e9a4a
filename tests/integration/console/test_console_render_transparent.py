"""The console's render form offers a transparent WebM beside MP4, GIF and WebM, and asks the farm for
exactly that: a WebM render with `transparent`."""
from __future__ import annotations

from reelfarm.shared.repos import renders as renders_repo
from tests.integration.console.conftest import csrf_token, signed_in_owner


def test_the_render_form_offers_and_makes_a_transparent_webm(app, services, make_tenant, create_video):
    tenant = make_tenant(credits=10)
    ann = signed_in_owner(app, tenant)
    video = create_video(tenant)
    page = ann.get(f"/app/videos/{video['id']}").get_data(as_text=True)
    assert '<option value="webm-transparent">WebM, transparent</option>' in page
    started = ann.post(f"/app/videos/{video['id']}/renders", data={
        "csrf_token": csrf_token(ann, "/app/settings"), "format": "9:16", "resolution": "720",
        "container": "webm-transparent"})
    assert started.status_code == 303
    with services.engine.connect() as conn:
        made = renders_repo.list_renders(conn, tenant.workspace_id, video["id"])
    assert [(r.container, r.transparent) for r in made] == [("webm", True)]
    assert "as WebM, transparent." in ann.get(f"/app/videos/{video['id']}").get_data(as_text=True)
    refused = ann.post(f"/app/videos/{video['id']}/renders", data={
        "csrf_token": csrf_token(ann, "/app/settings"), "format": "9:16", "resolution": "720", "container": "mov"})
    assert refused.status_code == 400
