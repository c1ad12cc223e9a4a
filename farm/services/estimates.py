"""What rendering a video would cost, before asking (``POST /videos/{id}/renders/estimate`` and
``POST /videos/{id}/variants/estimate``).

1. A render identical to one already finished or in flight would be that render: it is named
   (``existing_render_id``) and costs 0.
2. The render's chunks are planned as the farm plans them, and each one's segment fingerprint
   taken as the farm's reuse takes it (``reelfarm.farm.services.segments``): a chunk whose segment
   the workspace keeps is copied, not drawn (``frames_reused``), and costs nothing.
3. The chunks left, and the stitch, cost what the model of the document says
   (``reelfarm.farm.services.costmodel``: frames, pixels, what moves, clips decoded), scaled by how
   the farm's own recent chunks compared with the model: the last ``SAMPLE_CHUNKS`` chunks of the
   resolution that stored their segment, on the node kind that drew most of them (their measured
   CPU seconds over the model's figure for them; their wall seconds over their CPU seconds for
   ``wall_sec``). A farm that has measured none uses the model as it is (``basis``: ``baseline``).

``wall_sec`` is the seconds the tasks would run, summed as a Render's ``cost`` sums them (node
seconds, not the time to wait: chunks run side by side).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, select

from reelfarm.farm.services import costmodel
from reelfarm.farm.services.renders import credits_for, dedup_hash, renderable_version
from reelfarm.farm.services.segments import asset_digests, chunk_frames, encoder_for
from reelfarm.renderer.chunks import scene_chunks
from reelfarm.renderer.fingerprint import segment_fingerprint
from reelfarm.renderer.model import Doc, build_doc, frame_count
from reelfarm.renderer.spec import RenderSpec, clamp_for_container
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import segments as segments_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos.objects import WorkspaceObjects
from reelfarm.shared.storage import Storage
from reelfarm.shared.tables import renders, task_costs, versions

SAMPLE_CHUNKS = 200
BASELINE_WALL_PER_CPU = 1.0  # a chunk task on a quiet CPU node runs about as long as it uses the CPU
_CACHED_RENDERS = 512  # the model's figures of recently measured renders' chunks, kept between estimates


Output = costmodel.Output  # what a render request asks for (a leaf's, so the render service may name it)


@dataclass(frozen=True)
class Calibration:
    """How the farm's recent chunks compared with the model, on the node kind that drew most of them."""

    node_kind: str
    scale: float  # their measured CPU seconds over the model's
    wall_per_cpu: float
    sampled_frames: int


BASELINE = Calibration("cpu", 1.0, BASELINE_WALL_PER_CPU, 0)


