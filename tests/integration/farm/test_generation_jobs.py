"""Generation from a brief and translated copies, run by real queues (the embedded executor on
SQLite and PostgreSQL, RQ over Redis) with the built-in writer, real moderation and the real
offline Apertium engine."""
from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.errors import InvalidRequest, QueueUnavailable, StateConflict
from reelfarm.farm.services.jobs import _title_of
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.tables import event_outbox, jobs, videos
from reelfarm.studio.errors import BriefRejected
from reelfarm.studio.writer import Brief, BuiltinWriter
from tests.integration.farm.conftest import Farm, build_farm, make_doc, work_burst
from tests.integration.farm.test_render_embedded import wait_for

SALE = ("Flash sale this weekend: 40% off every jacket with code SPRING40 until Sunday 9 March. "
        "Shop now at example.com/sale")


def generate(farm: Farm, workspace: str, brief: str = SALE, **options: Any) -> tuple[str, str]:
    kwargs = {"brief": brief, "url": None, "title": None, "brand_kit_id": None, "fmt": "16:9",
              "duration_sec": None, "locale": None, **options}
    video, job = farm.jobs.request_generation(workspace, **kwargs)
    return video.id, job.id


def finished(farm: Farm, workspace: str, job_id: str) -> dict[str, Any]:
    return wait_for(lambda: (j := farm.jobs.get(workspace, job_id))["status"] not in ("queued", "running") and j)


def events(farm: Farm, workspace: str) -> list[tuple[str, dict[str, Any]]]:
    with farm.engine.connect() as conn:
        rows = conn.execute(select(event_outbox.c.type, event_outbox.c.payload)
                            .where(event_outbox.c.workspace_id == workspace)
                            .order_by(event_outbox.c.created_at)).all()
    return [(r.type, r.payload) for r in rows]


def video_row(farm: Farm, workspace: str, video_id: str) -> tuple[videos_repo.Video, videos_repo.Version | None]:
    with farm.engine.connect() as conn:
        video = videos_repo.get_video(conn, workspace, video_id)
        version = (videos_repo.get_version_by_id(conn, workspace, video.current_version_id)
                   if video.current_version_id else None)
    return video, version


def texts(doc: dict[str, Any]) -> str:
    found: list[str] = []

    def walk(layers: list[dict[str, Any]]) -> None:
        for layer in layers:
            if layer.get("type") == "text":
                found.append(layer["text"])
            walk(layer.get("layers", []))
    for scene in doc["scenes"]:
        walk(scene["layers"])
    return " | ".join(found)


def test_a_brief_becomes_a_ready_video_with_its_facts(embedded: Farm) -> None:
    workspace = embedded.workspace()
    video_id, job_id = generate(embedded, workspace)
    video, version = video_row(embedded, workspace, video_id)
    assert (video.status, version) == ("generating", None)
    assert embedded.jobs.get(workspace, job_id)["status"] == "queued"

    embedded.queue.start()  # type: ignore[attr-defined]
    job = finished(embedded, workspace, job_id)

    assert (job["status"], job["kind"], job["stage"], job["progress"], job["error"]) == (
        "succeeded", "generate", "save", 1.0, None)
    video, version = video_row(embedded, workspace, video_id)
    assert job["result"] == {"video_id": video_id, "version_id": version.id}
    assert (video.status, video.story_id, version.number, version.source) == ("ready", "flash_sale", 1, "generate")
    # the writer's title replaced the working one; the workspace's default kit was used
    assert video.title == BuiltinWriter().write(Brief(text=SALE)).title != _title_of(SALE, None)
    assert video.brand_kit_id is not None
    shown = texts(version.doc)
    for fact in ("40%", "SPRING40"):
        assert fact in shown
    assert not [w for w in version.lint if w["code"] == "text_overflow"]
    [(kind, payload)] = events(embedded, workspace)
    assert kind == "video.generated"
    assert payload["video"]["id"] == video_id and payload["video"]["status"] == "ready"
    assert payload["video"]["current_version"]["source"] == "generate"


def test_a_rejected_brief_creates_nothing(embedded: Farm) -> None:
    workspace = embedded.workspace()
    with pytest.raises(BriefRejected, match="sentence 2"):
        generate(embedded, workspace, "Our shop opens on Monday. You are all fucking idiots and I hate you.")
    with embedded.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(videos).where(videos.c.workspace_id == workspace)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(jobs).where(jobs.c.workspace_id == workspace)).scalar() == 0


