"""A render's job graph, built once: its jobs, ids, queues and dependencies."""
from __future__ import annotations

import ast
from pathlib import Path

from reelfarm.farm.services import graph
from reelfarm.farm.services.graph import (
    IMPORT_ASSETS_TASK,
    RENDER_CHUNK_TASK,
    STITCH_TASK,
    assets_job_id,
    chunk_job_id,
    chunk_of,
    render_graph,
    render_job_ids,
    stitch_job_id,
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


def test_a_chunk_job_id_is_read_back_by_the_graph_module_alone() -> None:
    render_id = "0b5c1e7a-1111-4222-8333-944455556666"
    assert chunk_of(chunk_job_id(render_id, 3)) == (render_id, 3)
    assert chunk_of(f"reelfarm:ns:{chunk_job_id(render_id, 12)}") == (render_id, 12), "a queue's own id"
    for other in (stitch_job_id(render_id), assets_job_id(render_id), "job-abc", "render--chunk-1",
                  f"render-{render_id}-chunk-", f"render-{render_id}-chunk-x"):
        assert chunk_of(other) is None, other
    farm = Path(graph.__file__).resolve().parents[1]
    spelled = []
    for path in farm.rglob("*.py"):
        tree = ast.parse(path.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in docs:
                text = ast.unparse(node)
                if "render-" in text and "-chunk-" in text and path.name != "graph.py":
                    spelled.append(f"{path.relative_to(farm)}: {text}")
    assert spelled == [], "a chunk's job id is spelled and parsed in farm/services/graph.py only"
