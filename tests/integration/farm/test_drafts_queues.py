"""Drafts (``reelfarm.farm.services.drafts``) run on the farm's own queues as renders do: on RQ over
real Redis (SimpleWorker in burst mode, through fair dispatch's waiting queues) and on the embedded
executor (its process pool), each to a complete playlist of 360p segments, with no render made; a
draft that cannot be drawn fails with its reason, and its playlist ends."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import m3u8
import pytest

from reelfarm.farm.services.drafts import DraftService
from reelfarm.shared.repos import drafts as drafts_repo
from reelfarm.shared.storage_keys import draft_segment_key as segment_key
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc, with_image, work_burst


def service(farm: Farm) -> DraftService:
    return DraftService(farm.engine, farm.queue, farm.storage, farm.clock, "s" * 40, "http://127.0.0.1:9")


def assert_complete(farm: Farm, drafts: DraftService, workspace: str, draft: dict[str, Any]) -> None:
    done = drafts.get(workspace, draft["id"])
    assert done["status"] == "succeeded" and done["stored"] == done["chunks"] and done["playable"], done
    query = draft["stream_url"].split("?", 1)[1]
    expires, sig = (part.split("=", 1)[1] for part in query.split("&"))
    listed = m3u8.loads(drafts.playlist(draft["id"], expires, sig))
    assert listed.is_endlist and len(listed.segments) == done["chunks"]
    assert round(sum(s.duration for s in listed.segments) * 15) == 90
    assert all(farm.storage.exists(segment_key(workspace, draft["id"], i)) for i in range(done["chunks"]))
    assert farm.render_count(workspace) == 0 and farm.balance(workspace) == 3


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_draft_runs_on_rq_as_low_priority_chunks(rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace(credits=3)
    drafts = service(rq_farm)
    draft = drafts.start(workspace, make_doc(6), "16:9")
    assert redis.exists(f"rq:job:{namespace}draft-{draft['id']}-chunk-0")

    work_burst(redis, namespace)

    assert_complete(rq_farm, drafts, workspace, draft)


def test_a_draft_runs_on_the_embedded_executor(make_embedded: Any) -> None:
    farm = make_embedded(workers=2)
    workspace = farm.workspace(credits=3)
    drafts = service(farm)
    draft = drafts.start(workspace, make_doc(6), "16:9")
    farm.queue.start()
    try:
        deadline = time.monotonic() + WORK_CEILING_SEC
        while time.monotonic() < deadline:
            with farm.engine.connect() as conn:
                row = drafts_repo.find_draft(conn, draft["id"])
            assert row is not None and row.status in ("queued", "running", "succeeded"), row
            if row.status == "succeeded":
                break
            time.sleep(0.2)
    finally:
        farm.queue.stop(30)
    assert_complete(farm, drafts, workspace, draft)


def test_a_draft_that_cannot_be_drawn_fails_with_its_reason_and_its_playlist_ends(embedded: Farm,
                                                                                   tmp_path: Path) -> None:
    from reelfarm.farm.runtime.draft_tasks import draw_draft_chunk

    workspace = embedded.workspace(credits=3)
    drafts = service(embedded)
    draft = drafts.start(workspace, with_image(make_doc(6), embedded, workspace, tmp_path, corrupt=True), "16:9")
    draw_draft_chunk(draft["id"], 0)
    failed = drafts.get(workspace, draft["id"])
    assert failed["status"] == "failed" and "asset 'photo'" in failed["error"] and not failed["playable"]
    query = draft["stream_url"].split("?", 1)[1]
    expires, sig = (part.split("=", 1)[1] for part in query.split("&"))
    ended = m3u8.loads(drafts.playlist(draft["id"], expires, sig))
    assert ended.is_endlist and ended.segments == []
    draw_draft_chunk(draft["id"], 1)  # the draft's other chunks do nothing once it failed
    assert not embedded.storage.exists(segment_key(workspace, draft["id"], 1))


def test_a_draft_whose_chunk_the_queue_gives_up_on_fails_at_once(embedded: Farm) -> None:
    """A chunk whose process dies on every try cannot fail its draft itself: the queue's failure
    handler does (RQ's ``on_failure`` and the embedded queue call the same), so the page says so
    instead of showing a live preview until it expires; another workspace's draft is untouched."""
    from reelfarm.farm.runtime.tasks import handle_task_failure
    from reelfarm.farm.services.drafts import DRAW_TASK

    workspace, other = embedded.workspace(credits=3), embedded.workspace(credits=3)
    drafts = service(embedded)
    draft = drafts.start(workspace, make_doc(6), "16:9")
    bystander = drafts.start(other, make_doc(6), "16:9")
    handle_task_failure(DRAW_TASK, [draft["id"], 1], "its process died (AbandonedJobError)")
    failed = drafts.get(workspace, draft["id"])
    assert failed["status"] == "failed" and not failed["playable"]
    assert failed["error"] == ("the preview could not be drawn (its process died (AbandonedJobError)); "
                               "play it again")
    query = draft["stream_url"].split("?", 1)[1]
    expires, sig = (part.split("=", 1)[1] for part in query.split("&"))
    assert m3u8.loads(drafts.playlist(draft["id"], expires, sig)).is_endlist
    assert drafts.get(other, bystander["id"])["status"] == "queued"
