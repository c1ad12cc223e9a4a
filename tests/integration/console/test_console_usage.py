"""The console's usage page (the signed-in workspace's totals, its days, what reuse saved, over a
chosen period; never another workspace's figures) and each render's cost on the video page ("reused"
for a render that drew nothing)."""
from __future__ import annotations

import html
import re
import secrets
import uuid
from datetime import timedelta

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import task_costs
from tests.integration.console.conftest import signed_in_owner

MIB = 1024 * 1024


def _render(services, clock, tenant, video, fmt, *, reused=0, credits=0, tasks=()):
    """A succeeded render of ``video``'s current version made now, with ``reused`` frames reused and
    the task rows ``tasks`` recorded: (task, chunk, cpu_sec, frames, storage_bytes)."""
    version_id = services.videos.get(tenant.workspace_id, video["id"])["current_version"]["id"]
    now = clock.now()
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video["id"], version_id=version_id, format=fmt,
            resolution=720, fps=30, dedup_hash=secrets.token_hex(32), frames=180, chunks=1), charged_credits=credits)
        renders_repo.start_render(conn, clock, render.id)
        renders_repo.set_reused(conn, render.id, reused)
        renders_repo.complete_render(conn, clock, render.id, url_key=f"renders/{render.id}.mp4",
                                     poster_key=f"renders/{render.id}.jpg", size=1000, duration_sec=6.0)
        for task, chunk, cpu, frames, stored in tasks:
            conn.execute(task_costs.insert().values(
                id=str(uuid.uuid4()), workspace_id=tenant.workspace_id, video_id=video["id"], render_id=render.id,
                task=task, chunk=chunk, outcome="finished", node="n1", node_kind="cpu", cpu_sec=cpu,
                wall_sec=cpu * 2, gpu_sec=None, peak_memory_bytes=1, storage_bytes=stored, frames=frames,
                started_at=now - timedelta(seconds=cpu), finished_at=now))
    return render.id


