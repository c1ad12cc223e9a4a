"""A video's `ETag` and `If-Match`: edits that say which version they were made from.

A video's entity tag names its current version: `"v<number>"` (`"v5"`), strong. It is carried by
every answer that is one video (create, get, update, restore, archive) that has a version; a
video still generating has none, and no tag. The tag follows the document alone: a rename or a
change of status leaves it as it is, since what two editors can undo of each other is a version.

`If-Match` on an update or a restore (RFC 9110 §13.1.1) is `*` (any current version: the edit
goes ahead as without the header) or a list of entity tags; the edit is made only when one of
them is the current version's tag, compared strongly (a weak tag, `W/"v5"`, never matches). The
check is made in the transaction that writes (``reelfarm.studio.videos``), so of two edits sent
with the same tag one lands and the other is refused: 412 `version_conflict`, naming the current
version in the message and in `details[0].current_version`, with its `ETag`. A header that is not
`*` or a list of quoted tags (the pattern the OpenAPI document states, ``IF_MATCH_PATTERN``) is
400 on `If-Match`. A well-formed one is weighed after the checks that would refuse the request
without it (404, 409), as RFC 9110 §13.2.1 asks.
"""
from __future__ import annotations

import re
from typing import Any

from flask import request

from reelfarm.api.errors import ApiError, PreconditionFailed, detail, invalid
from reelfarm.studio.errors import VersionConflict
from reelfarm.studio.resources import VideoResource

IF_MATCH = "If-Match"
_ENTITY_TAG = r'(?:W/)?"[!#-~]*"'  # RFC 9110 §8.8.3, without obs-text
IF_MATCH_PATTERN = rf"^[ \t]*(?:\*|{_ENTITY_TAG}(?:[ \t]*,[ \t]*{_ENTITY_TAG})*)[ \t]*$"
MAX_IF_MATCH = 1024
_IF_MATCH = re.compile(IF_MATCH_PATTERN.removeprefix("^").removesuffix("$"))
_TAGS = re.compile(r'(W/)?"([!#-~]*)"')
_VERSION_TAG = re.compile(r"v([1-9][0-9]{0,9})")

IF_MATCH_PARAMETER = {
    "in": "header", "name": IF_MATCH, "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_IF_MATCH, "pattern": IF_MATCH_PATTERN},
    "examples": {"read": {"summary": "The ETag the video was read with", "value": '"v5"'},
                 "any": {"summary": "Any current version", "value": "*"}},
    "description": "The video's `ETag` as it was read (`\"v5\"`, its current version), or several separated by "
                   "commas. The change is made only if the video's current version is one of them, else it is "
                   "refused with 412 `version_conflict` and nothing is saved (its `details[0].current_version` "
                   "and `ETag` name the current version: read the video again and make the change on that). "
                   "Weak tags (`W/\"v5\"`) never match; `*` matches any current version. Without the header "
                   "the change is made on whichever version is current.",
}
ETAG_HEADER = {"ETag": {"description": "The video's current version as a strong entity tag, `\"v<number>\"`; "
                                       "send it as `If-Match` to change the video only if no one else has meanwhile. "
                                       "Absent while the video has no version.",
                        "schema": {"type": "string", "pattern": '^"v[1-9][0-9]*"$'}}}


def etag(number: int) -> str:
    """The entity tag of version ``number`` of a video."""
    return f'"v{number}"'


def etag_headers(video: VideoResource) -> dict[str, str]:
    """The headers of an answer that is ``video``: its ``ETag``, when it has a version."""
    version = video["current_version"]
    return {"ETag": etag(version["number"])} if version is not None else {}


def if_match() -> frozenset[int] | None:
    """The version numbers the request's `If-Match` names; None without the header or with `*`.

    A tag that names no version of this form (`"abc"`, a weak tag) is kept out, so a header of only
    such tags gives the empty set, which no version matches.

    Raises:
        ValidationFailed: a header that is neither `*` nor a comma-separated list of quoted tags
            (``IF_MATCH_PATTERN``, as the OpenAPI document states it), or longer than 1024 characters.
    """
    lines = request.headers.getlist(IF_MATCH)
    if not lines:
        return None
    value = ", ".join(lines)
    if len(value) > MAX_IF_MATCH or not _IF_MATCH.fullmatch(value):
        raise _malformed()
    if value.strip() == "*":
        return None
    return frozenset(int(version.group(1)) for weak, tag in _TAGS.findall(value)
                     if not weak and (version := _VERSION_TAG.fullmatch(tag)))


def _malformed() -> ApiError:
    return invalid([detail(IF_MATCH, "invalid", 'must be "*" or entity tags in double quotes, separated by commas, '
                                                f'such as "v5" as the video\'s ETag gives it ({MAX_IF_MATCH} '
                                                'characters at most)')])


def refused(conflict: VersionConflict) -> PreconditionFailed:
    """The 412 answer to an edit made from a version that is no longer current."""
    now = conflict.current
    message = (f"The video's current version is {now}, not the one If-Match names, so nothing was saved: someone "
               f"changed it since it was read. Read it again, make the change on version {now} and send it "
               f"with If-Match: {etag(now)}.")
    problem: dict[str, Any] = {**detail(IF_MATCH, "version_conflict", f"the current version is {now} (ETag {etag(now)})"),
                               "current_version": now}
    return PreconditionFailed(message, [problem], headers={"ETag": etag(now)})
