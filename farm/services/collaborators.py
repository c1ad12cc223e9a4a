"""The studio's collaborators that the farm's jobs use, built once per process from settings.

``Collaborators`` holds the SSRF-safe fetchers (pages for brand extraction; a larger, slower one
for a render's remote images and audio), the brief moderator, the writer (an LLM one with the
built-in one behind it, or the built-in one) and the translation engines. The task context
carries one (``reelfarm.farm.runtime.context.studio_of`` builds it on first use with ``make_collaborators``), and
``JobService`` checks requests with the same one (moderation before a generation, the engines'
locales before a translation).

Tests hand in their own (a writer pointed at a loopback LLM, translators with a loopback engine).
"""
from __future__ import annotations

from dataclasses import dataclass

from reelfarm.farm.services.assets import ASSET_FETCH_OPTIONS
from reelfarm.shared.config import Settings
from reelfarm.studio.fetch import SafeFetcher, make_fetcher
from reelfarm.studio.llm import make_writer
from reelfarm.studio.moderation import Moderator
from reelfarm.studio.translate import Translators, make_translators
from reelfarm.studio.writer import Writer


@dataclass
class Collaborators:
    fetcher: SafeFetcher
    moderator: Moderator
    writer: Writer
    translators: Translators
    asset_fetcher: SafeFetcher  # renders' remote images and audio: larger bodies, longer time


def make_collaborators(settings: Settings) -> Collaborators:
    return Collaborators(fetcher=make_fetcher(settings), moderator=Moderator(), writer=make_writer(settings),
                         translators=make_translators(settings),
                         asset_fetcher=make_fetcher(settings, **ASSET_FETCH_OPTIONS))
