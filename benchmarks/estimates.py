"""A render's estimate against what it measured: every built-in story, rendered on the embedded farm.

    python -m benchmarks.estimates                          # 720p and 1080p, every story
    python -m benchmarks.estimates --resolution 2160        # 4K (long on 2 cores)
    python -m benchmarks.estimates --stories quote,hiring   # a quick look
    python -m benchmarks.estimates --fit benchmarks/results/estimates-*.json   # the model's coefficients

Each built-in story is built from its samples (``{}``) in a format of its own (the formats taken
in turn, so every size of frame is in) and rendered at each resolution by the service's own code
(``RenderService``, the embedded queue, its chunk and stitch tasks in the render pool), in a new
workspace of a farm on a temporary folder, one render at a time. Before each render the estimate
is asked twice: as a new farm would answer it (``baseline``: the built-in model,
``reelfarm.farm.services.costmodel``) and as this farm answers it (``farm``: the model scaled by
the chunks it measured so far, on this run's earlier renders). The render's measured CPU seconds
are its ``cost`` (``task_costs``: every task's CPU, measured on its node); the error is estimate
over measured, less 1. The target: every one within ±25%.

``--fit`` reads result files and prints the model's coefficients fitted to their chunks and
stitches (non-negative least squares on relative error), for ``costmodel.BASELINE``.

Results go to benchmarks/results/estimates-<resolutions>-<time>.json, with the command that made them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select

from reelfarm.api.services import Services
from reelfarm.farm.services import costmodel
from reelfarm.farm.services.estimates import BASELINE, Calibration, EstimateService, Output
from reelfarm.renderer import spec
from reelfarm.renderer.chunks import chunks_from_starts
from reelfarm.renderer.model import build_doc
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.tables import task_costs
from reelfarm.studio.stories import NEUTRAL_BRAND, list_stories

# the spec's formats in the order the stories take them in turn (9:16 first, as the recorded runs did)
FORMATS = (spec.FORMATS[1], spec.FORMATS[0], *spec.FORMATS[2:])
TARGET = 0.25
RESULTS = Path(__file__).resolve().parent / "results"


class BaselineEstimates(EstimateService):
    """The estimate a farm that has measured nothing answers."""

    def calibration(self, conn: Connection, resolution: int) -> Calibration:
        return BASELINE


def settled_tasks(services: Services, render_id: str, timeout: float = 60.0) -> list[Any]:
    """The render's task rows once its stitch has written its final row."""
    deadline = time.monotonic() + timeout
    while True:
        with services.engine.connect() as conn:
            rows = conn.execute(select(task_costs).where(task_costs.c.render_id == render_id)).all()
        if any(r.task == "stitch" and r.outcome == "finished" for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def render_once(services: Services, baseline: EstimateService, ws: str, story_id: str, fmt: str,
                resolution: int) -> dict[str, Any]:
    """One story's video rendered at ``resolution``: both estimates, the measured cost, its chunks."""
    doc = list_stories_by_id()[story_id].build({}, NEUTRAL_BRAND, fmt)
    with transaction(services.engine) as conn:
        video, _ = videos_repo.create_video(
            conn, services.clock, workspace_id=ws, title=story_id, status="ready", default_format=fmt,
            first_version=videos_repo.NewVersion(source="doc", doc=doc, duration_sec=float(doc["duration"])))
    output = Output(fmt, resolution)
    base = baseline.estimate(ws, video.id, output)
    farm = services.estimates.estimate(ws, video.id, output)
    started = time.perf_counter()
    render = services.renders.request(ws, video.id, fmt, resolution, None)
    while render["status"] not in ("succeeded", "failed", "canceled"):
        time.sleep(0.25)
        render = services.renders.get(ws, render["id"])
    if render["status"] != "succeeded":
        raise SystemExit(f"{story_id} at {resolution}p: render {render['status']}: {render['error']}")
    wall = time.perf_counter() - started
    rows = settled_tasks(services, render["id"])
    measured = round(sum(r.cpu_sec for r in rows), 3)
    with services.engine.connect() as conn:
        row = renders_repo.find_render(conn, render["id"])
    assert row is not None and row.chunk_starts is not None
    parsed = build_doc(doc)
    works = costmodel.chunk_work(parsed, RenderSpec(fmt, resolution, row.fps),
                                 chunks_from_starts(row.chunk_starts, row.frames or 0))
    chunks = [{"chunk": r.chunk, "cpu_sec": r.cpu_sec, "wall_sec": r.wall_sec, **vars(works[r.chunk])}
              for r in rows if r.task == "chunk" and r.outcome == "finished" and r.chunk is not None]
    other = {"stitch_cpu_sec": round(sum(r.cpu_sec for r in rows if r.task == "stitch"), 3),
             "import_cpu_sec": round(sum(r.cpu_sec for r in rows if r.task == "import"), 3)}
    return {"story": story_id, "format": fmt, "resolution": resolution, "frames": row.frames,
            "measured_cpu_sec": measured, "render_wall_sec": round(wall, 2),
            "baseline_cpu_sec": base["cpu_sec"], "baseline_error": round(base["cpu_sec"] / measured - 1, 3),
            "farm_cpu_sec": farm["cpu_sec"], "farm_basis": farm["basis"],
            "farm_error": round(farm["cpu_sec"] / measured - 1, 3), "farm_wall_sec": farm["wall_sec"],
            "measured_task_wall_sec": round(sum(r.wall_sec for r in rows), 3), **other, "chunks": chunks}


def list_stories_by_id() -> dict[str, Any]:
    return {story.id: story for story in list_stories()}


def settings(data: str) -> Settings:
    """A farm on ``data``, its task processes at ``REELFARM_TASK_PRIORITY`` when the environment sets it."""
    env = {"REELFARM_DATA_DIR": data}
    if "REELFARM_TASK_PRIORITY" in os.environ:
        env["REELFARM_TASK_PRIORITY"] = os.environ["REELFARM_TASK_PRIORITY"]
    return Settings.from_env(env)


def run(resolutions: list[int], story_ids: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reelfarm-estimates-") as data:
        services = Services.from_settings(settings(data))
        baseline = BaselineEstimates(services.engine, services.storage)
        services.farm.start()
        try:
            with transaction(services.engine) as conn:
                ws = ws_repo.create_workspace(conn, services.clock, name="bench", plan="pro", credits=10_000,
                                              brand_tokens=NEUTRAL_BRAND).id
            renders = []
            for resolution in resolutions:
                for index, story_id in enumerate(story_ids):
                    one = render_once(services, baseline, ws, story_id, FORMATS[index % len(FORMATS)], resolution)
                    renders.append(one)
                    print(f"{one['story']:18} {one['format']:5} {resolution:5}p  measured {one['measured_cpu_sec']:7.2f} "
                          f"CPU s  baseline {one['baseline_cpu_sec']:7.2f} ({one['baseline_error']:+.1%})  "
                          f"farm {one['farm_cpu_sec']:7.2f} ({one['farm_error']:+.1%}, {one['farm_basis']})",
                          flush=True)
        finally:
            services.farm.stop(30)
    return {"renders": renders}


def summary(renders: list[dict[str, Any]]) -> dict[str, Any]:
    """Each estimate's errors: ``baseline_error`` (the built-in model, every render), ``farm_error``
    (the farm's calibration, the renders after it had measured one at the resolution) and
    ``answered_error`` (what the service answered: every render, by whichever basis it had then)."""
    out: dict[str, Any] = {}
    for name, key, keep in (("baseline_error", "baseline_error", lambda r: True),
                            ("farm_error", "farm_error", lambda r: r["farm_basis"] != "baseline"),
                            ("answered_error", "farm_error", lambda r: True)):
        errors = [r[key] for r in renders if keep(r)]
        out[name] = {"worst": max(errors, key=abs) if errors else None,
                     "within_target": sum(abs(e) <= TARGET for e in errors), "of": len(errors)}
    return out


# ----------------------------------------------------------------------------- fit


def fit(paths: list[Path]) -> costmodel.Coefficients:
    """The coefficients that best fit these results: the stitch's (its import's included) to the
    stitches, then the chunks' to each render's CPU seconds less its stitch, both on relative error
    (non-negative least squares), so that every render, short or long, counts alike."""
    import numpy as np
    from scipy.optimize import nnls

    renders = [r for path in paths for r in json.loads(path.read_text())["renders"]]
    s = np.array([[1.0, r["frames"]] for r in renders])
    sy = np.array([r["stitch_cpu_sec"] + r["import_cpu_sec"] for r in renders])
    stitch_k, _ = nnls(s / sy[:, None], np.ones_like(sy))
    a = np.array([[len(r["chunks"]), sum(c["frames"] for c in r["chunks"]),
                   sum(c["frames"] * c["mpx"] for c in r["chunks"]), sum(c["active"] * c["mpx"] for c in r["chunks"])]
                  for r in renders])
    y = np.array([r["measured_cpu_sec"] for r in renders]) - s @ stitch_k
    chunk_k, _ = nnls(a / y[:, None], np.ones_like(y))
    # clips: the stories draw none; clip_mpx stays the figure measured with benchmarks.footage
    return costmodel.Coefficients(*(round(float(v), 5) for v in chunk_k), clip_mpx=costmodel.BASELINE.clip_mpx,
                                  stitch=round(float(stitch_k[0]), 4), stitch_frame=round(float(stitch_k[1]), 6))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", default="720,1080", help="comma-separated short sides (default 720,1080)")
    parser.add_argument("--stories", help="comma-separated story ids (default: every built-in story)")
    parser.add_argument("--fit", nargs="+", type=Path, help="print the coefficients fitted to these results")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.fit:
        print(fit(args.fit))
        return
    resolutions = [int(r) for r in args.resolution.split(",")]
    story_ids = args.stories.split(",") if args.stories else [s.id for s in list_stories()]
    load = os.getloadavg()[0]
    figures = run(resolutions, story_ids)
    figures.update({
        "benchmark": "estimates", "command": "python -m benchmarks." + " ".join(["estimates", *sys.argv[1:]]),
        "cores": os.cpu_count(), "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
        "task_priority": os.environ.get("REELFARM_TASK_PRIORITY", "idle (the default)"),
        "model": vars(costmodel.BASELINE), "target": TARGET, "summary": summary(figures["renders"])})
    print(json.dumps(figures["summary"]))
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    path = args.out / f"estimates-{'-'.join(map(str, resolutions))}-{stamp}.json"
    path.write_text(json.dumps(figures, indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
