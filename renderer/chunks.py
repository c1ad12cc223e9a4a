"""How a video is cut into chunks: contiguous frame ranges that render independently (on the
cores of one machine, or on the nodes of a farm) and are joined by stream copy. Pure arithmetic:
the farm plans a render with it without loading Skia or PyAV."""
from __future__ import annotations

import math
from itertools import pairwise

from reelfarm.renderer.model import Doc, frame_count

# The first chunk of a plan is cut after this many seconds when it would be longer than twice
# that: a render's first frames are stored (and its stream plays) after a second's drawing, not
# after a whole first chunk's.
LEAD_SEC = 1.0


def plan_chunks(total_frames: int, chunks: int) -> list[tuple[int, int]]:
    """Split frames [0, total) into `chunks` contiguous, nearly equal [start, end) ranges."""
    chunks = max(1, min(chunks, total_frames))
    bounds = [round(i * total_frames / chunks) for i in range(chunks + 1)]
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def scene_chunks(doc: Doc, fps: int, seconds_per_chunk: float = 5.0,
                 cut_transitions: bool = True, lead_sec: float = LEAD_SEC) -> list[tuple[int, int]]:
    """A farm's chunks of ``doc`` at ``fps``: cut at every scene's first frame and at the first frame
    after its transition in (a crossfade is a chunk of its own, the only one that draws two
    scenes), the rest of a scene longer than ``seconds_per_chunk`` split into nearly equal pieces of
    about that length. A function of the document's timing alone, so an edit inside one scene
    leaves the other scenes' chunks, and their segments, as they were; an edit to a scene redraws
    its own chunks and the next scene's transition, not the whole next chunk.

    The first chunk is cut once more after ``lead_sec`` (``LEAD_SEC``) when it would be longer
    than twice that, so the beginning of the video is stored first and soon (chunks are dispatched
    earliest first); the cut depends on the first scene's timing alone, so an edit to a later
    scene still leaves it, and its segment, as it was.

    ``cut_transitions=False`` is the earlier plan (cuts at scene starts only, no leading cut),
    which renders requested before the plan was stored with the render were drawn with."""
    total = frame_count(doc.duration, fps)
    cuts = {0, total}
    for index, start in enumerate(doc.scene_starts()):
        # Timeline.locate: frame n shows the scene starting at or before n/fps, and the scene's
        # transition while n/fps is less than its duration into the scene
        first = math.ceil(start * fps - 1e-6)
        if 0 < first < total:
            cuts.add(first)
        transition = doc.scenes[index].transition
        if cut_transitions and index and transition.type != "cut" and transition.duration > 0:
            settled = math.ceil((start + transition.duration) * fps - 1e-6)
            if first < settled < total:
                cuts.add(settled)
    bounds = sorted(cuts)
    chunks: list[tuple[int, int]] = []
    for a, b in pairwise(bounds):
        pieces = max(1, math.ceil((b - a) / (fps * seconds_per_chunk)))
        edges = [a + round(i * (b - a) / pieces) for i in range(pieces + 1)]
        chunks += [(x, y) for x, y in pairwise(edges) if y > x]
    lead = round(lead_sec * fps) if cut_transitions else 0
    if chunks and lead > 0 and chunks[0][1] - chunks[0][0] > 2 * lead:
        chunks[:1] = [(chunks[0][0], lead), (lead, chunks[0][1])]
    return chunks


def chunks_from_starts(starts: list[int], total_frames: int) -> list[tuple[int, int]]:
    """Chunks as frame ranges from the first frame of each (a stored plan) and the frame count."""
    return [(a, b) for a, b in zip(starts, [*starts[1:], total_frames])]
