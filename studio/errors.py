"""Errors raised by the studio package.

Hierarchy::

    StudioError
    ├── UnknownStoryError (also a KeyError)
    ├── InvalidFieldsError (also a ValueError): carries ``details``
    │   └── InvalidBrandKit: a brand kit made or edited by hand (name, tokens, logo file)
    ├── InvalidBuildRequestError (also a ValueError): bad format or duration
    ├── LayoutError: a story's layout cannot hold its fields (a bug in the story)
    ├── FetchError: fetching a URL a user gave (studio/fetch.py)
    │   ├── FetchRefused: the URL is not allowed (scheme, address, redirect, content type)
    │   └── FetchFailed: the fetch was allowed but did not complete (timeout, too big, error)
    │       ├── FetchTooLarge: the body is larger than allowed
    │       └── HostUnresolvable: the host name has no address (``code`` ``unresolvable_host``)
    ├── BrandExtractionError: a page was fetched but holds no usable brand (studio/brand/)
    ├── BriefRejected (also a ValueError): moderation refused a brief; ``reason`` says why
    ├── VersionConflict: an edit was made from a version that is no longer current (``current``)
    ├── WriterError: a writer could not produce a script (studio/writer.py)
    └── TranslationError: a translation engine failed (studio/translate/)
        └── UnsupportedLocale (also a ValueError): no configured engine translates that pair
"""

from __future__ import annotations


class StudioError(Exception):
    """Base class of every error the studio package raises."""


class UnknownStoryError(StudioError, KeyError):
    """No story has the requested id."""

    def __init__(self, story_id: str) -> None:
        super().__init__(story_id)
        self.story_id = story_id

    def __str__(self) -> str:
        return f"unknown story: {self.story_id!r}"


class InvalidFieldsError(StudioError, ValueError):
    """Field values do not match a story's field schema.

    ``details`` is the list of ``{"field", "code", "message"}`` problems, all of them.
    """

    def __init__(self, details: list[dict]) -> None:
        super().__init__(f"{len(details)} invalid field value(s)")
        self.details = details


class InvalidBrandKit(InvalidFieldsError):
    """A brand kit's name, tokens or uploaded logo cannot be saved; ``details`` lists every problem,
    each ``{"field", "code", "message"}`` with a JSON pointer (``/tokens/colors/accent``, ``/logo``)."""


class DefaultBrandKitDeletion(StudioError):
    """The workspace's default brand kit cannot be deleted: another kit must be made the default first."""

    code = "default_brand_kit"

    def __init__(self) -> None:
        super().__init__("the default brand kit cannot be deleted; make another kit the default first")


class InvalidBuildRequestError(StudioError, ValueError):
    """The format or duration asked of a story builder is out of range.

    ``field`` is the name of the offending argument (``format`` or ``duration_sec``).
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class LayoutError(StudioError):
    """A layout cannot fit its text at the smallest allowed size; a defect in a story."""


class FetchError(StudioError):
    """Fetching a user-given URL did not produce a usable response; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FetchRefused(FetchError, ValueError):
    """The URL (or a redirect on the way) is refused by the SSRF guard; nothing was sent to it."""


class FetchFailed(FetchError):
    """The fetch was allowed but failed: timeout, body too large, connection error or a non-2xx status.

    ``status`` is the HTTP status when the server answered, else None.
    """

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.status = status


class FetchTooLarge(FetchFailed):
    """The body is larger than the fetcher accepts: fetching again cannot help."""


class HostUnresolvable(FetchFailed):
    """No address was found for the URL's host name.

    The message is the same whether the name does not exist or no resolver answered: resolvers
    word these differently from machine to machine, and what the user can do is the same (check
    the address). The resolver's own words are kept in ``detail`` and as the cause, for logs only.
    """

    code = "unresolvable_host"

    def __init__(self, host: str, detail: str = "") -> None:
        super().__init__(f"could not resolve {host}: no address is known for that name")
        self.host = host
        self.detail = detail


class BrandExtractionError(StudioError):
    """The page was fetched but no brand could be read from it (not HTML, empty, unparsable)."""


class BriefRejected(StudioError, ValueError):
    """Moderation refused a brief; ``reason`` is the message shown to the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class VersionConflict(StudioError):
    """An edit or restore was made from a version that is no longer the video's current one;
    nothing was saved. ``current`` is the number of the current version."""

    code = "version_conflict"

    def __init__(self, current: int) -> None:
        super().__init__(f"the video's current version is {current}, not the one this change was made from; "
                         "nothing was saved")
        self.current = current


class WriterError(StudioError):
    """A writer could not turn a brief into a script."""


class TranslationError(StudioError):
    """A translation engine failed (unreachable, refused, malformed answer)."""


class UnsupportedLocale(TranslationError, ValueError):
    """No configured engine translates from ``source`` to ``target``."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"no translation engine is configured for {source} -> {target}")
        self.source = source
        self.target = target
