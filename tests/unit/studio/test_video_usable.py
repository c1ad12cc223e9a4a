"""One rule for what may be done with a video in its state (``studio.videos.check_usable``): the
render service and the video edits both ask it, each naming its own use in the refusal."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reelfarm.farm.services.renders import renderable_version
from reelfarm.shared.repos.videos import Video
from reelfarm.studio.videos import VideoStateError, check_usable

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REFUSED = {  # (status, has a version): code of the refusal, or None when usable
    ("generating", False): "video_not_ready", ("generating", True): "video_not_ready",
    ("draft", False): "video_not_ready", ("draft", True): None,
    ("ready", True): None,
    ("failed", False): "conflict", ("failed", True): None,
    ("archived", True): "conflict", ("archived", False): "video_not_ready",
}


def _video(status: str, version: bool) -> Video:
    return Video(id="v", workspace_id="w", title="t", status=status, story_id=None, brand_kit_id=None,
                 default_format="16:9", duration_sec=None, current_version_id="v1" if version else None,
                 fields=None, locale=None, source_video_id=None, created_at=NOW, updated_at=NOW)


@pytest.mark.parametrize(("status", "version"), sorted(REFUSED))
@pytest.mark.parametrize("use", ["change", "render"])
def test_each_state_is_usable_or_refused_alike_for_every_use(status: str, version: bool, use: str) -> None:
    video = _video(status, version)
    code = REFUSED[(status, version)]
    if code is None:
        assert check_usable(video, use) == "v1"
        return
    with pytest.raises(VideoStateError) as refused:
        check_usable(video, use)
    assert refused.value.code == code
    assert ("render" in str(refused.value)) == (use == "render"), "each use is named in its refusal"


@pytest.mark.parametrize(("status", "version"), sorted(k for k, v in REFUSED.items() if v is not None))
def test_the_render_service_refuses_what_the_rule_refuses(status: str, version: bool) -> None:
    video = _video(status, version)
    with pytest.raises(VideoStateError) as refused:
        renderable_version(None, video)  # type: ignore[arg-type]  # refused before the database is read
    with pytest.raises(VideoStateError) as rule:
        check_usable(video, "render")
    assert (refused.value.code, str(refused.value)) == (rule.value.code, str(rule.value))
