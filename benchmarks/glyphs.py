"""CPU milliseconds to draw one line of text at each size: where Skia's glyph masks cost more than paths.

    python -m benchmarks.glyphs                       # 40 to 300 px, the line below
    python -m benchmarks.glyphs --sizes 140,257 --draws 50
    python -m benchmarks.glyphs --stories 3           # and every story drawn both ways, interleaved

Skia draws a glyph of up to 256 device pixels from a cached mask and a larger one as a path. The
line ("We're opening our second studio", as a story's headline) is drawn held in place and moving
a fraction of a pixel each draw, after a few draws that fill the caches; printed per size: CPU ms a
draw (`time.process_time`). Then a story's own 140 px headline as the rasterizer paints it
(`TextBlock.paint`, the paragraph the stories lay out), with masks and as the rasterizer draws it
(as paths from `text.PATH_GLYPHS_PX`: under `text.PATH_GLYPHS`, a perspective that moves
nothing, Skia draws every glyph as a path). With `--stories N`, each built-in story (16:9, 1080p)
is drawn as a render draws it, N times with masks only and N times as drawn, alternately in this
process; per story the CPU ms a frame of each way (each frame's fastest of its N draws). Results go to benchmarks/results/glyphs-*.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

LINE = "We're opening our second studio"


def per_draw(draw: Any, draws: int, moving: bool) -> float:
    """CPU ms a call of ``draw(x, y)``, at one place or moving 0.37 px a call."""
    for k in range(8):
        draw(10.0 + (k * 0.37 if moving else 0.0), 500.0)
    c0 = time.process_time()
    for k in range(draws):
        draw(10.0 + (k * 0.37 if moving else 0.0), 500.0)
    return 1000 * (time.process_time() - c0) / draws


def stories(rounds: int) -> dict[str, dict[str, float]]:
    """CPU ms a frame of each story drawn with masks only and as drawn (see the docstring)."""
    import numpy as np

    from reelfarm.renderer import text
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.raster import SkiaRasterizer
    from reelfarm.renderer.spec import RenderSpec
    from reelfarm.renderer.tokens import NEUTRAL_BRAND
    from reelfarm.studio.stories import list_stories

    threshold = text.PATH_GLYPHS_PX
    out: dict[str, dict[str, float]] = {}
    try:
        for story in list_stories():
            doc = parse_doc(story.build({}, NEUTRAL_BRAND, "16:9", None))
            spec = RenderSpec("16:9", 1080, doc.fps)
            times: dict[str, list[list[float]]] = {"masks_ms": [], "as_drawn_ms": []}
            for _ in range(rounds):
                for way, px in (("masks_ms", float("inf")), ("as_drawn_ms", threshold)):
                    text.PATH_GLYPHS_PX = px
                    raster = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
                    frames = []
                    for n in range(doc.frame_count):
                        c0 = time.process_time()
                        raster.render(spec.time(n))
                        frames.append(1000 * (time.process_time() - c0))
                    raster.close()
                    times[way].append(frames)
            out[story.id] = {way: float(np.min(runs, axis=0).mean()) for way, runs in times.items()}
            row = out[story.id]
            print(f"  {story.id:18s} masks {row['masks_ms']:5.2f}  as drawn {row['as_drawn_ms']:5.2f} ms a frame  "
                  f"{row['as_drawn_ms'] / row['masks_ms']:.2f}x", flush=True)
    finally:
        text.PATH_GLYPHS_PX = threshold
    return out


def main(argv: list[str] | None = None) -> int:
    import skia

    from reelfarm.renderer.fonts import font_book
    from reelfarm.renderer.model import FontRef
    from reelfarm.renderer.text import PATH_GLYPHS, PATH_GLYPHS_PX, TextBlock, TextSpec

    p = argparse.ArgumentParser(prog="python -m benchmarks.glyphs", description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="40,80,120,140,200,256,257,300")
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--stories", type=int, default=0, help="rounds of every story drawn both ways (0: none)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    surface = skia.Surface(1920, 1080)
    canvas = surface.getCanvas()
    paint = skia.Paint(AntiAlias=True, Color=skia.ColorWHITE)
    book = font_book()
    typeface = book.typeface("Inter", 700)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    rows: dict[str, Any] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        font = skia.Font(typeface, size)
        font.setSubpixel(True)
        font.setEdging(skia.Font.Edging.kAntiAlias)
        blob = skia.TextBlob.MakeFromString(LINE, font)

        def draw(x: float, y: float, blob: Any = blob) -> None:
            canvas.drawTextBlob(blob, x, y, paint)

        def as_paths(x: float, y: float, blob: Any = blob) -> None:
            canvas.save()
            canvas.concat(PATH_GLYPHS)
            canvas.drawTextBlob(blob, x, y, paint)
            canvas.restore()

        held, moving = per_draw(draw, args.draws, False), per_draw(draw, args.draws, True)
        paths = per_draw(as_paths, args.draws, True)
        rows[str(size)] = {"held_ms": held, "moving_ms": moving, "paths_moving_ms": paths}
        print(f"  {size:4d} px  held {held:6.2f} ms  moving {moving:6.2f} ms  as paths, moving {paths:6.2f} ms",
              flush=True)
    spec = TextSpec(text=LINE, font=FontRef("Inter", 700), size_px=140.0, min_size_px=70.0, color="#FFFFFF",
                    align="left", direction="auto", line_height=1.2, letter_spacing=0.0, auto_shrink=False,
                    box_w=1800.0, box_h=0.0)
    block = TextBlock(spec, book)
    paragraph = per_draw(lambda x, y: block.paint(canvas, x, y, paths=False), args.draws, True)
    paragraph_paths = per_draw(lambda x, y: block.paint(canvas, x, y), args.draws, True)
    print(f"  a story's 140 px headline (TextBlock.paint), moving: {paragraph:.2f} ms as masks, "
          f"{paragraph_paths:.2f} ms as drawn (paths from {PATH_GLYPHS_PX:g} px)")
    story_rows = stories(args.stories) if args.stories else {}
    if story_rows:
        import statistics

        masks = statistics.median(r["masks_ms"] for r in story_rows.values())
        drawn = statistics.median(r["as_drawn_ms"] for r in story_rows.values())
        print(f"  stories' median: masks {masks:.2f}, as drawn {drawn:.2f} ms a frame ({drawn / masks:.2f}x)")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"glyphs-{dt.datetime.now():%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"benchmark": "glyphs", "line": LINE, "sizes": rows, "paragraph_140_ms": paragraph, "paragraph_140_as_drawn_ms": paragraph_paths, "stories": story_rows,
                               "load_average_start": load, "load_average_end": os.getloadavg(),
                               "cores": os.cpu_count()}, indent=2))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
