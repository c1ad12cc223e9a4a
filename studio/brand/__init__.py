"""Brand extraction: read a website's name, colours, fonts, logo, radius and tagline.

``BrandExtractor(fetcher).extract(url)`` fetches through the SSRF guard (``reelfarm.studio.fetch``) and
returns an ``ExtractedBrand`` whose ``tokens`` follow API.md's ``BrandKit.tokens``.

Modules: ``extractor`` and ``pool`` (the only I/O: a few fetches at once, under one deadline),
``page`` (HTML), ``css`` (stylesheets), ``style`` (rules to evidence), ``palette`` (colour roles
and contrast), ``colors`` (colour arithmetic), ``fonts`` (mapping to shipped families), ``logo``
(decoding and rasterizing), ``analysis`` (tokens).
"""
from __future__ import annotations

from reelfarm.studio.brand.extractor import BrandExtractor
from reelfarm.studio.brand.model import ExtractedBrand, Logo

__all__ = ["BrandExtractor", "ExtractedBrand", "Logo"]
