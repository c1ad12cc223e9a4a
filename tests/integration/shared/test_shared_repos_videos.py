"""Videos and their immutable versions on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from reelfarm.shared.clock import FixedClock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos import videos, workspaces
from reelfarm.shared.repos.videos import NewVersion, hash_doc

DOC: dict[str, Any] = {"version": 1, "fps": 30, "duration": 6, "format": "16:9",
                       "scenes": [{"id": "one", "duration": 6, "layers": [{"id": "t", "text": "Héllo"}]}]}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def workspace_id(engine: Engine, clock: FixedClock) -> str:
    with transaction(engine) as conn:
        return workspaces.create_workspace(conn, clock, name="Acme", plan="pro", brand_tokens={}).id


def story_version(**overrides: Any) -> NewVersion:
    values: dict[str, Any] = {"source": "story", "doc": DOC, "duration_sec": 6.0,
                              "fields": {"headline": "Meet Nova"}, "lint": [{"code": "low_contrast"}]}
    return NewVersion(**{**values, **overrides})


def new_video(engine: Engine, clock: FixedClock, workspace_id: str, **overrides: Any) -> videos.Video:
    values: dict[str, Any] = {"title": "Launch", "status": "ready", "default_format": "16:9",
                              "story_id": "product-launch", "first_version": story_version()}
    with transaction(engine) as conn:
        video, _ = videos.create_video(conn, clock, workspace_id=workspace_id, **{**values, **overrides})
    return video


def test_hash_doc_is_canonical() -> None:
    reordered = {k: DOC[k] for k in reversed(list(DOC))}
    assert hash_doc(reordered) == hash_doc(DOC)
    assert hash_doc({**DOC, "fps": 60}) != hash_doc(DOC)
    assert len(hash_doc(DOC)) == 64


def test_create_video_with_version_one(engine: Engine, clock: FixedClock, workspace_id: str) -> None:
    with transaction(engine) as conn:
        video, version = videos.create_video(
            conn, clock, workspace_id=workspace_id, title="Launch", status="ready",
            default_format="9:16", story_id="product-launch", locale="de-DE",
            first_version=story_version(note="first cut"))
    assert version is not None
    assert (version.number, version.source, version.note) == (1, "story", "first cut")
    assert (version.doc, version.doc_hash) == (DOC, hash_doc(DOC))
    assert version.fields == {"headline": "Meet Nova"}
    assert version.lint == [{"code": "low_contrast"}]
    assert version.created_at == clock.now()
    assert video.current_version_id == version.id
    assert (video.fields, video.duration_sec, video.locale, video.default_format) == (
        {"headline": "Meet Nova"}, 6.0, "de-DE", "9:16")
    with engine.connect() as conn:
        assert videos.get_video(conn, workspace_id, video.id) == video
        assert videos.get_version(conn, workspace_id, video.id, 1) == version
        assert videos.get_version_by_id(conn, workspace_id, version.id) == version


def test_a_generating_video_has_no_version_yet(engine: Engine, clock: FixedClock, workspace_id: str) -> None:
    video = new_video(engine, clock, workspace_id, status="generating", story_id=None, first_version=None)
    assert (video.status, video.current_version_id, video.duration_sec, video.fields) == (
        "generating", None, None, None)
    with engine.connect() as conn:
        assert videos.list_versions(conn, workspace_id, video.id) == []


def test_append_version_numbers_up_and_becomes_current(engine: Engine, clock: FixedClock,
                                                       workspace_id: str) -> None:
    video = new_video(engine, clock, workspace_id)
    clock.advance(5)
    edited = {**DOC, "duration": 8}
    with transaction(engine) as conn:
        updated, version = videos.append_version(
            conn, clock, workspace_id=workspace_id, video_id=video.id,
            version=NewVersion(source="doc", doc=edited, duration_sec=8.0, note="longer"))
    assert version.number == 2 and version.fields is None and version.lint == []
    assert (updated.current_version_id, updated.duration_sec, updated.fields) == (version.id, 8.0, None)
    assert updated.updated_at == clock.now() and updated.created_at == video.created_at
    with engine.connect() as conn:
        history = videos.list_versions(conn, workspace_id, video.id)
    assert [(v.number, v.source, v.doc["duration"]) for v in history] == [(1, "story", 6), (2, "doc", 8)]


def test_concurrent_edits_get_distinct_gapless_numbers(engine: Engine, clock: FixedClock,
                                                       workspace_id: str) -> None:
    video = new_video(engine, clock, workspace_id)
    errors: list[BaseException] = []

    def edit(index: int) -> None:
        try:
            with transaction(engine) as conn:
                videos.append_version(conn, clock, workspace_id=workspace_id, video_id=video.id,
                                      version=story_version(source="fields", fields={"i": index}))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with engine.connect() as conn:
        history = videos.list_versions(conn, workspace_id, video.id)
        current = videos.get_video(conn, workspace_id, video.id)
    assert [v.number for v in history] == list(range(1, 10))
    assert current.current_version_id == history[-1].id


def test_unknown_version_source_and_video_status_are_refused(engine: Engine, clock: FixedClock,
                                                             workspace_id: str) -> None:
    with pytest.raises(ValueError, match="source"), transaction(engine) as conn:
        videos.create_video(conn, clock, workspace_id=workspace_id, title="x", status="ready",
                            default_format="16:9", first_version=story_version(source="magic"))
    with pytest.raises(ValueError, match="status"), transaction(engine) as conn:
        videos.create_video(conn, clock, workspace_id=workspace_id, title="x", status="done",
                            default_format="16:9")


def test_update_video_title_and_status(engine: Engine, clock: FixedClock, workspace_id: str) -> None:
    video = new_video(engine, clock, workspace_id)
    clock.advance(1)
    with transaction(engine) as conn:
        renamed = videos.update_video(conn, clock, workspace_id, video.id, title="Launch v2")
        archived = videos.update_video(conn, clock, workspace_id, video.id, status="archived")
    assert (renamed.title, renamed.status) == ("Launch v2", "ready")
    assert (archived.title, archived.status, archived.updated_at) == ("Launch v2", "archived", clock.now())
    assert archived.current_version_id == video.current_version_id


def test_other_workspaces_cannot_see_or_change_a_video(engine: Engine, clock: FixedClock,
                                                       workspace_id: str) -> None:
    video = new_video(engine, clock, workspace_id)
    with transaction(engine) as conn:
        other = workspaces.create_workspace(conn, clock, name="Other", plan="pro", brand_tokens={}).id
    with engine.connect() as conn:
        for lookup in (lambda: videos.get_video(conn, other, video.id),
                       lambda: videos.get_version(conn, other, video.id, 1),
                       lambda: videos.get_version_by_id(conn, other, str(video.current_version_id)),
                       lambda: videos.list_versions(conn, other, video.id)):
            with pytest.raises(NotFound):
                lookup()
        assert videos.list_videos(conn, other, limit=10).items == []
    with pytest.raises(NotFound), transaction(engine) as conn:
        videos.append_version(conn, clock, workspace_id=other, video_id=video.id, version=story_version())
    with pytest.raises(NotFound), transaction(engine) as conn:
        videos.update_video(conn, clock, other, video.id, title="mine")
    with engine.connect() as conn, pytest.raises(NotFound):
        videos.get_version(conn, workspace_id, video.id, 2)
    with engine.connect() as conn, pytest.raises(NotFound):
        videos.get_video(conn, workspace_id, new_id())


def test_list_videos_pages_newest_first(engine: Engine, clock: FixedClock, workspace_id: str) -> None:
    made = []
    for index in range(7):
        made.append(new_video(engine, clock, workspace_id, title=f"v{index}"))
        if index != 3:  # two videos share a created_at: the id breaks the tie
            clock.advance(1)
    expected = sorted(made, key=lambda v: (v.created_at, v.id), reverse=True)

    seen: list[videos.Video] = []
    after = None
    with engine.connect() as conn:
        while True:
            page = videos.list_videos(conn, workspace_id, limit=3, after=after)
            seen.extend(page.items)
            if page.next_after is None:
                break
            after = page.next_after
    assert [v.id for v in seen] == [v.id for v in expected]
    assert len(seen) == 7


def test_list_videos_is_stable_while_videos_are_added(engine: Engine, clock: FixedClock,
                                                      workspace_id: str) -> None:
    for index in range(4):
        new_video(engine, clock, workspace_id, title=f"old{index}")
        clock.advance(1)
    with engine.connect() as conn:
        first = videos.list_videos(conn, workspace_id, limit=2)
    clock.advance(timedelta(minutes=1).total_seconds())
    new_video(engine, clock, workspace_id, title="newer")
    with engine.connect() as conn:
        second = videos.list_videos(conn, workspace_id, limit=2, after=first.next_after)
    assert [v.title for v in first.items + second.items] == ["old3", "old2", "old1", "old0"]
    assert second.next_after is None
