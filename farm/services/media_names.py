"""The names of files in the media library: what a person knows a file by, never what it is.

A file's name comes with it (an upload's file name, a presigned upload's ``filename``, the last
part of the address it was fetched from, URL-decoded) and is kept as a label: its last path
component, without control characters, with runs of white space made one space, at most
``MAX_NAME_CHARS`` characters; nothing is left of a name that is only separators or space, and
the file is then nameless (``None``). A name given by a person (a rename) is checked instead of
cleaned: they are told what to change rather than finding another name stored.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote, urlsplit

from reelfarm.farm.services.errors import InvalidRequest

MAX_NAME_CHARS = 255
_SEPARATORS = ("/", "\\")


def _visible(text: str) -> str:
    text = "".join(" " if ch.isspace() else ch for ch in unicodedata.normalize("NFC", text)
                   if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join(text.split())


def file_name(sent: str | None) -> str | None:
    """The name to keep of a file name as sent (a browser may send a path), or None."""
    if not sent:
        return None
    last = sent[:4096].replace("\\", "/").rsplit("/", 1)[-1]
    name = _visible(last)[:MAX_NAME_CHARS].strip()
    return name if name not in ("", ".", "..") else None


def url_file_name(url: str) -> str | None:
    """The name to keep of a file fetched from ``url``: its path's last part, URL-decoded, or None."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    return file_name(unquote(path.rsplit("/", 1)[-1]))


def check_name(name: str, field: str = "/name") -> str:
    """A name a person gave, trimmed. Raises InvalidRequest (on ``field``) for an empty one, one
    longer than ``MAX_NAME_CHARS``, or one holding a control character or a path separator."""
    trimmed = name.strip()
    problem = None
    if not trimmed:
        problem = ("blank", "a name needs at least one character other than space")
    elif len(trimmed) > MAX_NAME_CHARS:
        problem = ("too_long", f"a name is at most {MAX_NAME_CHARS} characters (this one has {len(trimmed)})")
    elif any(unicodedata.category(ch)[0] == "C" for ch in trimmed):
        problem = ("invalid", "a name may not hold control characters (such as a line break or a tab)")
    elif any(sep in trimmed for sep in _SEPARATORS):
        problem = ("invalid", "a name may not hold / or \\")
    if problem is not None:
        raise InvalidRequest([{"field": field, "code": problem[0], "message": problem[1]}])
    return unicodedata.normalize("NFC", trimmed)
