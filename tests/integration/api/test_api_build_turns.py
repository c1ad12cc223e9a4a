"""Building and linting a version is CPU alone, and the serving threads of a process take turns at
it under one lock (``studio.videos._building``): a create, a fields patch and a doc patch each
build or lint inside it, and a process forked while another thread holds it gets a fresh one.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from reelfarm.studio import videos as studio_videos
from tests.helpers import held_by_another_thread, in_a_fork


@pytest.fixture
def lints(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the lock was held at each lint of a version."""
    seen: list[bool] = []
    real = studio_videos.lint

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(studio_videos._building().locked())
        return real(*args, **kwargs)

    monkeypatch.setattr(studio_videos, "lint", watched)
    return seen


def test_a_create_and_both_patches_build_and_lint_in_turn(client, tenant, create_video, lints: list[bool]) -> None:
    video = create_video(tenant, fields={"headline": "First"})
    assert lints == [True]
    patched = client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"headline": "Second"}},
                           headers=tenant.headers)
    assert patched.status_code == 200, patched.get_json()
    doc = patched.get_json()["current_version"]["doc"]
    edited = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=tenant.headers)
    assert edited.status_code == 200, edited.get_json()
    assert lints == [True, True, True]
    assert not studio_videos._building().locked()  # and let go after each


def test_creates_in_threads_take_turns_and_all_succeed(client, tenant, lints: list[bool]) -> None:
    statuses: list[int] = []

    def create(i: int) -> None:
        response = client.post("/api/v1/videos", json={"storyId": "announcement", "fields": {"headline": f"Turn {i}"}},
                               headers=tenant.headers)
        statuses.append(response.status_code)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert statuses == [201] * 4 and lints == [True] * 4


def test_a_child_forked_while_another_thread_builds_can_build() -> None:
    with held_by_another_thread(studio_videos._building()):
        assert in_a_fork(lambda: studio_videos._building().acquire(timeout=5) or os._exit(4)) == 0
