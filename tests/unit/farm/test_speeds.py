"""A cold farm's rate from its nodes' own measured speed (``reelfarm.farm.services.speeds``)."""
from __future__ import annotations

import pytest

from reelfarm.farm.services.speeds import SPEED_FIELD, chunk_rate, seeded_rate, start_rate

CHUNKS = ("render-nvenc", "render-gpu", "render")


def node(fps: object, queues: str = "render,jobs", alive: bool = True, set_aside: bool = False) -> dict[str, object]:
    return {"alive": alive, "set_aside": set_aside, "queues": queues, SPEED_FIELD: fps}


def test_a_chunk_draws_then_encodes_each_frame() -> None:
    assert chunk_rate(60.0, 60.0) == pytest.approx(30.0)
    assert chunk_rate(20.0, 180.0) == pytest.approx(18.0)
    assert chunk_rate(None, 50.0) is None
    assert chunk_rate(40.0, 0.0) is None


def test_the_seed_sums_the_live_nodes_that_take_chunks() -> None:
    nodes = [node("12.5"), node("7.5", queues="render-gpu,render"), node("100", queues="jobs"),
             node("50", alive=False), node("50", set_aside=True), node(""), node("fast")]
    assert seeded_rate(nodes, CHUNKS) == pytest.approx(20.0)
    assert seeded_rate([], CHUNKS) == 0.0


def test_throughput_once_there_is_some_else_the_seed() -> None:
    assert start_rate(4.0, 20.0) == 4.0
    assert start_rate(0.0, 20.0) == 20.0
    assert start_rate(0.0, 0.0) == 0.0
