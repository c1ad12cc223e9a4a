"""The results of brand extraction."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Logo:
    """A site's logo, always as PNG (raster logos re-encoded, SVG rasterized), at most 1024 px long."""

    png: bytes
    width: int
    height: int
    dominant_color: str  # "#RRGGBB": the most common opaque colour that is not white
    source_url: str  # where it came from (the page's URL for an inline SVG)


@dataclass(frozen=True)
class ExtractedBrand:
    """What a website says about its brand.

    ``tokens`` has the shape of API.md's ``BrandKit.tokens`` with ``"logo": None``: the caller
    stores ``logo`` and fills that key in. Each font token also keeps the declared family as
    ``"original"`` (None when the page declared none).
    """

    name: str
    source_url: str  # the page's final URL, after redirects
    tokens: dict
    logo: Logo | None