def _two_days(services, clock, ours, theirs, create_video):
    """Our three renders over two days (one drawn, one half reused, one wholly reused) and theirs."""
    video, other = create_video(ours), create_video(theirs)
    drawn = _render(services, clock, ours, video, "9:16", credits=1,
                    tasks=[("chunk", 0, 12.5, 180, 2 * MIB), ("stitch", None, 0.5, 0, MIB)])
    _render(services, clock, theirs, other, "9:16", reused=777, credits=7,
            tasks=[("chunk", 0, 9876.5, 4321, 40 * MIB)])
    clock.advance(timedelta(days=1).total_seconds())
    _render(services, clock, ours, video, "1:1", reused=120,
            tasks=[("chunk", 0, 4.0, 60, MIB), ("stitch", None, 0.2, 0, MIB // 2)])
    reused = _render(services, clock, ours, video, "16:9", reused=180, tasks=[("stitch", None, 0.3, 0, MIB // 2)])
    return video, drawn, reused


def _facts(page: str) -> dict[str, str]:
    return {k: html.unescape(v) for k, v in re.findall(r'<dd data-usage="(\w+)">([^<]*)</dd>', page)}


def _days(page: str) -> dict[str, list[str]]:
    rows = re.findall(r'<tr data-day="([\d-]+)">(.*?)</tr>', page, re.DOTALL)
    return {day: [html.unescape(c) for c in re.findall(r'class="num">([^<]*)<', row)] for day, row in rows}


def test_the_usage_page_shows_the_workspaces_own_figures_by_day(app, services, clock, make_tenant, create_video):
    ours, theirs = make_tenant(name="Acme Bakery"), make_tenant(name="Orbit Labs")
    _two_days(services, clock, ours, theirs, create_video)
    browser = signed_in_owner(app, ours)
    nav = browser.get("/app/videos").get_data(as_text=True)
    assert '<a href="/app/usage" >Usage</a>' in nav

    response = browser.get("/app/usage")  # the 30 days to today
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and '<a href="/app/usage" aria-current="page">Usage</a>' in page
    assert "Acme Bakery, 2025-02-01 to 2025-03-02 (UTC)" in page
    assert _facts(page) == {"renders": "3", "frames_rendered": "240", "frames_reused": "300", "cpu_sec": "17.5 s",
                            "gpu_sec": "0.0 s", "storage_bytes": "5.0 MiB", "credits": "1"}
    assert _days(page) == {"2025-03-01": ["1", "180", "0", "13.0 s", "0.0 s", "3.0 MiB", "1"],
                           "2025-03-02": ["2", "60", "300", "4.5 s", "0.0 s", "2.0 MiB", "0"]}
    saved = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", re.search(r'<p id="usage-saved">(.*?)</p>', page, re.DOTALL).group(1)))
    # 300 of the 540 frames needed; at 17.5 CPU s for 240 drawn frames (72.9 ms), 21.9 s not spent
    assert saved.strip() == ("300 frames came from segments earlier renders had made (55.6% of the frames these "
                             "renders needed): about 21.9 s of CPU time not spent, at the 72.9 ms a drawn frame "
                             "took in this period.")
    for theirs_figure in ("4,321", "777", "9876", "2 h 44 min", "40.0 MiB", "Orbit Labs", theirs.workspace_id):
        assert theirs_figure not in page

    one_day = browser.get("/app/usage?from=2025-03-02&to=2025-03-02").get_data(as_text=True)
    assert _facts(one_day)["renders"] == "2" and _facts(one_day)["cpu_sec"] == "4.5 s"
    assert list(_days(one_day)) == ["2025-03-02"] and 'value="2025-03-02"' in one_day

    theirs_browser = signed_in_owner(app, theirs)
    their_page = theirs_browser.get("/app/usage").get_data(as_text=True)
    assert _facts(their_page) == {"renders": "1", "frames_rendered": "4,321", "frames_reused": "777",
                                  "cpu_sec": "2 h 44 min", "gpu_sec": "0.0 s", "storage_bytes": "40.0 MiB",
                                  "credits": "7"}


def test_a_period_that_is_not_one_is_named_beside_the_form(app, services, clock, make_tenant):
    browser = signed_in_owner(app, make_tenant())
    response = browser.get("/app/usage?from=2025-13-01&to=yesterday")
    page = html.unescape(response.get_data(as_text=True))
    assert response.status_code == 400 and 'data-usage="' not in page
    assert "“2025-13-01” is not a date: write it as YYYY-MM-DD." in page
    assert "“yesterday” is not a date: write it as YYYY-MM-DD." in page
    backwards = browser.get("/app/usage?from=2025-03-02&to=2025-03-01")
    assert backwards.status_code == 400
    assert "2025-03-02 is after the last day (2025-03-01)" in html.unescape(backwards.get_data(as_text=True))
    too_long = browser.get("/app/usage?from=2023-01-01&to=2025-03-01")
    assert too_long.status_code == 400 and "the period is 791 days; at most 366" in too_long.get_data(as_text=True)
    empty = browser.get("/app/usage").get_data(as_text=True)
    assert "Nothing was rendered in this period." in empty and "No frame was reused in this period." in empty
    signed_out = app.test_client().get("/app/usage?from=2025-03-01")
    assert signed_out.status_code == 302 and "/app/sign-in" in signed_out.headers["Location"]


def test_each_render_states_its_cost_and_a_render_that_drew_nothing_reads_reused(app, services, clock, make_tenant,
                                                                                 create_video):
    ours, theirs = make_tenant(name="Acme Bakery"), make_tenant(name="Orbit Labs")
    video, drawn, reused = _two_days(services, clock, ours, theirs, create_video)
    page = signed_in_owner(app, ours).get(f"/app/videos/{video['id']}").get_data(as_text=True)

    def cost(render_id):
        item = re.search(rf'<li class="render[^"]*" id="render-{render_id}".*?</li>', page, re.DOTALL).group(0)
        line = re.search(r"<p [^>]*data-render-cost>(.*?)</p>", item, re.DOTALL).group(1)
        return html.unescape(re.sub(r"<[^>]+>", "", line))

    assert cost(drawn) == "Cost: 13.0 s CPU · 180 frames rendered, 0 reused · 26.0 s wall, its tasks summed"
    assert cost(reused) == "reused 180 frames from earlier renders, none drawn · 0.3 s CPU to join them"
    assert '<span class="status status-reused">reused</span>' in page
    assert page.count("data-render-cost") == 3 and "9876" not in page
