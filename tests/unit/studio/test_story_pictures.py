"""A story's picture card keeps a photo of another shape whole enough: its edges stay in the frame
in every format, through the card's slow zoom (``crop_max``)."""
from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still
from reelfarm.studio.stories import NEUTRAL_BRAND, get_story

RED, BLUE = (230, 20, 20), (20, 40, 230)


def _landscape(path: Path) -> None:
    """A 2:1 photo (a product shot): a red band down its left seventh, a blue one down its right."""
    y, x = np.mgrid[0:300, 0:600]
    rgb = np.stack([x * 200 // 600 + 30, y * 200 // 300 + 30, np.full_like(x, 120)], axis=-1).astype(np.uint8)
    rgb[:, :84] = RED
    rgb[:, -84:] = BLUE
    Image.fromarray(rgb).save(path)


def _seen(frame: np.ndarray, colour: tuple[int, int, int]) -> float:
    return float((np.abs(frame[..., :3].astype(int) - np.array(colour)).max(axis=-1) < 30).mean())


@pytest.mark.parametrize("fmt", ["9:16", "4:5", "1:1", "16:9"])
def test_the_announcement_photo_keeps_its_edges_through_the_zoom(tmp_path, fmt):
    _landscape(tmp_path / "photo.png")
    image = str(uuid.uuid4())
    doc = get_story("announcement").build({"image": image}, NEUTRAL_BRAND, fmt, 6,
                                          uploads={image: ("image", "photo.png")})
    start = sum(s["duration"] for s in doc["scenes"][:1])
    scene = next(s for s in doc["scenes"] if any(l["type"] == "image" for l in s["layers"]))
    assert scene is doc["scenes"][1]
    for t in (start + 0.9, start + scene["duration"] * 0.6, start + scene["duration"] - 0.05):
        frame = render_still(doc, t, RenderSpec(fmt, 360), LocalAssets(tmp_path))
        assert _seen(frame, RED) > 0.0005 and _seen(frame, BLUE) > 0.0005, (fmt, t)
