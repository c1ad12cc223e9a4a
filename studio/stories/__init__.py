"""The built-in stories: templates with typed fields that build VideoDocs without AI.

``STORIES`` maps each story id to its ``Story``; ``list_stories`` gives them in a stable order
(by category, then name) and ``get_story`` looks one up.
"""

from __future__ import annotations

from reelfarm.studio.errors import UnknownStoryError
from reelfarm.studio.stories.announcement import ANNOUNCEMENT
from reelfarm.studio.stories.base import NEUTRAL_BRAND, Story, resolve_fields, validate_fields
from reelfarm.studio.stories.data import MILESTONE, STATS_HIGHLIGHT
from reelfarm.studio.stories.education import TIPS_LIST
from reelfarm.studio.stories.events import EVENT_INVITE, WEBINAR
from reelfarm.studio.stories.hiring import HIRING
from reelfarm.studio.stories.media import PODCAST_TEASER
from reelfarm.studio.stories.product import BEFORE_AFTER, FEATURE_SPOTLIGHT, PRODUCT_LAUNCH
from reelfarm.studio.stories.promotion import COUNTDOWN, FLASH_SALE
from reelfarm.studio.stories.social import QUOTE, TESTIMONIAL

__all__ = ["NEUTRAL_BRAND", "STORIES", "Story", "get_story", "list_stories", "resolve_fields", "validate_fields"]

_ALL = [
    ANNOUNCEMENT, BEFORE_AFTER, COUNTDOWN, EVENT_INVITE, FEATURE_SPOTLIGHT, FLASH_SALE, HIRING, MILESTONE,
    PODCAST_TEASER, PRODUCT_LAUNCH, QUOTE, STATS_HIGHLIGHT, TESTIMONIAL, TIPS_LIST, WEBINAR,
]

STORIES: dict[str, Story] = {s.id: s for s in sorted(_ALL, key=lambda s: (s.category, s.name, s.id))}


def list_stories() -> list[Story]:
    """Every built-in story, by category then name."""
    return list(STORIES.values())


def get_story(story_id: str) -> Story:
    """The story with id ``story_id``.

    Raises:
        UnknownStoryError: (a ``KeyError``) no story has that id.
    """
    try:
        return STORIES[story_id]
    except KeyError:
        raise UnknownStoryError(story_id) from None
