"""A render an operator suspended, as its workspace sees it over the API: ``held_up`` says
``suspended`` (a reason the published schema lists), it has no place in line, and another
workspace's render is untouched; resumed, it waits in line again. The farm is not started here, so
renders wait (the embedded queue)."""
from __future__ import annotations

from typing import Any

from reelfarm.api.schemas.renders import RenderSchema
from reelfarm.farm.runtime.embeddedholds import EmbeddedHolds
from reelfarm.farm.services.audit import AuditLog
from reelfarm.farm.services.rendercontrols import RenderControls
from tests.integration.api.test_api_renders import _video


def _render(client: Any, tenant: Any) -> dict[str, Any]:
    video = _video(client, tenant)
    made = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720},
                       headers=tenant.headers)
    assert made.status_code == 202, made.get_json()
    return made.get_json()  # type: ignore[no-any-return]


def test_a_suspended_render_says_so_and_is_out_of_line_until_resumed(client, services, clock, make_tenant) -> None:
    mine, theirs = make_tenant(credits=10), make_tenant(credits=10)
    held, other = _render(client, mine), _render(client, theirs)
    controls = RenderControls(services.engine, clock, EmbeddedHolds(services.engine, clock),
                              AuditLog(services.engine, clock))

    (done,) = controls.suspend("ops-gina", workspace_id=mine.workspace_id, reason="billing")
    assert done.render_id == held["id"] and done.changed

    shown = client.get(f"/api/v1/renders/{held['id']}", headers=mine.headers).get_json()
    assert RenderSchema().validate(shown) == {}
    assert shown["status"] == "queued" and shown["queue"] is None
    assert shown["held_up"]["reason"] == "suspended" and shown["held_up"]["chunk"] == 0
    assert "until it is resumed" in shown["held_up"]["message"]
    untouched = client.get(f"/api/v1/renders/{other['id']}", headers=theirs.headers).get_json()
    assert untouched["held_up"] is None and untouched["queue"]["chunks_waiting"] >= 1

    controls.resume("ops-gina", held["id"])
    back = client.get(f"/api/v1/renders/{held['id']}", headers=mine.headers).get_json()
    assert back["held_up"] is None and back["queue"]["chunks_waiting"] == held["queue"]["chunks_waiting"]
