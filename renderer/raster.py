"""The Skia CPU rasterizer: (doc, t) -> RGBA pixels in a reused buffer.

Per scene, the background and the static layers beneath the first moving one are drawn once and
copied into the frame with one memcpy; static layers above moving ones are recorded once as a
picture. Every frame's visible state is a hashable key: when it equals the previous frame's, the
buffer already holds the answer and nothing is drawn (nor converted).

Between two frames of one scene only the boxes that changed are restored from the scene's base
and drawn again (`reelfarm.renderer.redraw`); faint shapes and unscaled text are drawn as images
made once (`reelfarm.renderer.sprites`), so a box may cut them and a drifting orb changes only
along its outline. With `yuv=True` only those boxes are converted to yuv420p again
(`reelfarm.renderer.yuv`), and crossfades and slides are composed from each scene's planes
(`reelfarm.renderer.compose`). An image that only moves sideways is copied from images made once
per sub-pixel place, its inside's planes too (`reelfarm.renderer.glide`). A frame is the same
whatever was drawn before it.

`reuse=False` draws and converts every frame whole with paths and glyphs: the reference that
`tests/unit/renderer/test_fidelity.py` holds every frame close to.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import skia

from reelfarm.renderer import compose, damage, fills, glide, redraw
from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.caption_layout import caption_layers
from reelfarm.renderer.draw import ImageStore, draw_background, lerp_view
from reelfarm.renderer.easing import ease
from reelfarm.renderer.fonts import FontBook, font_book
from reelfarm.renderer.layers import LayerPainter, display_text, text_block_size
from reelfarm.renderer.model import Doc, Layer, Scene
from reelfarm.renderer.sprites import LayerImages, Sprites
from reelfarm.renderer.target import PIXEL_FORMAT, CpuTarget
from reelfarm.renderer.text import TextBlock, shown_chars
from reelfarm.renderer.timeline import Timeline, layer_state
from reelfarm.renderer.tokens import Brand, argb

# Text blocks shaped per rasterizer: one per text layer and box size, so a video's own texts fit.
TEXT_BLOCKS_MAX_ENTRIES = 512
TEXT_BLOCKS_MAX_BYTES = 64 * 1024 * 1024


_Target = CpuTarget  # the name the linter's contrast check imports


class Rasterizer(Protocol):
    """Draws frames of one document in one format and size."""

    width: int
    height: int
    pixel_format: str  # "bgra" or "rgba": the channel order of the arrays `render` returns

    def render(self, t: float) -> np.ndarray:
        """The frame at `t` seconds as an (height, width, 4) uint8 array in `pixel_format`.

        The array is reused by the next call: copy it to keep it.
        """

    def close(self) -> None:
        """Release buffers and caches."""


@dataclass
class _ScenePlan:
    base: Any                                     # background + static layers below motion (None: none)
    plain: Any = False  # the one pixel `base` is all of (None: it is not), once asked (`fills.plain_pixel`)
    # ("layer", Layer) | ("picture", (Picture, its box or None, cuttable)), in drawing order
    items: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class _Held:
    """What the main target holds: scene `index` drawn whole (no transition), and per plan item
    what it drew (`redraw.Drawn`)."""

    index: int
    items: list[redraw.Drawn]


class SkiaRasterizer(LayerPainter):
    """CPU rasterizer on Skia; see the module docstring for what it caches.

    Subclasses change only where pixels live (`_new_target`), never how they are drawn.
    """

    pixel_format = PIXEL_FORMAT
    _frame: np.ndarray  # the last frame drawn; set by the first render(), read only after it

    def __init__(self, doc: Doc, fmt: str, width: int, height: int,
                 assets: AssetSource | None = None, book: FontBook | None = None,
                 yuv: bool = False, reuse: bool = True, transparent: bool = False) -> None:
        self.doc, self.fmt, self.width, self.height = doc, fmt, width, height
        self.reuse = reuse
        # a transparent output (WebM with alpha) shows nothing behind scenes that name no background
        self._bare = {s.get("id") for s in doc.source.get("scenes", []) if "background" not in s} \
            if transparent else set()
        self._planes: Any = None
        if yuv:  # PyAV loads only where frames are encoded
            from reelfarm.renderer.yuv import Bt709Planes
            self._planes = Bt709Planes(width, height)
            self.pixel_format = "yuv420p"
        # crossfades and slides composed from each scene's planes (a CPU target handing out yuv420p)
        self._mixer = compose.PlaneTransitions(width, height) if yuv and reuse else None
        self.unit = float(min(width, height))
        self.brand = Brand(doc.brand)
        self.book = book or font_book()
        self.images = ImageStore(doc, assets)
        # faint shapes drawn as images: not on the reference path, which draws every path itself
        self._sprites = Sprites(self.brand, self.unit, width) if reuse else None
        self._layer_images = LayerImages(width, height) if reuse else None
        self._glides = glide.Glides(width, height) if reuse else None
        self._stamps: list[glide.Stamp] = []  # the planes of the frame being drawn that need no conversion
        self._fills = fills.Fills()
        self._clips: Any = None  # a footage.ClipStore, made for the first video drawn (PyAV loads then)
        self.timeline = Timeline(doc)
        self._main = self._new_target()
        self._scratch: Any = None
        self._plans: dict[int, _ScenePlan] = {}
        self._texts: BoundedCache[tuple[int, int, int], TextBlock] = BoundedCache(
            TEXT_BLOCKS_MAX_ENTRIES, TEXT_BLOCKS_MAX_BYTES, sizeof=text_block_size)
        self._last_frames: dict[int, skia.Image] = {}
        self._last_key: Any = None
        self.drawn_pixels = 0  # pixels restored and redrawn so far (a whole frame counts them all)
        self._states: dict[tuple[int, float, float], tuple[Layer, Any]] = {}  # `_state`'s, lately
        # captions are the last layers of each scene, and drawn over its transition in, not blended
        # with it (``reelfarm.renderer.caption_layout``)
        self._scenes = [tuple(l.for_format(fmt) for l in s.layers) + caption_layers(doc, i, fmt)
                        for i, s in enumerate(doc.scenes)]
        self._over = [caption_layers(doc, i, fmt, during_transition=True) for i in range(len(doc.scenes))]

    def _new_target(self) -> Any:
        return CpuTarget.make(self.width, self.height)

    # -- public -------------------------------------------------------------------------------

    def render(self, t: float) -> np.ndarray:
        index, local = self.timeline.locate(t)
        progress = self.timeline.transition_progress(index, local)
        if not self.reuse:
            if progress is None:
                self._draw_scene(self._main, index, local)
            else:
                self._draw_transition(index, local, progress)
                self._draw_over(index, local)
            self.drawn_pixels += self.width * self.height
            self._frame = self._out(None)
            return self._frame
        keys = self._layer_keys(index, local)
        key = (index, progress, keys, self._bg_key(self.doc.scenes[index], local))
        if key == self._last_key:
            return self._frame
        shown, self._last_key = self._last_key, None
        boxes: list[damage.Box] | None = None
        if progress is None:
            self._take_incoming(index)
            boxes = self._update_scene(self._main, index, local, keys, self._stamps if self._planes is not None else None)
        elif self._mixes(index):
            self._frame = self._mix_transition(index, local, progress, keys, shown)
            self._last_key = key
            return self._frame
        else:
            self._draw_transition(index, local, progress, keys)
            self._draw_over(index, local)
            self.drawn_pixels += self.width * self.height
        self._frame = self._out(boxes)
        self._last_key = key
        return self._frame

    def close(self) -> None:
        if self._clips is not None:
            self._clips.close()
        self._plans.clear()
        self._texts.clear()
        self._last_frames.clear()
        if self._sprites is not None and self._layer_images is not None:
            self._sprites.clear()
            self._layer_images.clear()
        if self._glides is not None:
            self._glides.clear()
        if self._mixer is not None:
            self._mixer.clear()
        for target in (self._main, self._scratch):
            if target is not None and getattr(target, "partial", False):
                target.held = None
        self._last_key = None

    def _out(self, boxes: list[damage.Box] | None) -> np.ndarray:
        """The frame as handed out: the target's pixels, or yuv420p converted where `boxes` changed
        (but where the frame's stamps hold the planes)."""
        pixels = self._main.pixels()
        stamps, self._stamps = self._stamps, []
        if self._planes is None:
            return pixels
        return self._planes.convert(pixels, PIXEL_FORMAT, boxes, stamps)

    # -- scenes -------------------------------------------------------------------------------

    def _layer_keys(self, index: int, local: float) -> tuple:
        """The state key of each moving layer of scene `index`'s plan, in order."""
        scene = self.doc.scenes[index]
        return tuple(self._layer_key(l, local, scene.duration) for kind, l in self._plan(index).items
                     if kind == "layer")

    def _layer_key(self, layer: Layer, t: float, duration: float, top: bool = True) -> Any:
        state = self._state(layer, t, duration)
        if state is None:
            return None
        if layer.type == "group":
            return state, tuple(self._layer_key(c.for_format(self.fmt), t, duration, False) for c in layer.children)
        if top and self._sprites is not None and self._sprites.used(layer, state):
            # a faint shape is drawn at its placement: frames placing it alike draw it alike
            return self._sprites.placed(layer, self._box(layer, state, self._frame_box())[0], state)
        if top and self._glides is not None and self._glides.planned(layer, state):
            # an image that only moves is drawn where its grid puts it: frames placing it alike draw it alike
            return self._glides.place(layer, self._box(layer, state, self._frame_box())[0])
        if layer.type == "video":  # a new clip frame is a new picture
            return state, self.clips.frame_number(layer.asset or "", layer.footage, t - layer.start)
        if layer.type == "text" and state.reveal < 1.0:
            # The characters shown, not the exact fraction: frames between two steps are equal.
            shown = shown_chars(display_text(layer), state.reveal, state.reveal_mode)
            return dataclasses.replace(state, reveal=0.0), shown
        return state

    def _bg_key(self, scene: Scene, local: float) -> Any:
        bg = scene.background
        kb = 0.0 if bg.ken_burns is None else round(ease(bg.ken_burns.easing, local / scene.duration), 6)
        if bg.type == "video":
            return kb, self.clips.frame_number(bg.asset or "", bg.footage, local)
        return kb

    def _plan(self, index: int) -> _ScenePlan:
        plan = self._plans.get(index)
        if plan is None:
            # Frames arrive in order within a chunk: keep only neighbouring scenes' caches, so
            # memory stays flat at 4K however many scenes there are.
            for old in [i for i in self._plans if abs(i - index) > 1]:
                if self._glides is not None:
                    for kind, layer in self._plans[old].items:
                        if kind == "layer":
                            self._glides.forget(layer)
                del self._plans[old]
            for old in [i for i in self._last_frames if i != index - 1]:
                del self._last_frames[old]
            plan = self._plans[index] = self._make_plan(index)
        return plan

    def _make_plan(self, index: int) -> _ScenePlan:
        scene = self.doc.scenes[index]
        layers = self._scenes[index]
        static = [self._is_static(l, scene.duration) for l in layers]
        prefix = 0
        still = _still_background(scene)
        if still:
            while prefix < len(layers) and static[prefix]:
                prefix += 1
        base = None
        if still:
            target = self._new_target()
            self._paint_background(target.surface.getCanvas(), scene, 0.0)
            for layer in layers[:prefix]:
                self._draw_layer(target.surface.getCanvas(), layer, 0.0, scene.duration, self._frame_box())
            base = target.keep()
        plan = _ScenePlan(base)
        for layer, is_static in list(zip(layers, static))[prefix:]:
            if is_static:
                state = layer_state(layer, 0.0, scene.duration)
                cut = redraw.cuttable(layer, state, self._imaged(layer, state))
                picture, box = self._record(layer, 0.0, scene.duration)
                plan.items.append(("picture", (picture, box if cut else self._whole(layer, state, box), cut)))
            else:
                plan.items.append(("layer", layer))
                if layer.type == "image":
                    self._plan_glide(layer, scene)
        return plan

    def _plan_glide(self, layer: Layer, scene: Scene) -> None:
        """Whether moving image `layer` only moves sideways over `scene`: its box at each frame of
        the document's rate where it is only placed (`reelfarm.renderer.glide`)."""
        if self._glides is None:
            return
        rects: list[Any] = []
        for n in range(max(1, math.ceil(scene.duration * self.doc.fps))):
            state = layer_state(layer, n / self.doc.fps, scene.duration)
            rects.append(self._box(layer, state, self._frame_box())[0] if state is not None and glide.used(layer, state)
                         else None)
        self._glides.plan(layer, glide.sideways(rects))

    def _record(self, layer: Layer, t: float, duration: float) -> tuple[skia.Picture, damage.Box | None]:
        return damage.recorded(lambda canvas: self._draw_layer(canvas, layer, t, duration, self._frame_box()),
                               self.width, self.height)

    @staticmethod
    def _is_static(layer: Layer, duration: float) -> bool:
        always = layer.start <= 0 and (layer.end is None or layer.end >= duration)
        return always and not layer.hidden and not layer.is_animated

    def _update_scene(self, target: Any, index: int, local: float, keys: tuple,
                      stamps: list[glide.Stamp] | None = None) -> list[damage.Box] | None:
        """Bring `target` to scene `index` at `local` (`keys`: its moving layers' state keys);
        the boxes that changed, or None when the whole frame was drawn. Where given, `stamps`
        takes the planes of what needs no conversion: glides redrawn (`_stamp`) and the insides
        of fading faint shapes, filled (`reelfarm.renderer.fills`)."""
        plan = self._plan(index)
        if plan.base is None or not getattr(target, "partial", False):
            if getattr(target, "partial", False):
                target.held = None
            self._draw_scene(target, index, local)
            self.drawn_pixels += self.width * self.height
            return None
        scene = self.doc.scenes[index]
        held = target.held if target.held is not None and target.held.index == index else None
        items: list[redraw.Drawn] = []
        changed: list[damage.Box] = []
        fades: list[tuple[int, list[damage.Box]]] = []  # flat drawings' insides a new colour changed
        moving = iter(keys)
        for j, (kind, item) in enumerate(plan.items):
            if kind == "picture":
                items.append(redraw.Drawn(None, item[1], item[2]))
                continue
            key = next(moving)
            if held is not None and held.items[j].key == key:
                items.append(held.items[j])
                continue
            items.append(self._drawn(item, key, local, scene.duration))
            if held is not None:
                inside: list[damage.Box] | None = [] if stamps is not None else None
                changed += redraw.damaged(held.items[j], items[-1], self.width, self.height, inside)
                if inside:
                    fades.append((j, inside))
        target.held = _Held(index, items)
        if held is None:
            self._draw_scene(target, index, local)
            self.drawn_pixels += self.width * self.height
            return None
        if fades and stamps is not None:  # filled in the planes where only they are drawn on a plain base
            if plan.plain is False:
                plan.plain = fills.plain_pixel(plan.base)
            changed += self._fills.insides(getattr(target, "array", None), items, fades, plan.plain, stamps)
        boxes = redraw.redraw(target, plan.base, changed, items,
                              lambda canvas, i: self._draw_item(canvas, plan.items[i], local, scene.duration)
                              if items[i].picture is None else canvas.drawPicture(items[i].picture))
        self.drawn_pixels += damage.area(boxes)
        if stamps is not None:
            stamps += self._stamp(plan, items, held, local, scene.duration)
        return boxes

    def _stamp(self, plan: _ScenePlan, items: list[redraw.Drawn], held: _Held, local: float,
               duration: float) -> list[glide.Stamp]:
        """The planes of the image layers that only move and were redrawn, but where something is
        drawn over them: the frame's planes take them as converted once (`reelfarm.renderer.glide`)."""
        glides, out = self._glides, list[glide.Stamp]()
        if glides is None:
            return out
        for j, (kind, layer) in enumerate(plan.items):
            if kind != "layer" or items[j] is held.items[j]:
                continue
            state = self._state(layer, local, duration)
            if state is None or not glides.planned(layer, state):
                continue
            box = self._box(layer, state, self._frame_box())[0]
            inset = self.brand.number(layer.radius) * self.unit + 1.0
            found = glides.stamp(layer, box, inset)
            pieces = [] if found is None else [found]
            for above in items[j + 1:]:  # what is drawn over it is converted from its pixels
                if above.box is not None:
                    pieces = [piece for p in pieces for piece in p.without(above.box)]
            out += pieces
        return out

    def _drawn(self, layer: Layer, key: Any, local: float, duration: float) -> redraw.Drawn:
        """A moving layer as drawn at `local`: its bounds, whether a box may cut it, its outline."""
        # Recorded for its bounds only: a picture folds a layer's opacity into its paint when
        # played back, which rounds differently from the layer drawn directly.
        # A cuttable drawing (one image drawn) is played back from it in every box it meets.
        state = self._state(layer, local, duration)
        sprites = self._sprites
        if state is None or sprites is None or not sprites.used(layer, state):
            cut = redraw.cuttable(layer, state, self._imaged(layer, state))
            # a path drawn straight onto the frame: its box from its corners (a faded one is drawn
            # through an offscreen layer, wider: a box cutting it changes its pixels, so recorded)
            if state is not None and not cut and layer.type == "shape" and layer.shadow is None \
                    and layer.shape in ("rect", "rounded_rect", "ellipse") and state.opacity >= 0.999 \
                    and state.wipe >= 1.0:
                outset = layer.stroke.width * self.unit / 2 if layer.stroke is not None else 0.0
                return redraw.Drawn(key, damage.turned_box(self._box(layer, state, self._frame_box())[0], state.scale,
                                                           state.rotation, outset, self.width, self.height))
            picture, box = self._record(layer, local, duration)
            return redraw.Drawn(key, box if cut else self._whole(layer, state, box), cut,
                                picture=picture if cut else None)
        # A faint shape draws one image into a rect known without recording it; drawn again in a
        # box, it is drawn as its placement says (what its key holds), as in a whole frame.
        rect, _ = self._box(layer, state, self._frame_box())
        at = sprites.placed(layer, rect, state)
        found = sprites.span(layer, rect, at)
        box = None if found is None else damage.box_of(found[0], self.width, self.height)
        outline = redraw.flat_outline(layer, at, self.brand.number(layer.radius) * self.unit * state.scale)
        picture = None
        if box is not None:  # its one image draw, played back in each box it meets
            recorder = skia.PictureRecorder()
            sprites.draw(recorder.beginRecording(skia.Rect.MakeWH(self.width, self.height)), layer, rect, state)
            picture = recorder.finishRecordingAsPicture()
        return redraw.Drawn(key, box, True, outline, at.opacity, mapped=found is not None and found[1] is None,
                            picture=picture)

    def _whole(self, layer: Layer, state: Any, box: damage.Box | None) -> damage.Box | None:
        """The box an uncuttable drawing of `layer` at `state` needs whole (`box`: what it draws):
        with its offscreen layer where it is faded, since a box cutting that layer moves the
        layer's origin and changes its pixels."""
        faded = None if state is None or box is None else self._faded_bounds(layer, state, self._frame_box())
        around = None if faded is None else damage.turned_box(faded, state.scale, state.rotation, 0.0,
                                                              self.width, self.height)
        return box if around is None or box is None else damage.union(box, around)

    def _imaged(self, layer: Layer, state: Any) -> bool:
        """Whether top-level `layer` is drawn as an image at `state` (see `reelfarm.renderer.sprites`)."""
        return self._sprites is not None and (self._sprites.used(layer, state) or LayerImages.used(layer, state)
                                              or (self._glides is not None and self._glides.planned(layer, state)))

    def _draw_item(self, canvas: skia.Canvas, entry: tuple[str, Any], local: float, duration: float) -> None:
        kind, item = entry
        if kind == "picture":
            canvas.drawPicture(item[0])
        else:
            self._draw_layer(canvas, item, local, duration, self._frame_box())

    def _draw_scene(self, target: Any, index: int, local: float) -> None:
        scene = self.doc.scenes[index]
        plan = self._plan(index)
        canvas = target.surface.getCanvas()
        if plan.base is not None:
            target.restore(plan.base)
        else:
            self._paint_background(canvas, scene, local)
        for kind, item in plan.items:
            if kind == "picture":
                canvas.drawPicture(item[0])
            else:
                self._draw_layer(canvas, item, local, scene.duration, self._frame_box())

    def _paint_background(self, canvas: skia.Canvas, scene: Scene, local: float) -> None:
        if scene.id in self._bare:
            canvas.clear(0x00000000)
            return
        kb = 0.0
        bg = scene.background
        if bg.ken_burns is not None:
            kb = ease(bg.ken_burns.easing, local / scene.duration)
        if bg.type != "video":
            draw_background(canvas, bg, self.brand, self.images, self.width, self.height, kb)
            return
        canvas.clear(argb(self.brand.color(bg.color)) | 0xFF000000)
        zoom = max(bg.ken_burns.start.scale, bg.ken_burns.end.scale) if bg.ken_burns else 1.0
        view = lerp_view(bg.ken_burns.start, bg.ken_burns.end, kb) if bg.ken_burns else None
        self._draw_clip(canvas, bg.asset or "", f"scene:{scene.id}", bg.footage, local, self._frame_box(),
                        bg.fit, zoom, view)
        if bg.overlay:
            canvas.drawColor(argb(self.brand.color(bg.overlay)))

    def _draw_transition(self, index: int, local: float, p: float, keys: tuple | None = None) -> None:
        """The frame at progress `p` of scene `index`'s transition in; `keys` (the incoming
        scene's moving layers' state keys) lets the incoming scene be updated where it changed."""
        if self._scratch is None:
            self._scratch = self._new_target()
        if getattr(self._main, "partial", False):
            self._main.held = None  # it will hold a blend, not a scene
        if self._mixer is not None:
            self._mixer.forget()  # the incoming scene's planes no longer follow its pixels
        if keys is None:
            self._draw_scene(self._scratch, index, local)
        else:
            self._update_scene(self._scratch, index, local, keys)
        compose.draw_transition(self._main.surface.getCanvas(), self._last_frame(index - 1), self._scratch.image(),
                                self.doc.scenes[index].transition, p, self.width, self.height)

    def _take_incoming(self, index: int) -> None:
        """After a transition composed from planes, the scratch target holds scene `index` as drawn
        for its last frame and the mixer's incoming planes its conversion: they become the main
        target and planes, so the scene's first frame redraws and converts only what changed since
        instead of the whole frame."""
        mixer, scratch = self._mixer, self._scratch
        if mixer is None or scratch is None or not mixer.synced or getattr(self._main, "held", True) is not None:
            return
        held = getattr(scratch, "held", None)
        if held is None or held.index != index:
            return
        self._main, self._scratch = scratch, self._main
        self._planes, mixer.incoming = mixer.incoming, self._planes
        mixer.forget()

    def _mixes(self, index: int) -> bool:
        """Whether scene `index`'s transition in is composed from planes (nothing drawn over it)."""
        return (self._mixer is not None and getattr(self._main, "partial", False) and not self._over[index]
                and self.doc.scenes[index].transition.type in compose.PLANE_KINDS)

    def _mix_transition(self, index: int, local: float, p: float, keys: tuple, shown: Any) -> np.ndarray:
        """The yuv420p planes at progress `p` of scene `index`'s transition, from both scenes' planes
        (`shown`: the key of the frame the planes hold, see `_shows_last`)."""
        assert self._mixer is not None and self._planes is not None
        if self._scratch is None:
            self._scratch = self._new_target()
        self._main.held = None  # its pixels stay behind: the next scene frame is drawn whole
        # stamps only where the incoming planes are updated where changed (all converted, all drawn)
        stamps: list[glide.Stamp] | None = [] if self._mixer.synced else None
        boxes = self._update_scene(self._scratch, index, local, keys, stamps)
        incoming = self._mixer.update_incoming(self._scratch.pixels(), boxes, stamps or ())
        planes = self._planes
        previous = self._mixer.previous(index - 1, lambda: (planes.buffer, True) if self._shows_last(index - 1, shown)
                                        else (self._draw_last(index - 1).pixels(), False))  # the array holds its pixels
        self._mixer.compose(self._planes.buffer, previous, incoming, self.doc.scenes[index].transition, p)
        return self._planes.buffer

    def _draw_over(self, index: int, local: float) -> None:
        """Draw what goes over scene ``index``'s transition in, not blended with it: its captions."""
        for layer in self._over[index]:
            self._draw_layer(self._main.surface.getCanvas(), layer, local, self.doc.scenes[index].duration,
                             self._frame_box())

    def _last_frame(self, index: int) -> skia.Image:
        """The previous scene's final frame, which transitions blend from (drawn once), without captions."""
        if index not in self._last_frames:
            target = self._draw_last(index)  # held while snapshotted: its surface does not hold its pixels
            self._last_frames[index] = target.surface.makeImageSnapshot()
        return self._last_frames[index]

    def _last_time(self, index: int) -> float:
        return max(0.0, self.doc.scenes[index].duration - 1.0 / self.doc.fps)

    def _draw_last(self, index: int) -> Any:
        """A new target holding scene `index`'s final frame without its captions."""
        target = self._new_target()
        scene = self.doc.scenes[index]
        t = self._last_time(index)
        if len(self._scenes[index]) > len(scene.layers):  # its own layers alone, not its captions
            self._paint_background(target.surface.getCanvas(), scene, t)
            for layer in self._scenes[index][:len(scene.layers)]:
                self._draw_layer(target.surface.getCanvas(), layer, t, scene.duration, self._frame_box())
        else:
            self._draw_scene(target, index, t)
        return target

    def _shows_last(self, index: int, shown: Any) -> bool:
        """Whether the planes, holding the frame keyed `shown`, hold scene `index`'s final frame as
        `_draw_last` draws it: the scene frame drawn just before its transition out, in a chunk
        that runs across it. Frames of equal keys are the same frame (what skipping relies on), so
        its planes serve as the transition's first image, bit for bit, instead of the frame drawn
        and converted again (some 30 ms at 1080p)."""
        scene = self.doc.scenes[index]
        if shown is None or shown[0] != index or shown[1] is not None or len(self._scenes[index]) > len(scene.layers):
            return False
        t = self._last_time(index)
        return bool(shown == (index, None, self._layer_keys(index, t), self._bg_key(scene, t)))

    # -- layers -------------------------------------------------------------------------------

def _still_background(scene: Scene) -> bool:
    """Whether the scene's background looks the same all through it (drawn once into its base)."""
    return scene.background.ken_burns is None and scene.background.type != "video"


def to_rgba(frame: np.ndarray, pixel_format: str = PIXEL_FORMAT) -> np.ndarray:
    """An RGBA copy of a frame in `pixel_format`."""
    return frame[..., [2, 1, 0, 3]].copy() if pixel_format == "bgra" else frame.copy()


def _image(rgba: np.ndarray) -> skia.Image:
    return skia.Image.fromarray(np.ascontiguousarray(rgba), colorType=skia.kRGBA_8888_ColorType,
                                alphaType=skia.kOpaque_AlphaType)


def encode_png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an RGBA frame."""
    return bytes(_image(rgba).encodeToData(skia.kPNG, 100))


def encode_jpeg(rgba: np.ndarray, quality: int = 88) -> bytes:
    """JPEG bytes of an RGBA frame."""
    return bytes(_image(rgba).encodeToData(skia.kJPEG, quality))
