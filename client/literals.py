"""The API's closed sets of values as ``Literal`` types, so a type checker refuses ``"9:17"``.

The SDK's parameters are annotated with these, and so are the results' formats, resolutions,
frame rates and asset kinds (``Video.default_format``, ``Render.resolution``, ...), so that a value
read type-checks when passed back; the result models keep their statuses as ``StrEnum`` members
(``reelfarm.client.models``), which compare equal to these strings. A test keeps
each set equal to what the API's OpenAPI document lists.
"""
from __future__ import annotations

from typing import Literal

VideoFormat = Literal["16:9", "9:16", "1:1", "4:5"]
Resolution = Literal[720, 1080, 2160]  # the short side, in pixels
Fps = Literal[24, 30, 60]
PriorityName = Literal["normal", "low"]
ContainerName = Literal["mp4", "gif", "webm"]  # a render's file: MP4, animated GIF, WebM (VP9 and Opus)
TaskStatusName = Literal["queued", "running", "succeeded", "failed", "canceled"]
VideoStatusName = Literal["draft", "generating", "ready", "failed", "archived"]
AssetKind = Literal["image", "audio", "video", "captions"]
