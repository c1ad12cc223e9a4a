"""The operators' farm page: a failed render shown as failed, with its workspace's name (not as
its chunk tasks, canceled when it failed); the page refreshed by its script, with a meta refresh
only inside ``<noscript>``.
"""
from __future__ import annotations

import re
import uuid
from datetime import timedelta

from reelfarm.shared.db import transaction
from reelfarm.shared.tables import queued_tasks
from tests.integration.api.support import failed_render
from tests.integration.console.test_console_app import EMAIL, _sign_in, _user


def _tasks(services, clock, render_id: str, status: str, count: int) -> None:
    now = clock.now()
    with transaction(services.engine) as conn:
        conn.execute(queued_tasks.insert(), [
            {"id": f"{render_id}:{status}:{i}", "func": "reelfarm.farm.runtime.tasks.render_chunk",
             "args": [render_id, i], "queue": "render", "status": status, "depends_on": [], "run_after": now,
             "created_at": now, "updated_at": now, "finished_at": now if status == "canceled" else None}
            for i in range(count)])


def test_a_failed_render_is_shown_failed_with_its_workspaces_name(app, services, clock, make_tenant, create_video):
    acme, other = make_tenant(name="Acme Bakery"), make_tenant(name="Orbit Labs")
    clock.advance(timedelta(minutes=1).total_seconds())
    render_id = failed_render(services, clock, acme, create_video)
    _tasks(services, clock, render_id, "canceled", 8)
    _tasks(services, clock, "waiting-render", "queued", 3)
    _tasks(services, clock, "later-render", "deferred", 1)  # a column before "queued"
    _user(app, other, EMAIL["op"], operator=True)
    operator = app.test_client()
    _sign_in(operator, EMAIL["op"])
    page = operator.get("/app/farm").get_data(as_text=True)

    row = re.search(rf"<tr>(?:(?!</tr>).)*{render_id}(?:(?!</tr>).)*</tr>", page, re.DOTALL).group(0)
    assert "Acme Bakery" in row and acme.workspace_id not in row and "failed" in row and "encoder crashed" in row
    queues = re.search(r'<section class="card" aria-labelledby="queues-h">.*?</section>', page, re.DOTALL).group(0)
    # the render queue's row; other tests' tasks in the shared PostgreSQL database may add columns before it
    render_row = re.search(r'<td data-label="Queue">render</td>(?:(?!</tr>).)*', queues, re.DOTALL).group(0)
    queued = re.search(r'<td data-label="queued" class="num">(\d+)<', render_row)
    assert "canceled" not in queues and queued and int(queued.group(1)) >= 3  # (PostgreSQL is shared by tests)
    head = page.split("</head>")[0]
    assert re.findall(r"<noscript><meta http-equiv=\"refresh\"", head) and head.count('http-equiv="refresh"') == 1


def test_a_source_that_cannot_be_read_is_named_on_the_page(app, services, make_tenant, monkeypatch):
    """The page shows what it can and names what it cannot (``collect_status``'s ``unavailable``)."""
    from sqlalchemy.exc import OperationalError

    from reelfarm.farm.runtime.embedded import EmbeddedQueue

    def down(self):
        raise OperationalError("SELECT", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(EmbeddedQueue, "depths", down)
    email = f"ops-{uuid.uuid4().hex[:8]}@example.com"  # the PostgreSQL database is the session's
    _user(app, make_tenant(name="Ops"), email, operator=True)
    operator = app.test_client()
    _sign_in(operator, email)
    page = operator.get("/app/farm").get_data(as_text=True)
    notice = re.search(r'<p class="flash flash-error" role="status" data-unavailable="database">([^<]*)</p>', page)
    assert notice and "the database cannot be read (" in notice.group(1) and "server closed the connection" in page
