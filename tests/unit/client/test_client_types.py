"""What the SDK's results are typed as, at run time and for a type checker in a user's project."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mypy import api

from reelfarm.client import Render, TaskStatus, Video, VideoStatus

ROOT = Path(__file__).resolve().parents[3]
RENDER = {"id": "r1", "video_id": "v1", "version_id": "x1", "format": "1:1", "resolution": 720, "fps": 30,
          "status": "succeeded", "progress": 1.0, "url": "http://h/files/a", "poster_url": None,
          "duration_sec": 6.0, "bytes": 10, "error": None, "created_at": "2026-11-25T10:00:00Z",
          "finished_at": "2026-11-25T10:00:09.500000+00:00"}


def test_statuses_are_enums_that_equal_the_apis_strings_and_times_are_aware_datetimes() -> None:
    render = Render.from_dict(RENDER)
    assert render.status is TaskStatus.SUCCEEDED and render.status == "succeeded" and f"{render.status}" == "succeeded"
    assert render.created_at == datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
    assert render.finished_at is not None and (render.finished_at - render.created_at).total_seconds() == 9.5
    assert render.done and render.raw["created_at"] == "2026-11-25T10:00:00Z"  # the answer as sent, kept


def test_a_status_this_client_does_not_know_stays_a_string() -> None:
    render = Render.from_dict({**RENDER, "status": "paused"})
    assert render.status == "paused" and not isinstance(render.status, TaskStatus) and not render.done
    assert VideoStatus("ready") == "ready"
    assert Video.__dataclass_fields__["status"].type == "VideoStatus | str"


USER_SCRIPT = '''\
from datetime import datetime

from reelfarm.client import Client, NotFoundError, Render, TaskStatus


def latest(rf: Client, video_id: str) -> Render | None:
    renders = rf.videos.renders(video_id)
    return renders[0] if renders else None


def main() -> None:
    with Client(api_key="rf_live_x", base_url="http://127.0.0.1:9") as rf:
        video = rf.videos.create(story_id="quote", fields={"quote": "x"}, idempotency_key="k-1")
        made: datetime = video.created_at
        render = latest(rf, video.id)
        if render is not None and render.status == TaskStatus.SUCCEEDED:
            print(made, render.url)
        try:
            rf.stories.get("nope")
        except NotFoundError as exc:
            print(exc.status, exc.code, exc.details)
        wrong: int = video.created_at
'''


def strict_errors(script: Path, source: str) -> tuple[list[str], str]:
    """The errors mypy --strict finds in ``source`` written to ``script`` (run from the repository
    root, as a user's script sees the installed package), and its whole output."""
    script.write_text(source)
    stdout, stderr, _status = api.run(["--strict", "--follow-imports=silent", "--no-incremental",
                                      "--python-version", "3.11", str(script)])
    return [line for line in stdout.splitlines() if ": error:" in line], stdout + stderr


def test_a_users_script_type_checks_under_mypy_strict(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    errors, output = strict_errors(tmp_path / "user_script.py", USER_SCRIPT)
    # The one planted mistake is found (the types are real, not Any), and nothing else.
    assert len(errors) == 1 and "user_script.py:22:" in errors[0], output
    assert 'Incompatible types in assignment (expression has type "datetime", variable has type "int")' in errors[0]


def test_every_exported_name_loads_and_is_listed_once() -> None:
    from reelfarm import client

    assert sorted(client.__all__) == sorted(set(client.__all__)) == sorted(client._HOMES)
    for name in client.__all__:
        assert getattr(client, name) is not None, name
