"""What a render cost and what one would cost, as pure functions over plain values
(``reelfarm.farm.services.costs.sum_costs``, ``reelfarm.farm.services.estimates.calibrate``), by
the properties they keep over generated attempts and samples."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reelfarm.farm.services.costs import Attempt, sum_costs
from reelfarm.farm.services.estimates import BASELINE, Sample, calibrate

seconds = st.floats(min_value=0, max_value=1e4, allow_nan=False)
attempts = st.lists(st.builds(
    Attempt, render_id=st.sampled_from(("a", "b")), chunk=st.one_of(st.none(), st.integers(0, 5)), cpu_sec=seconds,
    wall_sec=seconds, gpu_sec=st.one_of(st.none(), seconds), frames=st.integers(0, 300),
    storage_bytes=st.integers(0, 10**9), peak_memory_bytes=st.integers(0, 10**10)), max_size=40)


@given(attempts, st.integers(0, 1000))
def test_a_render_costs_the_sum_of_its_attempts_and_each_chunk_once(rows, reused):
    cost = sum_costs(rows, {"a": reused})["a"]
    own = [r for r in rows if r.render_id == "a"]
    assert cost["cpu_sec"] == round(sum(r.cpu_sec for r in own), 3)
    assert cost["storage_bytes"] == sum(r.storage_bytes for r in own)
    assert cost["peak_memory_bytes"] == max((r.peak_memory_bytes for r in own), default=0)
    assert (cost["gpu_sec"] is None) == all(r.gpu_sec is None for r in own)
    chunks = {r.chunk for r in own if r.chunk is not None}
    assert cost["frames_rendered"] == sum(max(r.frames for r in own if r.chunk == c) for c in chunks)
    assert cost["frames_rendered"] <= sum(r.frames for r in own) and cost["frames_reused"] == reused


def test_a_render_with_no_attempt_costs_nothing():
    assert sum_costs([], {"a": 90}) == {"a": {"cpu_sec": 0.0, "gpu_sec": None, "wall_sec": 0.0, "frames_rendered": 0,
                                              "frames_reused": 90, "storage_bytes": 0, "peak_memory_bytes": 0}}


samples = st.lists(st.builds(Sample, node_kind=st.sampled_from(("cpu", "gl")), cpu_sec=seconds, wall_sec=seconds,
                             frames=st.integers(0, 300), model_cpu_sec=seconds), max_size=30)


@given(samples)
def test_the_calibration_is_the_busiest_kinds_measured_over_modelled_or_the_baseline(found):
    calibration = calibrate(found)
    drawn = [s for s in found if s.frames > 0 and s.model_cpu_sec > 0]
    if not drawn:
        assert calibration == BASELINE and (BASELINE.scale, BASELINE.sampled_frames) == (1.0, 0)
        return
    mine = [s for s in drawn if s.node_kind == calibration.node_kind]
    assert calibration.sampled_frames == sum(s.frames for s in mine)
    assert all(calibration.sampled_frames >= sum(s.frames for s in drawn if s.node_kind == other)
               for other in ("cpu", "gl"))
    assert calibration.scale == round(sum(s.cpu_sec for s in mine) / sum(s.model_cpu_sec for s in mine), 4)
    assert calibration.scale >= 0 and calibration.wall_per_cpu >= 0
