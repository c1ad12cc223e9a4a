"""Where the CPU rasterizer draws: a Skia surface over a numpy buffer the encoder reads in place."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import skia

from reelfarm.renderer import damage

# Skia's raster fast paths are for its native 32-bit order, BGRA on x86 Linux: filtered image
# draws into an RGBA surface measured about 9x slower here. Encoders take BGRA as it is.
PIXEL_FORMAT = "bgra"
PIXEL_COLOR_TYPE = skia.kBGRA_8888_ColorType


@dataclass
class CpuTarget:
    """A CPU drawing target: a Skia surface over a numpy buffer that the encoder reads in place.

    The rasterizer reaches its targets only through these methods, so a GPU target (see
    `reelfarm.renderer.gl`) runs the very same drawing code.
    """

    array: np.ndarray
    surface: skia.Surface
    partial = True  # boxes of it can be restored and redrawn (a GPU target redraws whole frames)
    held: Any = None  # what it holds, when a scene drawn by `SkiaRasterizer._update_scene` (_Held)

    @classmethod
    def make(cls, width: int, height: int) -> CpuTarget:
        array = np.zeros((height, width, 4), np.uint8)
        surface = skia.Surface(array, colorType=PIXEL_COLOR_TYPE, alphaType=skia.kPremul_AlphaType)
        return cls(array, surface)

    def keep(self) -> Any:
        """What `restore` needs to bring these pixels back (a scene's cached base)."""
        return self.array.copy()

    def restore(self, kept: Any) -> None:
        np.copyto(self.array, kept)

    def restore_box(self, kept: Any, box: damage.Box) -> None:
        x0, y0, x1, y1 = box
        self.array[y0:y1, x0:x1] = kept[y0:y1, x0:x1]

    def image(self) -> skia.Image:
        """The pixels now, as an image that later drawing here does not change."""
        # A copy, not makeImageSnapshot(): a snapshot would make the surface copy-on-write and
        # detach it from the numpy buffer that scene bases are copied into.
        # Premultiplied, as drawn: read as unpremultiplied, each draw of it converted every pixel
        # (a 1080p frame drew in about 25 ms instead of 1 to 2).
        return skia.Image.fromarray(self.array, colorType=PIXEL_COLOR_TYPE, alphaType=skia.kPremul_AlphaType)

    def pixels(self) -> np.ndarray:
        """The frame as the rasterizer hands it out (here: the buffer itself)."""
        return self.array
