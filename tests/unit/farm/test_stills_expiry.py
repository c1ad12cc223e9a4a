"""A stills job's URLs expire when its `expires_at` says, to the second, even where the clock
crosses a second between reading it for the field and signing each URL (seen in CI: one second
apart, the field from one reading and the URL from the next)."""
from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

from reelfarm.farm.services.resources import job_resource
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.repos.jobs import Job
from reelfarm.shared.storage import LocalStorage


class _Ticking(FixedClock):
    """A clock that moves 0.4 s each time it is read."""

    def now(self) -> datetime:
        return self.advance(0.4)


def test_every_still_url_expires_at_the_second_its_field_states(tmp_path):
    clock = _Ticking(datetime(2026, 1, 1, 12, 0, 0, 800_000, tzinfo=UTC))
    storage = LocalStorage(tmp_path, "http://127.0.0.1:8000", "k" * 32, clock)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    stills = [{"time": t, "key": f"jobs/j/still-{i}.png", "width": 360, "height": 640}
              for i, t in enumerate((0.0, 2.5, 6.0))]
    job = Job(id="j", workspace_id="w", kind="stills", status="succeeded", stage="upload", progress=1.0, error=None,
              result={"stills": stills}, params={"format": "9:16", "resolution": 360}, video_id="v", attempts=1,
              created_at=when, started_at=when, finished_at=when)
    result = job_resource(job, storage, clock)["result"]
    assert result is not None
    for still in result["stills"]:
        expires = datetime.fromisoformat(still["expires_at"])
        assert parse_qs(urlsplit(still["url"]).query)["expires"] == [str(int(expires.timestamp()))]
        assert expires.microsecond == 0
