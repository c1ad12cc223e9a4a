"""A workspace's monthly compute allowance: a render or variants whose estimate would pass it is
refused with 402 `allowance_exceeded` naming the allowance, what is used and the estimate; other
workspaces are untouched; an identical render (estimated at 0) is always answered; the operator's
command sets it and the audit log records it."""
from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from reelfarm.cli import main
from reelfarm.farm.services.errors import AllowanceExceeded
from reelfarm.farm.services.estimates import Output
from reelfarm.shared.tables import renders
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_renders import _video, _wait
from tests.integration.api.test_api_usage import _estimate, _settled


@pytest.fixture
def farm_client(services, app):
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


def _render(client, tenant, video_id, fmt="9:16"):
    return client.post(f"/api/v1/videos/{video_id}/renders", json={"format": fmt, "resolution": 720},
                       headers=tenant.headers)


def _figures(response):
    error = assert_error(response, 402, "allowance_exceeded")
    [detail] = error["details"]
    assert detail["code"] == "allowance_exceeded" and detail["message"] == error["message"]
    return detail["allowance_cpu_sec"], detail["used_cpu_sec"], detail["estimate_cpu_sec"], error["message"]


def test_a_render_past_the_allowance_is_refused_and_only_in_its_workspace(farm_client, services, make_tenant):
    ours, theirs = make_tenant(credits=5), make_tenant(credits=5, name="other")
    services.workspace_controls.set_allowance("ops", ours.workspace_id, 0.5)
    video, copy = _video(farm_client, ours, format="9:16"), _video(farm_client, theirs, format="9:16")
    estimate = _estimate(farm_client, ours, video["id"], resolution=720)

    allowance, used, asked, message = _figures(_render(farm_client, ours, video["id"]))
    assert (allowance, used, asked) == (0.5, 0.0, estimate["cpu_sec"]) and asked > 0.5
    assert (f"allowance of 0.5 CPU seconds: 0 are used this month (renders in flight counted at their estimates) "
            f"and it is estimated at {asked:g}") in message
    assert farm_client.get(f"/api/v1/videos/{video['id']}/renders", headers=ours.headers).get_json()["data"] == []
    assert farm_client.get("/api/v1/me", headers=ours.headers).get_json()["workspace"]["credits"] == 5
    variants = farm_client.post(f"/api/v1/videos/{video['id']}/variants",
                                json={"formats": ["9:16", "1:1"], "resolution": 720}, headers=ours.headers)
    both = _estimate_variants(farm_client, ours, video["id"])
    assert _figures(variants)[:3] == (0.5, 0.0, both)

    theirs_render = _render(farm_client, theirs, copy["id"])  # no allowance there
    assert theirs_render.status_code == 202, theirs_render.get_json()

    services.workspace_controls.set_allowance("ops", ours.workspace_id, None)
    made = _render(farm_client, ours, video["id"]).get_json()
    assert _wait(farm_client, f"/api/v1/renders/{made['id']}", ours.headers)[0]["status"] == "succeeded"
    render, _ = _settled(farm_client, ours, made["id"])
    spent = render["cost"]["cpu_sec"]
    services.workspace_controls.set_allowance("ops", ours.workspace_id, spent + 0.01)

    again = _render(farm_client, ours, video["id"])  # identical: nothing runs, never refused
    assert again.status_code == 202 and again.get_json()["id"] == made["id"]
    allowance, used, asked, _ = _figures(_render(farm_client, ours, video["id"], fmt="1:1"))
    assert (allowance, used) == (spent + 0.01, spent) and asked > 0.01
    assert _render(farm_client, theirs, copy["id"], fmt="1:1").status_code == 202