class EstimateService:
    def __init__(self, engine: Engine, storage: Storage) -> None:
        self.engine = engine
        self.storage = storage
        self._works: OrderedDict[str, list[costmodel.ChunkWork]] = OrderedDict()

    def estimate(self, workspace_id: str, video_id: str, output: Output) -> dict[str, Any]:
        """Raises NotFound (no such video in the workspace) and VideoStateError (nothing to render)."""
        return self.estimate_variants(workspace_id, video_id, [output.fmt], output)["renders"][0]

    def estimate_variants(self, workspace_id: str, video_id: str, formats: Sequence[str],
                          output: Output) -> dict[str, Any]:
        """One estimate for a render in each of ``formats`` (variants): the figures summed over them,
        credits charged once (as variants charge), and each format's in ``renders``."""
        with self.engine.connect() as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            version = renderable_version(conn, video)
            paid = renders_repo.version_is_paid(conn, version.id)
            doc = build_doc(version.doc)
            each = []
            for fmt in dict.fromkeys(formats):
                used_resolution, used_fps, _ = clamp_for_container(
                    output.container, output.resolution, int(output.fps or version.doc.get("fps") or 30))
                spec = RenderSpec(fmt, used_resolution, used_fps)
                each.append(self._one(conn, workspace_id, video.id, version, doc, spec, output))
        total = {key: sum(one[key] for one in each) for key in ("frames_to_render", "frames_reused")}
        new = any(one["existing_render_id"] is None for one in each)
        credits = credits_for(float(doc.duration)) if new and not paid else 0
        charged = next((one for one in each if one["existing_render_id"] is None), None)
        if charged is not None:  # variants charge a version once: the first new render carries it
            charged["credits"] = credits
        return {"cpu_sec": round(sum(one["cpu_sec"] for one in each), 2),
                "wall_sec": round(sum(one["wall_sec"] for one in each), 2), **total, "credits": credits,
                "renders": each}

    def _one(self, conn: Connection, workspace_id: str, video_id: str, version: videos_repo.Version, doc: Doc,
             spec: RenderSpec, output: Output) -> dict[str, Any]:
        digest = dedup_hash(version.doc_hash, spec, container=output.container, transparent=output.transparent)
        existing = renders_repo.find_active_render(conn, video_id, digest)
        calibration = self.calibration(conn, spec.resolution)
        answer = {"format": spec.format, "existing_render_id": None, "frames_to_render": 0, "frames_reused": 0,
                  "cpu_sec": 0.0, "wall_sec": 0.0, "credits": 0, "node_kind": calibration.node_kind,
                  "basis": "identical_render", "sampled_frames": calibration.sampled_frames}
        if existing is not None:
            return {**answer, "existing_render_id": existing.id}
        chunks = scene_chunks(doc, spec.fps)
        reused = self._reused(conn, workspace_id, doc, spec, chunks, output)
        drawn = [chunk for index, chunk in enumerate(chunks) if index not in reused]
        model = sum(costmodel.chunk_cpu(work) for work in costmodel.chunk_work(doc, spec, drawn))
        model += costmodel.stitch_cpu(frame_count(doc.duration, spec.fps))
        cpu = model * calibration.scale
        return {**answer, "frames_to_render": sum(b - a for a, b in drawn),
                "frames_reused": sum(chunks[i][1] - chunks[i][0] for i in reused),
                "cpu_sec": round(cpu, 2), "wall_sec": round(cpu * calibration.wall_per_cpu, 2),
                "basis": "measured" if calibration.sampled_frames else "baseline"}

    def _reused(self, conn: Connection, workspace_id: str, doc: Doc, spec: RenderSpec,
                chunks: list[tuple[int, int]], output: Output) -> set[int]:
        """The chunks whose segments the workspace keeps, by the fingerprints the farm's reuse takes."""
        digest = asset_digests(self.storage, WorkspaceObjects(self.engine, workspace_id), doc)
        encoder, settings = encoder_for(output.container, output.transparent)
        prints = [segment_fingerprint(doc, spec, chunk, encoder, digest, settings) for chunk in chunks]
        kept = segments_repo.kept(conn, workspace_id, [p for p in prints if p is not None])
        return {index for index, fingerprint in enumerate(prints) if fingerprint in kept}

    def calibration(self, conn: Connection, resolution: int) -> Calibration:
        """``calibrate`` over the farm's last ``SAMPLE_CHUNKS`` chunks of ``resolution`` that stored a segment."""
        recent = conn.execute(
            select(task_costs.c.render_id, task_costs.c.chunk, task_costs.c.node_kind, task_costs.c.cpu_sec,
                   task_costs.c.wall_sec, task_costs.c.frames)
            .select_from(task_costs.join(renders, renders.c.id == task_costs.c.render_id))
            .where(task_costs.c.task == "chunk", task_costs.c.frames > 0, renders.c.resolution == resolution)
            .order_by(task_costs.c.finished_at.desc()).limit(SAMPLE_CHUNKS)).all()
        works = self._render_works(conn, {row.render_id for row in recent})
        samples = [Sample(row.node_kind, row.cpu_sec, row.wall_sec, row.frames,
                          costmodel.chunk_cpu(works[row.render_id][row.chunk]))
                   for row in recent if row.chunk is not None and row.chunk < len(works.get(row.render_id, ()))]
        return calibrate(samples)

    def _render_works(self, conn: Connection, render_ids: set[str]) -> dict[str, list[costmodel.ChunkWork]]:
        """The model's work of each chunk of these renders (kept for the next estimates)."""
        missing = render_ids - set(self._works)
        if missing:
            rows = conn.execute(select(renders, versions.c.doc).select_from(
                renders.join(versions, versions.c.id == renders.c.version_id)).where(renders.c.id.in_(missing)))
            for row in rows:
                render = renders_repo.render_of(row)
                doc = build_doc(row.doc)
                spec = RenderSpec(render.format, render.resolution, render.fps)
                self._works[render.id] = costmodel.chunk_work(doc, spec, chunk_frames(render, doc))
            while len(self._works) > _CACHED_RENDERS:
                self._works.popitem(last=False)
        return {rid: self._works[rid] for rid in render_ids if rid in self._works}


@dataclass(frozen=True)
class Sample:
    """A recent chunk that stored its segment: its node's kind, what it measured and what the model says."""

    node_kind: str
    cpu_sec: float
    wall_sec: float
    frames: int
    model_cpu_sec: float


def calibrate(samples: list[Sample]) -> Calibration:
    """The node kind that drew the most frames among ``samples``, with its measured CPU seconds over
    the model's and its wall seconds over its CPU seconds; ``BASELINE`` without samples."""
    by_kind: dict[str, list[Sample]] = {}
    for sample in samples:
        if sample.frames > 0 and sample.model_cpu_sec > 0:
            by_kind.setdefault(sample.node_kind, []).append(sample)
    if not by_kind:
        return BASELINE
    kind, chosen = max(by_kind.items(), key=lambda item: (sum(s.frames for s in item[1]), item[0]))
    cpu = sum(max(0.0, s.cpu_sec) for s in chosen)
    wall = sum(max(0.0, s.wall_sec) for s in chosen)
    return Calibration(kind, round(cpu / sum(s.model_cpu_sec for s in chosen), 4),
                       round(wall / cpu, 4) if cpu > 0 else BASELINE_WALL_PER_CPU, sum(s.frames for s in chosen))
