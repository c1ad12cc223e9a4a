"""The inside of a faint shape fading over a plain background, filled in the planes, not drawn.

A story's orbs fade in over their scene's first second, each covering up to half the frame: every
step of their opacity changed every pixel of their box, which was drawn again (a filtered image,
some 3 ns a pixel) and converted again (swscale, 2 to 3 ns), a quarter to a half of a story's
drawing time. Yet inside its outline such a shape is one colour over its scene's base, and where
that base is one colour too and nothing else is drawn, every pixel there is the same pixel: what
the shape's drawing leaves on the base's colour. Converted to yuv420p (a luma sample is its own
pixel's, a chroma sample its 2x2 block's average) that is one Y, U and V, so the frame's planes
take them as they are (a `Stamp` of one sample a plane), and the target's pixels there are set to
that pixel, not drawn (a fill, not a filtered image's draw with the base restored under it).

The pixel is found by drawing the shape's own recorded drawing onto a 2x2 surface of the base's
colour, at a place inside it, and its samples by converting a plain image of it as every other
box is converted (`reelfarm.renderer.yuv.flat_samples`): so the planes are, bit for bit, those of
the pixels drawn (what `tests/unit/renderer/test_skip.py` and `test_determinism.py` hold every
story to, in any order of frames).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from reelfarm.renderer import damage
from reelfarm.renderer.damage import Box
from reelfarm.renderer.glide import Stamp
from reelfarm.renderer.target import PIXEL_FORMAT, CpuTarget


def plain_pixel(base: Any) -> np.ndarray | None:
    """The one pixel every pixel of a scene's `base` (a CPU target's kept array) is, or None."""
    if not isinstance(base, np.ndarray) or base.dtype != np.uint8 or base.shape[-1] != 4 \
            or not base.flags.c_contiguous:
        return None
    words = base.view(np.uint32)
    return base.reshape(-1, 4)[0].copy() if bool((words == words.flat[0]).all()) else None


class Fills:
    """Stamps for the insides of fading faint shapes (see the module docstring)."""

    def __init__(self) -> None:
        self._probe: CpuTarget | None = None  # a 2x2 surface a shape's inside is drawn on

    def insides(self, pixels: Any, drawn: Sequence[Any], fades: Sequence[tuple[int, list[Box]]],
                base: np.ndarray | None, stamps: list[Stamp]) -> list[Box]:
        """For each `fades` entry (a drawing's index in `drawn`, the redraw.Drawn of a frame, and
        the insides of its outline that its new opacity changed, on even pixels), the parts that
        only it covers over the plain `base` pixel are filled with its pixel in `pixels` (a
        target's array) and their planes added to `stamps`; returns the boxes left to draw and
        convert (where another drawing meets an inside, or all of them where the base is not
        plain). The frame's last two rows are left too: swscale converts an image's last chroma
        row apart (`reelfarm.renderer.yuv`)."""
        rest: list[Box] = []
        for j, pieces in fades:
            picture = drawn[j].picture
            if base is None or not isinstance(pixels, np.ndarray) or picture is None:
                rest += pieces
                continue
            bottom = pixels.shape[0] - 2
            others = [damage.even(d.box) for i, d in enumerate(drawn) if i != j and d.box is not None]
            others.append((0, bottom, pixels.shape[1], pixels.shape[0]))
            flat: list[Box] = []
            for piece in pieces:
                parts = [piece]
                for box in others:
                    if damage.meets(box, piece):
                        rest.append(_common(piece, box))
                        parts = [p for part in parts for p in damage.without(part, box)]
                flat += parts
            if flat:
                from reelfarm.renderer.yuv import flat_samples  # PyAV loads only where frames are encoded

                pixel = self._inside(picture, base, flat[0])
                y, u, v = (np.array(sample, np.uint8) for sample in flat_samples(pixel, PIXEL_FORMAT))
                word = np.frombuffer(pixel, np.uint32)[0]
                words = pixels.view(np.uint32)
                for x0, y0, x1, y1 in flat:
                    words[y0:y1, x0:x1] = word
                    stamps.append(Stamp((x0, y0, x1, y1), y, u, v))
        return rest

    def _inside(self, picture: Any, base: np.ndarray, at: Box) -> bytes:
        """The pixel `picture` draws at `at`'s top-left pixel over a `base` pixel."""
        if self._probe is None:
            self._probe = CpuTarget.make(2, 2)
        probe = self._probe
        probe.array[:] = base
        canvas = probe.surface.getCanvas()
        canvas.save()
        canvas.translate(-at[0], -at[1])
        canvas.drawPicture(picture)
        canvas.restore()
        return bytes(probe.array[0, 0])


def _common(a: Box, b: Box) -> Box:
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
