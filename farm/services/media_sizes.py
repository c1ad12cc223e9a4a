"""Sizes of files in words for a person, as the media library's messages and pages give them."""

from __future__ import annotations

MEGABYTE = 1024 * 1024


def file_size(size: int) -> str:
    """``29.3 MB``, ``20 MB``, ``980 KB``, ``1.2 GB`` (a megabyte being 1024 × 1024 bytes)."""
    if size < MEGABYTE:
        return f"{max(1, round(size / 1024))} KB" if size >= 1024 else f"{size} bytes"
    if size < 1024 * MEGABYTE:
        return f"{size / MEGABYTE:.1f} MB".replace(".0 MB", " MB")
    return f"{size / (1024 * MEGABYTE):.1f} GB".replace(".0 GB", " GB")