def test_a_refused_site_fails_the_video_with_the_reason(make_embedded: Any) -> None:
    from tests.integration.farm.conftest import studio_for_tests

    farm = make_embedded()
    strict = build_farm(farm.engine, farm.storage, farm.clock, farm.progress, farm.queue,
                        studio=studio_for_tests(REELFARM_FETCH_ALLOW_PRIVATE="0"))
    workspace = strict.workspace()
    video_id, job_id = generate(strict, workspace, url="http://127.0.0.1:9/")
    strict.queue.start()  # type: ignore[attr-defined]
    job = finished(strict, workspace, job_id)

    assert job["status"] == "failed" and "127.0.0.1" in job["error"] and "refused" in job["error"]
    video, version = video_row(strict, workspace, video_id)
    assert (video.status, version) == ("failed", None)
    [(kind, payload)] = events(strict, workspace)
    assert kind == "video.generation_failed"
    assert payload["video"]["status"] == "failed" and payload["video"]["job"]["error"] == job["error"]


def test_canceling_a_generation_fails_its_video(embedded: Farm) -> None:
    workspace = embedded.workspace()
    video_id, job_id = generate(embedded, workspace)
    assert embedded.jobs.cancel(workspace, job_id)["status"] == "canceled"
    video, _ = video_row(embedded, workspace, video_id)
    assert video.status == "failed"
    assert [kind for kind, _ in events(embedded, workspace)] == ["video.generation_failed"]
    embedded.queue.start()  # type: ignore[attr-defined]
    with pytest.raises(StateConflict):
        embedded.jobs.cancel(workspace, job_id)


def test_queue_down_leaves_no_video_and_no_job(embedded: Farm) -> None:
    farm = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress,
                      RQQueue(make_redis("redis://127.0.0.1:1/15")))
    workspace = farm.workspace()
    with pytest.raises(QueueUnavailable):
        generate(farm, workspace)
    with farm.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(videos).where(videos.c.workspace_id == workspace)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(jobs).where(jobs.c.workspace_id == workspace)).scalar() == 0


def test_a_translated_copy_is_made_by_the_offline_engine(embedded: Farm) -> None:
    workspace = embedded.workspace()
    doc = make_doc(6)
    doc["scenes"][0]["layers"].append({"type": "text", "id": "headline", "text": "Join our team in Berlin",
                                       "x": 0.1, "y": 0.4, "w": 0.8, "h": 0.2, "size": 0.06})
    original = embedded.video(workspace, doc)

    [(copy, job)] = embedded.jobs.request_translations(workspace, original, ["es"])
    assert (copy.status, copy.locale, copy.source_video_id, job.kind) == ("draft", "es", original, "generate")
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finished(embedded, workspace, job.id)

    assert done["status"] == "succeeded", done["error"]
    assert done["stage"] == "save"
    video, version = video_row(embedded, workspace, copy.id)
    assert (video.status, version.source, version.doc["locale"]) == ("ready", "translate", "es")
    assert "equipo" in texts(version.doc) and "Berlín" in texts(version.doc)
    _, source_version = video_row(embedded, workspace, original)
    assert "Join our team" in texts(source_version.doc)  # the original is untouched
    assert [kind for kind, _ in events(embedded, workspace)] == ["video.generated"]


def test_locales_are_checked_all_at_once_and_nothing_is_made(embedded: Farm) -> None:
    workspace = embedded.workspace()
    original = embedded.video(workspace, make_doc(6))
    with pytest.raises(InvalidRequest) as caught:
        embedded.jobs.request_translations(workspace, original, ["es", "not a tag", "es", "ES", "xx"])
    assert [(d["field"], d["code"]) for d in caught.value.details] == [
        ("/locales/1", "invalid_locale"), ("/locales/2", "duplicate"), ("/locales/3", "invalid_locale"),
        ("/locales/4", "unsupported_locale")]
    # published tags this video cannot go to: its own language (409, the request suits other videos)
    with pytest.raises(StateConflict, match="already in en"):
        embedded.jobs.request_translations(workspace, original, ["es", "en-US"])
    with embedded.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(videos).where(videos.c.workspace_id == workspace)).scalar() == 1


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_generation_on_rq(rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace()
    video_id, job_id = generate(rq_farm, workspace, "We are hiring a senior backend engineer in Berlin. "
                                                    "Remote friendly, 4-day week. Apply today at example.com/jobs")
    work_burst(redis, namespace)
    job = rq_farm.jobs.get(workspace, job_id)
    assert job["status"] == "succeeded", job["error"]
    video, version = video_row(rq_farm, workspace, video_id)
    assert (video.status, video.story_id) == ("ready", "hiring")
    assert "Berlin" in texts(version.doc)
