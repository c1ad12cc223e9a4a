"""The soak benchmark (``benchmarks.soak``) for two minutes against a real ``reelfarm serve``: descriptors,
processes and scratch folders stay flat, every request is answered; and its verdict does fail a
series that keeps growing."""
from __future__ import annotations

import json

from benchmarks import soak

EVERY_10_S = [i / 6 for i in range(13)]  # two minutes of samples, in minutes


def judged(values: list[float], series: str = "fds") -> dict:
    return soak.verdict(EVERY_10_S, values, soak.TOLERANCE[series])


def test_a_descriptor_leaked_per_render_is_growing():
    leaking = [200 + 6 * t for t in EVERY_10_S]  # one descriptor a render, a render every 10 s
    assert not judged(leaking)["flat"]
    assert judged(leaking)["slope_per_min_second_half"] == 6.0


def test_scratch_folders_left_behind_are_growing_though_a_passing_render_holds_one():
    left = [0, 1, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8]
    assert not judged(left, "scratch_dirs")["flat"]
    busy = [0, 1, 0, 0, 2, 0, 1, 0, 0, 1, 0, 2, 0]
    assert judged(busy, "scratch_dirs")["flat"]


def test_a_series_that_rises_while_warming_up_then_holds_is_flat():
    warming = [180, 190, 195, 196, 196, 197, 196, 196, 205, 196, 196, 197, 196]
    assert judged(warming)["flat"]


def test_the_run_fails_on_a_growing_must_be_flat_series_and_on_memory_only_when_asked():
    samples = [{"t_s": m * 60, "fds": 200 + 6 * m, "processes": 7, "threads": 20, "scratch_dirs": 0,
                "tmp_entries": 0, "rss_mb": 800 + 30 * m, "pss_mb": 400 + 30 * m, "db_mb": m, "storage_mb": 2 * m,
                "rss_mb_by_role": {"render_pool": 500 + 30 * m}} for m in EVERY_10_S]
    verdicts = soak.verdicts(samples)
    assert soak.failures(verdicts, max_rss_slope=None) == ["fds"]
    assert soak.failures(verdicts, max_rss_slope=10.0) == ["fds", "rss_mb"]
    assert verdicts["db_mb"]["flat"] is None  # grows with every create: reported, not judged
    assert not verdicts["rss_mb:render_pool"]["flat"]


def test_two_minutes_of_traffic_and_renders_leave_descriptors_processes_and_scratch_flat(tmp_path, monkeypatch):
    # Two minutes on a loaded machine: descriptors were once seen rising by two now and then in the
    # second minute (about 3 a minute; the hour-long soak stays flat, so likely something filling up to
    # a bound, such as connection pools, though not shown), so they are judged at 4 a minute here; a
    # leak of one a render is 6 a minute.
    # Scratch folders are those of renders in flight: on a loaded machine a backlog of one or two
    # builds up within a minute (seen: 1 a minute, not flat at 0.5), so the series is judged at 2 a
    # minute here (a folder left per render is 6) and none may be left once the renders ended.
    monkeypatch.setitem(soak.TOLERANCE, "fds", 4.0)
    monkeypatch.setitem(soak.TOLERANCE, "scratch_dirs", 2.0)
    out = tmp_path / "soak.json"
    code = soak.main(["--minutes", "2", "--interval", "10", "--clients", "2", "--json", str(out)])
    result = json.loads(out.read_text())
    assert (code, result["failing"]) == (0, [])
    assert {name: result["verdicts"][name]["flat"] for name in soak.MUST_BE_FLAT} == dict.fromkeys(soak.MUST_BE_FLAT, True)
    assert result["after_drain"]["scratch_dirs"] == 0
    assert len(result["samples"]) >= 12  # every 10 s for 2 minutes
    errors = {name: (e["count_5xx"], e["transport_error_count"]) for name, e in result["requests"].items()
              if e["count_5xx"] or e["transport_error_count"]}
    assert errors == {}
    assert result["renders"]["statuses"].get("succeeded", 0) >= 3, result["renders"]
    assert set(result["renders"]["statuses"]) == {"succeeded"}, result["renders"]
    assert result["stills_jobs"].get("succeeded", 0) >= 1 and set(result["stills_jobs"]) == {"succeeded"}
