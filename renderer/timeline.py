"""Time: which scene a frame falls in, and each layer's animated state at a scene-local time.

Everything here is a pure function of the document and `t`; nothing is carried between frames.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import pairwise
from typing import TypedDict

from reelfarm.renderer.easing import ease
from reelfarm.renderer.model import Doc, Keyframe, Layer, Motion

_DIRS = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0), "down": (0.0, 1.0)}


@dataclass(frozen=True)
class LayerState:
    """What a layer looks like at one instant; equal states draw equal pixels."""

    x: float
    y: float
    opacity: float
    scale: float
    rotation: float
    dx: float = 0.0          # slide offset, fraction of the parent box
    dy: float = 0.0
    reveal: float = 1.0      # typewriter / word-by-word fraction shown
    reveal_mode: str = ""    # "", "chars", "words"
    wipe: float = 1.0        # fraction revealed by a wipe
    wipe_dir: str = "right"
    kb: float = 0.0          # Ken Burns progress 0..1 over the layer's life


class _State(TypedDict):
    """``LayerState``'s fields but ``kb``, as a dict that the motions adjust in place."""

    x: float
    y: float
    opacity: float
    scale: float
    rotation: float
    dx: float
    dy: float
    reveal: float
    reveal_mode: str
    wipe: float
    wipe_dir: str


class Timeline:
    """Maps a frame time to (scene index, scene-local time)."""

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.starts = list(doc.scene_starts())

    def locate(self, t: float) -> tuple[int, float]:
        """Scene index and local time of `t`; `t` past the end lands in the last scene."""
        t = max(0.0, min(t, self.doc.duration))
        i = bisect.bisect_right(self.starts, t + 1e-9) - 1
        i = max(0, min(i, len(self.starts) - 1))
        return i, t - self.starts[i]

    def transition_progress(self, index: int, local_t: float) -> float | None:
        """Eased progress of scene `index`'s transition in, or None outside it."""
        if index == 0:
            return None
        tr = self.doc.scenes[index].transition
        if tr.type == "cut" or tr.duration <= 0 or local_t >= tr.duration:
            return None
        return ease(tr.easing, local_t / tr.duration)


def value_at(keys: tuple[Keyframe, ...], t: float, default: float) -> float:
    """The keyframed value at `t`: held before the first key and after the last."""
    if not keys:
        return default
    if t <= keys[0].t:
        return keys[0].v
    for a, b in pairwise(keys):
        if t < b.t:
            span = b.t - a.t
            p = ease(b.easing, (t - a.t) / span) if span > 0 else 1.0
            return a.v + (b.v - a.v) * p
    return keys[-1].v


def layer_state(layer: Layer, t: float, scene_duration: float) -> LayerState | None:
    """State of `layer` at scene-local time `t`, or None when it is not visible."""
    end = scene_duration if layer.end is None else min(layer.end, scene_duration)
    if layer.hidden or t < layer.start or t >= end:
        return None
    x = value_at(layer.track("x"), t, layer.x)
    y = value_at(layer.track("y"), t, layer.y)
    opacity = value_at(layer.track("opacity"), t, layer.opacity)
    scale = value_at(layer.track("scale"), t, layer.scale)
    rotation = value_at(layer.track("rotation"), t, layer.rotation)
    state: _State = {"x": x, "y": y, "opacity": opacity, "scale": scale, "rotation": rotation,
             "dx": 0.0, "dy": 0.0, "reveal": 1.0, "reveal_mode": "", "wipe": 1.0, "wipe_dir": "right"}
    if layer.enter:
        p = (t - layer.start - layer.enter.delay) / layer.enter.duration
        _apply_motion(state, layer.enter, p, entering=True)
    if layer.exit:
        p = (end - t) / layer.exit.duration
        _apply_motion(state, layer.exit, p, entering=False)
    if state["opacity"] <= 0.001:
        return None
    life = max(end - layer.start, 1e-6)
    kb = ease(layer.ken_burns.easing, (t - layer.start) / life) if layer.ken_burns else 0.0
    return LayerState(kb=kb, **state)


def _apply_motion(state: _State, motion: Motion, p: float, entering: bool) -> None:
    p = max(0.0, min(1.0, p))
    if p >= 1.0:
        return
    e = ease(motion.easing, p)
    preset = motion.preset
    if preset == "fade":
        state["opacity"] *= e
    elif preset == "slide":
        ux, uy = _DIRS[motion.direction]
        # Entering "up" means travelling upwards into place, so it starts below.
        sign = -1.0 if entering else 1.0
        state["dx"] += sign * ux * motion.distance * (1.0 - e)
        state["dy"] += sign * uy * motion.distance * (1.0 - e)
        state["opacity"] *= min(1.0, p * 2.5)
    elif preset == "pop":
        state["scale"] *= 0.6 + 0.4 * ease("out-back", p)
        state["opacity"] *= min(1.0, p * 3.0)
    elif preset == "wipe":
        state["wipe"] = e
        state["wipe_dir"] = motion.direction if entering else _opposite(motion.direction)
    elif preset in ("typewriter", "word-by-word"):
        state["reveal"] = p
        state["reveal_mode"] = "chars" if preset == "typewriter" else "words"


def _opposite(direction: str) -> str:
    return {"left": "right", "right": "left", "up": "down", "down": "up"}[direction]
