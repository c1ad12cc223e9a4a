"""What a frame redraws between two frames of one scene, and where.

Each drawing of the scene (a moving layer drawn at its state, or a static layer's picture) is a
`Drawn`: its state key, the pixel box it can touch, whether a box may cut through it, and, for a
flat shape, its outline. A changed layer damages its old and new box; a flat shape (one solid
colour, no stroke, unrotated, fully opaque as a layer) that only moved or grew damages only the
band between its old and new outline (`damage.outline_boxes`), since inside both it is the same
colour. The damaged boxes are restored from the scene's base and every drawing that meets them is
played back once: a cuttable one under the boxes' union as one clip (a region: one draw however
many boxes an outline's strips make), an uncuttable one under the one box that holds it (under a
complex clip Skia anti-aliases differently: frames drawn so differed from frames drawn whole).

A drawing is *cuttable* when the pixels it draws inside a clip are the pixels it draws without
one: unaliased image draws (measured: every case of several hundred random ones).
Anti-aliased paths (shapes, rounded clips), offscreen layers (opacity, shadows) and dithered
gradients are not, so a box meeting one grows to hold
it whole (`damage.settle`), and the frame drawn this way equals, bit for bit, the same frame
drawn whole (what makes a frame independent of the frames drawn before it).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import skia

from reelfarm.renderer import damage
from reelfarm.renderer.damage import Box, Outline
from reelfarm.renderer.model import Layer
from reelfarm.renderer.sprites import Placement
from reelfarm.renderer.timeline import LayerState

Rect = tuple[float, float, float, float]


@dataclass(frozen=True)
class Drawn:
    """One drawing of a scene as a frame holds it."""

    key: Any                      # the moving layer's state key; None for a static picture
    box: Box | None               # the pixels it can touch (None: nothing)
    cuttable: bool = False        # a clip may cut through it and leave its pixels as they are
    outline: Outline | None = None  # a flat drawing's outline, when it is one
    alpha: float = 1.0            # the opacity it is drawn at (a flat drawing's inside depends on it)
    mapped: bool = False          # drawn on Skia's raster pipeline (its inside a level off the legacy path's)
    picture: Any = None           # a cuttable drawing recorded, played back in each box it meets


def cuttable(layer: Layer, state: LayerState | None, sprite: bool = False) -> bool:
    """Whether `layer` at `state` draws the same pixels under any clip: only an image drawn for it
    (`sprite`: a faint shape, a held shape or text, see `reelfarm.renderer.sprites`). Anti-aliased paths are not (where a clip cuts one
    changes the coverage of its edge pixels), nor is text laid out in paragraphs (seen off by one
    along a box's edge)."""
    return state is None or sprite


def flat_outline(layer: Layer, at: Placement, radius: float) -> Outline:
    """The outline of a faint shape drawn as an image at its placement `at` (`radius`: its
    corners' as drawn)."""
    kind = "ellipse" if layer.shape == "ellipse" else ("rrect" if layer.shape == "rounded_rect" or radius > 0 else "rect")
    return (kind, at.left, at.top, at.right, at.bottom, radius)


def damaged(old: Drawn, new: Drawn, width: int, height: int, inside: list[Box] | None = None) -> list[Box]:
    """The boxes whose pixels may differ when `old` is drawn as `new`. Where `inside` is given and
    a flat drawing changed its colour (its opacity, its path through Skia) as well as its outline
    or not, the insides of both outlines go to `inside` (`reelfarm.renderer.fills`), not the result."""
    if old.outline is not None and new.outline is not None and old.outline[0] == new.outline[0] \
            and old.outline[5] == new.outline[5]:
        if old.alpha == new.alpha and old.mapped == new.mapped:
            return damage.outline_boxes(old.outline, new.outline, width, height)
        if inside is not None:
            return damage.outline_boxes(old.outline, new.outline, width, height, inside)
    return [b for b in (old.box, new.box) if b is not None]


def redraw(target: Any, base: Any, changed: Sequence[Box], drawn: Sequence[Drawn],
           draw: Callable[[skia.Canvas, int], None]) -> list[Box]:
    """Restore `changed` (grown until no uncuttable drawing is cut) on `target` from the scene's
    `base` and draw again, in order, every drawing `i` that meets one (`draw(canvas, i)`): a
    cuttable one under their union, an uncuttable one under the box holding it; the boxes restored."""
    boxes = damage.settle(changed, [d.box for d in drawn if d.box is not None and not d.cuttable])
    if not boxes:
        return boxes
    canvas = target.surface.getCanvas()
    region = skia.Region()
    for box in boxes:
        target.restore_box(base, box)
        region.op(skia.IRect.MakeLTRB(*box), skia.Region.kUnion_Op)
    for i, d in enumerate(drawn):
        if d.box is None:
            continue
        met = [box for box in boxes if damage.meets(d.box, box)]
        if not met:
            continue
        canvas.save()
        if d.cuttable:
            canvas.clipRegion(region)
        else:
            canvas.clipRect(skia.Rect.MakeLTRB(*met[0]))
        draw(canvas, i)
        canvas.restore()
    return boxes
