"""What captions cost a frame: ``python -m benchmarks.captions [--cues 2,200,2000] [--frames 180]``.

Draws the same 6-second, two-scene 16:9 document at 640x360 in order (as a chunk is drawn), once
for each number of cues spread evenly over it, and prints the milliseconds a frame took. A
scene's captions are text layers of that scene (``reelfarm.renderer.caption_layout``), one a
stretch of time, and the rasterizer checks each of them at every frame of the scene: what a
frame costs grows with the cues its scene holds, not with the video's.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer

SECONDS = 6.0


def captioned_doc(cues: int) -> dict[str, Any]:
    """Two scenes of 3 s, a heading in each, and ``cues`` cues spread evenly over the 6 s."""
    step = SECONDS / cues
    scene = {"duration": SECONDS / 2, "background": {"type": "solid", "color": "#1E293B"},
             "layers": [{"id": "h", "type": "text", "text": "Hello", "x": 0.5, "y": 0.4, "w": 0.8, "h": 0.2,
                         "size": 0.08, "color": "#FFFFFF"}]}
    return {"version": 1, "fps": 30, "duration": SECONDS,
            "scenes": [{**scene, "id": "a"}, {**scene, "id": "b"}],
            "captions": {"cues": [{"start": round(i * step, 4), "end": round((i + 0.9) * step, 4),
                                   "text": f"Cue number {i}"} for i in range(cues)]}}


def frame_ms(cues: int, frames: int) -> tuple[float, float]:
    """(seconds to set the rasterizer up, milliseconds a frame) for ``cues`` cues."""
    doc = parse_doc(captioned_doc(cues))
    start = time.perf_counter()
    raster = SkiaRasterizer(doc, "16:9", 640, 360)
    ready = time.perf_counter()
    for n in range(frames):
        raster.render(n / 30)
    return ready - start, (time.perf_counter() - ready) / frames * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cues", default="2,200,2000")
    parser.add_argument("--frames", type=int, default=180)
    args = parser.parse_args()
    for cues in (int(c) for c in args.cues.split(",")):
        setup, ms = frame_ms(cues, args.frames)
        print(f"{cues:>5} cues: set up in {setup:.3f} s, {ms:.2f} ms a frame")


if __name__ == "__main__":
    main()
