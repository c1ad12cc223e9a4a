"""``crop_max``: a picture whose shape differs from its card's keeps its edges in the frame."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still

RED, GREEN, BLUE = (230, 20, 20), (20, 170, 60), (20, 40, 230)


def _striped(path: Path) -> Path:
    """A 2:1 photo: its left tenth red, its right tenth blue, green between."""
    rgb = np.zeros((200, 400, 3), np.uint8)
    rgb[:] = GREEN
    rgb[:, :40] = RED
    rgb[:, 360:] = BLUE
    Image.fromarray(rgb).save(path)
    return path


def _doc(**layer) -> dict:
    # in 9:16 at 360p (360x640) the card is 324x224 px: a 1.45:1 box for a 2:1 picture,
    # which covering would crop by 28% of its width before any zoom
    return {"version": 1, "fps": 30, "duration": 6,
            "assets": {"photo": {"type": "image", "key": "photo.png"}},
            "scenes": [{"id": "s", "duration": 6, "background": {"type": "solid", "color": "#FFFFFF"},
                        "layers": [{"id": "img", "type": "image", "asset": "photo", "x": 0.5, "y": 0.3,
                                    "w": 0.9, "h": 0.35, "fit": "cover",
                                    "ken_burns": {"from": {"scale": 1.0}, "to": {"scale": 1.12}}, **layer}]}]}


def _share(frame: np.ndarray, colour: tuple[int, int, int]) -> float:
    near = np.abs(frame[..., :3].astype(int) - np.array(colour)).max(axis=-1) < 40
    return float(near.mean())


@pytest.mark.parametrize("t", [0.0, 3.0, 5.9])
def test_a_bounded_picture_keeps_both_edges_through_its_zoom(tmp_path, t):
    _striped(tmp_path / "photo.png")
    frame = render_still(_doc(crop_max=0.12), t, RenderSpec("9:16", 360), LocalAssets(tmp_path))
    assert _share(frame, RED) > 0.002 and _share(frame, BLUE) > 0.002
    # the rows above and below the picture, inside the card, are its blurred fill, not the background
    above = frame[84, 60:300, :3].astype(int)
    assert (above.max(axis=-1) < 235).all()
    assert abs(_share(frame, RED) - _share(frame, BLUE)) < 0.002  # centred: as much of each edge


def test_without_a_bound_cover_hides_the_edges(tmp_path):
    _striped(tmp_path / "photo.png")
    frame = render_still(_doc(), 0.0, RenderSpec("9:16", 360), LocalAssets(tmp_path))
    assert _share(frame, RED) == 0 and _share(frame, BLUE) == 0


def test_a_picture_of_the_cards_shape_is_covered_and_still_zooms(tmp_path):
    rgb = np.zeros((224, 324, 3), np.uint8)
    rgb[:] = GREEN
    rgb[:, :4] = RED  # under 2% of the width: the push hides it, within the bound
    Image.fromarray(rgb).save(tmp_path / "photo.png")
    start = render_still(_doc(crop_max=0.12), 0.0, RenderSpec("9:16", 360), LocalAssets(tmp_path))
    end = render_still(_doc(crop_max=0.12), 5.9, RenderSpec("9:16", 360), LocalAssets(tmp_path))
    card = (slice(80, 304), slice(18, 342))
    assert _share(start[card], GREEN) > 0.95 and _share(end[card], GREEN) > 0.95  # no fill needed
    assert _share(start, RED) > 0 and _share(end, RED) == 0


def test_the_document_schema_bounds_crop_max():
    from reelfarm.renderer.errors import DocInvalid
    from reelfarm.renderer.model import parse_doc

    with pytest.raises(DocInvalid, match="crop_max"):
        parse_doc(_doc(crop_max=0.9))
