"""The farm simulator (``benchmarks/farmsim.py``) counts what happened: scenarios small enough to
work out by hand give the figures worked out, and a run full of deaths and bad nodes renders
every frame asked for exactly once."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from benchmarks.farmsim import CPU, GPU, Config, FarmSim, cut, jain, simulate
from reelfarm.farm.services.fairness import Share

QUIET = Config(nodes=0, workspaces=0, seconds=30.0, mtbf=math.inf, bad_fraction=0.0, probe=False, window=1000.0)


def chunk_sec(frames: int, kind: object = CPU) -> float:
    return QUIET.latency + CPU.start_sec + frames * CPU.frame_sec if kind is CPU else \
        QUIET.latency + GPU.start_sec + frames * GPU.frame_sec


def test_one_node_one_render_gives_the_times_worked_out() -> None:
    """One CPU node; a 6 s render (a 30-frame lead chunk, then 150 frames) at 0: the second chunk
    waits while the first runs, the node idle only for the dispatch latency."""
    sim = FarmSim(QUIET, kinds=[CPU], shares={"a": Share(1.0, 4)}, script=[(0.0, "a", cut(6.0))])
    report = sim.run()
    (render,) = sim.renders.values()
    assert render.started == 0.0
    assert render.finished == pytest.approx(chunk_sec(30) + chunk_sec(150))
    waiting = chunk_sec(30)  # the second chunk waits until the first is done
    assert report["waiting_share_of_time"] == pytest.approx(waiting / QUIET.seconds, abs=1e-4)
    assert report["utilisation_while_waiting"] == pytest.approx((waiting - QUIET.latency) / waiting, abs=1e-4)
    assert report["utilisation_while_uncapped_work_waits"] == report["utilisation_while_waiting"]
    assert report["capped_share_of_waiting_time"] == 0.0
    assert report["counts"]["done_chunks"] == 2 and report["counts"]["done_frames"] == 180


def test_a_cap_leaves_a_node_idle_and_it_is_counted_apart() -> None:
    """Two nodes, one workspace capped at one chunk, three chunks: one node works, one waits."""
    sim = FarmSim(QUIET, kinds=[CPU, CPU], shares={"a": Share(1.0, 1)}, script=[(0.0, "a", [150, 150, 150])])
    report = sim.run()
    waiting = 2 * chunk_sec(150)  # until the third chunk is dispatched
    busy = waiting - 2 * QUIET.latency
    assert report["utilisation_while_waiting"] == pytest.approx(busy / (2 * waiting), abs=1e-4)
    assert report["capped_share_of_waiting_time"] == pytest.approx(1.0)
    assert report["utilisation_while_uncapped_work_waits"] is None
    assert sim.renders["r0"].finished == pytest.approx(3 * chunk_sec(150))


def test_the_gpu_node_is_used_first_and_the_probe_alone_is_its_time() -> None:
    sim = FarmSim(QUIET, kinds=[CPU, GPU], shares={"probe": Share(1.0, 4)}, script=[(0.0, "probe", [150])])
    report = sim.run()
    assert report["probe"]["turnaround"] == pytest.approx(chunk_sec(150, GPU), abs=1e-3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_frame_is_rendered_once_through_deaths_and_bad_nodes(seed: int) -> None:
    config = Config(nodes=12, workspaces=6, seconds=400.0, mtbf=90.0, detect=16.0, restart=30.0, bad_fraction=0.25,
                    backlog=60, load=1.1, window=40.0, drain=True, seed=seed)
    sim = FarmSim(config)
    report = sim.run()
    counts = report["counts"]
    assert counts["deaths"] > 0 and counts["requeued_after_death"] > 0 and counts["failures"] > 0
    assert counts["set_aside"] > 0
    assert counts["done_chunks"] == counts["chunks"] == len(sim.done)
    assert counts["done_frames"] == counts["frames"]
    assert all(r.finished is not None and r.done == r.chunks for r in sim.renders.values())
    assert sim.queue.chunks_waiting() == 0 and sim.queue.running() == 0
    assert counts["dispatched"] == counts["chunks"] + counts["failures"] + counts["requeued_after_death"]
    for key in ("utilisation_while_waiting", "utilisation_while_uncapped_work_waits", "waiting_share_of_time",
                "capped_share_of_waiting_time"):
        assert report[key] is None or 0.0 <= report[key] <= 1.0
    fair = report["jain"]
    assert fair["groups"] == 0 or 0.0 < fair["min"] <= fair["mean"] <= 1.0


def test_the_report_of_a_small_run_has_the_probes_slowdown() -> None:
    row = simulate(Config(nodes=6, workspaces=4, seconds=200.0, backlog=40, seed=5))
    probe = row["probe"]
    assert probe["alone"] == pytest.approx(chunk_sec(150, GPU), abs=1e-3)  # its longer chunk, on a GPU node
    assert probe["slowdown"] == pytest.approx(probe["turnaround"] / probe["alone"], abs=1e-3)


def test_jains_index_and_the_farms_cut() -> None:
    assert jain([3.0, 3.0, 3.0]) == 1.0 and jain([1.0, 0.0]) == 0.5 and jain([0.0, 0.0]) == 1.0
    assert cut(6.0) == [30, 150] and cut(1.0) == [30] and sum(cut(12.0)) == 360


def test_simulated_time_never_goes_back_with_many_bursty_workspaces() -> None:
    """Thousands of workspaces whose bursts end between two of their requests: every event is
    scheduled at or after the clock (the run raises otherwise), and the counts stay consistent."""
    sim = FarmSim(Config(nodes=10, workspaces=3000, seconds=900.0, on=20.0, off=60.0, backlog=200, seed=7))
    report = sim.run()
    assert report["counts"]["renders"] > 100
    assert sim.now >= 900.0 and 0.0 <= report["utilisation_while_waiting"] <= 1.0


def test_jain_counts_workspaces_of_one_share_waiting_throughout_a_window() -> None:
    """Two workspaces of one share, each with a long backlog on four nodes: every window gives them
    the same frames to a chunk; a third of another share is a group of its own, left out."""
    shares = {"a": Share(1.0, 99), "b": Share(1.0, 99), "c": Share(3.0, 99)}
    script = [(0.0, w, [150] * 200) for w in ("a", "b", "c")]
    report = FarmSim(replace_window(30.0), kinds=[CPU] * 4, shares=shares, script=script).run()
    fair = report["jain"]
    assert fair["groups"] == 4 and fair["workspaces_per_group"] == 2.0  # windows ending at 30, 60, 90, 120 s
    assert fair["min"] >= jain([8 * 150, 9 * 150])  # a chunk apart at most, of the 8 or more each is given
    assert fair["frames_per_workspace"] == pytest.approx(4 * 30 / chunk_sec(150) / 5 * 150, rel=0.15)


def replace_window(window: float) -> Config:
    return replace(QUIET, window=window, seconds=120.0)
