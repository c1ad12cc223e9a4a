"""What a tool answers by default: a summary of the API's answer, small enough to keep in an agent's
context (a video's full answer carries its whole VideoDoc, about 10 KB; its summary a few hundred
bytes). The tool's ``full`` argument returns the API's answer as it came.

A video is summed up as its id, title, status, format, length, language, story, current version
number and (while one runs, or after one failed) its job; a render as its id, status, progress,
format, size and URLs; a version as its number, source, note and count of lint warnings; an asset
as its id, kind, key (what a VideoDoc names it by), URL, pixels or seconds, and a video's frame rate
and whether it has sound; a story as its id, name, category, description, length and the names of
its fields (``get_story`` has their JSON Schema). Fields that are null are left out.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Shape = Callable[[Any], Any]

JOB_KEYS = ("id", "kind", "status", "stage", "progress", "error")
RENDER_KEYS = ("id", "video_id", "status", "progress", "format", "resolution", "fps", "container", "clamped",
               "priority", "url", "poster_url", "stream_url", "captions_url", "error", "queue", "held_up", "cost")

ASSET_KEYS = ("id", "name", "kind", "key", "url", "width", "height", "duration_sec", "fps", "has_audio", "cues")


def _kept(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: data[k] for k in keys if data.get(k) is not None}


def video_summary(video: dict[str, Any]) -> dict[str, Any]:
    """A video without its document: what an agent needs to go on (render it, edit it, wait for it)."""
    out = _kept(video, ("id", "title", "status", "default_format", "duration_sec", "locale", "story_id",
                        "source_video_id"))
    version = video.get("current_version")
    out["version"] = version.get("number") if isinstance(version, dict) else None
    if isinstance(video.get("job"), dict):
        out["job"] = _kept(video["job"], JOB_KEYS)
    return out


def render_summary(render: dict[str, Any]) -> dict[str, Any]:
    return _kept(render, RENDER_KEYS)


def asset_summary(asset: dict[str, Any]) -> dict[str, Any]:
    return _kept(asset, ASSET_KEYS)


def story_summary(story: dict[str, Any]) -> dict[str, Any]:
    out = _kept(story, ("id", "name", "category", "description", "default_duration_sec"))
    schema = story.get("fields")
    out["field_names"] = sorted((schema.get("properties") or {}) if isinstance(schema, dict) else {})
    return out


def version_summary(version: dict[str, Any]) -> dict[str, Any]:
    out = _kept(version, ("number", "id", "source", "note", "created_at"))
    out["lint_warnings"] = len(version.get("lint") or [])
    return out


def listed(shape: Shape) -> Shape:
    """A list answer (``{"data": [...], "next_cursor"?}``) with each item summed up by ``shape``."""

    def summed(answer: Any) -> Any:
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
            return answer
        return {**answer, "data": [shape(item) for item in answer["data"]]}

    return summed


def variants_summary(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    return {"renders": [render_summary(r) for r in answer.get("renders", [])],
            "translations": [video_summary(v) for v in answer.get("translations", [])]}