def test_renders_in_flight_hold_their_estimates_so_requests_together_cannot_pass_the_allowance(
        app, services, make_tenant, monkeypatch):
    """No node runs here: what is made stays queued, its estimate reserved."""
    client = app.test_client()
    ours, theirs = make_tenant(credits=5), make_tenant(credits=5, name="other")
    video = _video(client, ours, format="9:16")
    one = _estimate(client, ours, video["id"], resolution=720)["cpu_sec"]
    services.workspace_controls.set_allowance("ops", ours.workspace_id, round(one * 1.5, 2))
    services.workspace_controls.set_allowance("ops", theirs.workspace_id, round(one * 1.5, 2))

    stale = services.renders.allowance.quote(ours.workspace_id, video["id"], ["9:16"], Output("", 720))
    first = _render(client, ours, video["id"])
    assert first.status_code == 202, first.get_json()
    with services.engine.connect() as conn:
        kept = conn.execute(select(renders.c.estimate_cpu_sec).where(renders.c.id == first.get_json()["id"])).scalar()
    assert kept == pytest.approx(one, abs=0.01)
    allowance, used, asked, _ = _figures(_render(client, ours, video["id"], fmt="1:1"))
    assert (allowance, used) == (round(one * 1.5, 2), pytest.approx(one, abs=0.01)) and asked > 0
    again = _render(client, ours, video["id"])  # the render in flight itself: nothing more runs
    assert again.status_code == 202 and again.get_json()["id"] == first.get_json()["id"]
    # a request estimated before that render existed, decided after: it finds the render, runs nothing
    monkeypatch.setattr(services.renders.allowance, "quote", lambda *args: stale)
    found = services.renders.request(ours.workspace_id, video["id"], "9:16", resolution=720)
    assert stale.cpu_sec > 0 and found["id"] == first.get_json()["id"]
    monkeypatch.undo()

    # in the other workspace, two requests at the same moment: one is made, the other refused
    copy = _video(client, theirs, format="9:16")
    start, outcomes = threading.Barrier(2), []

    def ask(fmt: str) -> None:
        start.wait()
        try:
            outcomes.append(services.renders.request(theirs.workspace_id, copy["id"], fmt, resolution=720)["id"])
        except AllowanceExceeded as refused:
            outcomes.append(refused)

    threads = [threading.Thread(target=ask, args=(fmt,)) for fmt in ("9:16", "4:5")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    refused = [o for o in outcomes if isinstance(o, AllowanceExceeded)]
    assert len(outcomes) == 2 and len(refused) == 1, outcomes
    assert refused[0].used > 0, "the one decided second counted the render of the first"
    listed = client.get(f"/api/v1/videos/{copy['id']}/renders", headers=theirs.headers).get_json()["data"]
    assert len(listed) == 1


def _estimate_variants(client, tenant, video_id):
    response = client.post(f"/api/v1/videos/{video_id}/variants/estimate",
                           json={"formats": ["9:16", "1:1"], "resolution": 720}, headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["cpu_sec"]


def test_the_operator_sets_the_allowance_and_the_audit_log_records_it(services, make_tenant, db_url, tmp_path):
    ours, theirs = make_tenant(), make_tenant(name="other")
    env = {"REELFARM_DATA_DIR": str(tmp_path / "cli"), "REELFARM_DATABASE_URL": db_url}

    def admin(*args: str):
        return CliRunner().invoke(main, ["admin", *args], env=env, catch_exceptions=False)

    done = admin("set-allowance", "--workspace", ours.workspace_id, "--cpu-sec", "3600", "--operator", "maya",
                 "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"workspace_id": ours.workspace_id, "cpu_allowance_sec": 3600.0,
                                       "used_cpu_sec": 0.0}
    assert services.workspaces.get(ours.workspace_id).cpu_allowance_sec == 3600.0
    assert services.workspaces.get(theirs.workspace_id).cpu_allowance_sec is None
    cleared = admin("set-allowance", "--workspace", ours.workspace_id, "--none", "--operator", "maya")
    assert cleared.exit_code == 0 and cleared.output.strip() == "no allowance; 0.0 CPU s used this month"
    assert services.workspaces.get(ours.workspace_id).cpu_allowance_sec is None
    assert admin("set-allowance", "--workspace", ours.workspace_id).exit_code != 0  # neither --cpu-sec nor --none
    assert admin("set-allowance", "--workspace", "00000000-0000-0000-0000-000000000000", "--cpu-sec", "1").exit_code != 0

    entries = admin("audit", "--action", "workspace.set_allowance", "--workspace", ours.workspace_id, "--json")
    rows = json.loads(entries.output)
    assert [(r["actor"], r["workspace_id"], r["details"]) for r in rows] == [
        ("maya", ours.workspace_id, {"cpu_sec": None, "was": 3600.0}),
        ("maya", ours.workspace_id, {"cpu_sec": 3600.0, "was": None})]
