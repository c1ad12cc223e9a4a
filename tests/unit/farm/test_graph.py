"""A render's job graph, built once: its jobs, ids, queues and dependencies."""
from __future__ import annotations

from reelfarm.farm.services.graph import (
    IMPORT_ASSETS_TASK, RENDER_CHUNK_TASK, STITCH_TASK, render_graph, render_job_ids,
)


def test_chunks_wait_for_the_import_and_the_stitch_for_every_chunk() -> None:
    graph = render_graph("r1", 3, needs_import=True, chunk_queue="render-gpu")
    jobs = list(graph)
    assert [j.job_id for j in jobs] == ["render-r1-assets", "render-r1-chunk-0", "render-r1-chunk-1",
                                        "render-r1-chunk-2", "render-r1-stitch"]
    assert [j.task for j in jobs] == [IMPORT_ASSETS_TASK, *[RENDER_CHUNK_TASK] * 3, STITCH_TASK]
    assert [j.queue for j in jobs] == ["jobs", "render-gpu", "render-gpu", "render-gpu", "render"]
    assert all(c.depends_on == ("render-r1-assets",) for c in graph.chunks)
    assert graph.stitch.depends_on == ("render-r1-chunk-0", "render-r1-chunk-1", "render-r1-chunk-2")
    assert graph.chunk(2).args == ("r1", 2) and graph.stitch.args == ("r1",)
    assert [j.job_id for j in jobs] == render_job_ids("r1", 3)


def test_without_remote_assets_chunks_start_at_once() -> None:
    graph = render_graph("r1", 2, needs_import=False)
    assert graph.assets is None and all(c.depends_on == () for c in graph.chunks)
    assert [j.queue for j in graph] == ["render", "render", "render"]


def test_rebuilt_after_a_loss_the_stitch_waits_only_for_the_chunks_not_stored() -> None:
    first = render_graph("r1", 4, needs_import=False)
    again = render_graph("r1", 4, needs_import=False, pending=[3, 1])
    assert again.chunks == first.chunks, "the same jobs under the same ids"
    assert again.stitch.depends_on == ("render-r1-chunk-1", "render-r1-chunk-3")
