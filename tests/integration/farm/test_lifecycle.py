"""The render lifecycle's transition table, on SQLite and PostgreSQL: every event tried from every
status, against real rows; what it allows changes the status (with refund and event), what it
refuses changes nothing. And the table is the only writer: no farm module but the lifecycle calls
the repository's status changes."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import select, update

from reelfarm.farm.services import lifecycle as lc
from reelfarm.farm.services.errors import StateConflict
from reelfarm.farm.services.lifecycle import TRANSITIONS, Finished, RenderLifecycle
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import event_outbox, renders
from tests.integration.farm.conftest import Farm, make_doc

FARM = Path(lc.__file__).resolve().parent
STATUS_WRITERS = {"start_render", "complete_render", "fail_render", "cancel_render"}

EXPECTED = {  # (status, event): status after, or None when refused
    ("queued", "start"): "running", ("running", "start"): "running",
    ("queued", "succeed"): None, ("running", "succeed"): "succeeded",
    ("queued", "fail"): "failed", ("running", "fail"): "failed",
    ("queued", "cancel"): "canceled", ("running", "cancel"): "canceled",
}


def _render_in(farm: Farm, status: str) -> tuple[str, str]:
    workspace = farm.workspace(credits=10)
    video = farm.video(workspace, make_doc(3))
    render_id = farm.renders.request(workspace, video, "16:9", 180)["id"]
    with transaction(farm.engine) as conn:
        conn.execute(update(renders).where(renders.c.id == render_id).values(status=status))
    return workspace, render_id


def _apply(life: RenderLifecycle, event: str, workspace: str, render_id: str, farm: Farm) -> bool:
    if event == "start":
        return life.start(render_id) is not None
    if event == "fail":
        return life.fail(render_id, "it broke")
    if event == "cancel":
        try:
            life.cancel(workspace, render_id)
            return True
        except StateConflict:
            return False
    with farm.engine.connect() as conn:
        render = renders_repo.find_render(conn, render_id)
    assert render is not None
    farm.storage.put_bytes("renders/x/video.mp4", b"v", "video/mp4")
    farm.storage.put_bytes("renders/x/poster.jpg", b"p", "image/jpeg")
    done = life.succeed(render, Finished("renders/x/video.mp4", "renders/x/poster.jpg", 1))
    if done is None:
        assert not farm.storage.exists("renders/x/video.mp4"), "refused: the files made are no one's"
    return done is not None


def test_a_second_stitch_of_a_render_that_succeeded_leaves_its_files(embedded: Farm) -> None:
    """Two stitches of one render (its last chunk run twice, once by a node thought gone) write the
    same keys; the one refused because the other made the render succeed must not delete them."""
    life = RenderLifecycle(embedded.engine, embedded.clock, embedded.storage, embedded.progress)
    workspace, render_id = _render_in(embedded, "running")
    with embedded.engine.connect() as conn:
        render = renders_repo.find_render(conn, render_id)
    assert render is not None
    video, poster = f"renders/{render_id}/video.mp4", f"renders/{render_id}/poster.jpg"
    embedded.storage.put_bytes(video, b"v", "video/mp4")
    embedded.storage.put_bytes(poster, b"p", "image/jpeg")
    embedded.storage.put_bytes(f"renders/{render_id}/seg0.mp4", b"s", "video/mp4")
    made = Finished(video, poster, 1, (f"renders/{render_id}/seg0.mp4",))
    assert life.succeed(render, made) is not None
    embedded.storage.put_bytes(video, b"v", "video/mp4")  # the second stitch writes the same file again
    assert life.succeed(render, made) is None
    assert embedded.storage.exists(video) and embedded.storage.exists(poster)
    assert not embedded.storage.exists(f"renders/{render_id}/seg0.mp4")  # its scratch goes all the same
    with embedded.engine.connect() as conn:
        assert renders_repo.get_render(conn, workspace, render_id).status == "succeeded"


@pytest.mark.parametrize("status", lc.STATUSES)
@pytest.mark.parametrize("event", sorted(TRANSITIONS))
def test_every_event_from_every_status_follows_the_table(embedded: Farm, status: str, event: str) -> None:
    life = RenderLifecycle(embedded.engine, embedded.clock, embedded.storage, embedded.progress)
    workspace, render_id = _render_in(embedded, status)
    before = embedded.balance(workspace)
    allowed = _apply(life, event, workspace, render_id, embedded)
    expected = EXPECTED.get((status, event))
    assert allowed == (expected is not None) == lc.allowed(status, event)
    with embedded.engine.connect() as conn:
        now = renders_repo.find_render(conn, render_id)
        events = [r.type for r in conn.execute(select(event_outbox.c.type)
                                               .where(event_outbox.c.workspace_id == workspace))]
    assert now is not None and now.status == (expected or status)
    refunded = embedded.balance(workspace) - before
    assert refunded == (1 if expected in ("failed", "canceled") else 0), "a refund goes with fail and cancel only"
    assert events == {"succeeded": ["render.completed"], "failed": ["render.failed"]}.get(expected or "", [])


def test_a_render_of_another_workspace_cannot_be_canceled_through_this_one(embedded: Farm) -> None:
    life = RenderLifecycle(embedded.engine, embedded.clock, embedded.storage, embedded.progress)
    _, render_id = _render_in(embedded, "queued")
    other = embedded.workspace()
    with pytest.raises(NotFound):
        life.cancel(other, render_id)
    with embedded.engine.connect() as conn:
        assert renders_repo.get_render(conn, renders_repo.find_render(conn, render_id).workspace_id,  # type: ignore[union-attr]
                                       render_id).status == "queued"


def test_only_the_lifecycle_writes_a_render_status() -> None:
    writers = []
    for path in FARM.rglob("*.py"):
        if path.name == "lifecycle.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in STATUS_WRITERS:
                writers.append(f"{path.name}: {node.attr}")
    assert writers == []
