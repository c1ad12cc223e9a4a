"""Pools of nodes as pure functions (``reelfarm.farm.services.pools``)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reelfarm.farm.services.pools import (
    POOL_PATTERN,
    PoolError,
    allot,
    node_queues_with_pools,
    node_tags,
    parse_pool,
    parse_pools,
    pool_problems,
    render_pool,
    serves,
    unserved,
)


def test_a_pool_is_its_tags_sorted_and_a_node_serves_it_when_it_carries_them_all() -> None:
    assert parse_pool(" Region=EU, gpu ,gpu") == "gpu,region=eu"
    assert serves({"gpu", "region=eu", "customer=acme"}, "gpu,region=eu")
    assert not serves({"gpu"}, "gpu,region=eu")
    assert serves(set(), "")
    with pytest.raises(PoolError) as caught:
        parse_pool("region eu,ok,=x")
    assert len(caught.value.problems) == 2


def test_a_node_gets_gpu_and_nvenc_from_its_probe_and_works_its_tag_sets_queues_first() -> None:
    assert node_tags({"region=eu"}, "gl", "nvenc") == {"region=eu", "gpu", "nvenc"}
    assert node_tags(set(), "cpu", "x264") == frozenset()
    chunks = ("render-nvenc", "render-gpu", "render")
    assert node_queues_with_pools(["render-gpu", "render", "jobs"], {"region=eu", "gpu"}, chunks) == [
        "render-gpu@gpu,region=eu", "render@gpu,region=eu", "render-gpu", "render", "jobs"]
    assert node_queues_with_pools(["render", "jobs"], set(), chunks) == ["render", "jobs"]


def test_a_render_asks_for_a_pool_its_workspace_may_use() -> None:
    assert pool_problems(None, ["region=eu"]) == []
    assert pool_problems("region=eu", ["region=eu", "region=us"]) == []
    assert pool_problems("gpu", None) == []
    [forbidden] = pool_problems("region=ap", ["region=eu"])
    assert forbidden["code"] == "forbidden_pool" and "'region=eu'" in forbidden["message"]
    unknown = pool_problems("region eu,a b", None)
    assert [p["code"] for p in unknown] == ["unknown_pool", "unknown_pool"] and all(p["field"] == "/pool" for p in unknown)
    assert render_pool(None, ["region=eu", "region=us"]) == "region=eu"
    assert render_pool("region=us", ["region=eu", "region=us"]) == "region=us"
    assert render_pool(None, None) == ""


def test_a_pool_is_unserved_while_no_live_node_in_work_carries_its_tags() -> None:
    nodes = [{"alive": True, "tags": "gpu,region=eu"}, {"alive": False, "tags": "region=us"},
             {"alive": True, "set_aside": True, "tags": "region=ap"}, {"alive": True, "disabled": True, "tags": "x"}]
    assert not unserved("region=eu", nodes) and not unserved("", nodes)
    assert unserved("region=us", nodes) and unserved("region=ap", nodes) and unserved("x", nodes)


@given(st.integers(0, 50), st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 20), max_size=6))
def test_allot_is_work_conserving_and_no_pool_waits_more_than_one_place_behind_another(
        free: int, waiting: dict[str, int]) -> None:
    given_ = allot(free, waiting)
    assert sum(given_.values()) == min(free, sum(waiting.values()))  # work-conserving
    assert all(0 < n <= waiting[p] for p, n in given_.items())
    for pool, n in waiting.items():  # a pool given less than it waits for has at most one place fewer than any other
        if given_.get(pool, 0) < n:
            assert all(given_.get(pool, 0) >= m - 1 for m in given_.values())


def test_an_operators_pools_are_written_forms_each_once_and_every_problem_is_named() -> None:
    assert parse_pools(["region=EU", " gpu , region=eu", "region=eu,gpu", "x"]) == ["region=eu", "gpu,region=eu", "x"]
    with pytest.raises(PoolError) as refused:
        parse_pools(["gpu", "Bad!", " , ", *(f"t{i}" for i in range(8))])
    assert [p.split(":")[0] for p in refused.value.problems] == ["'Bad!'", "' , ' names no tag", "9 pools"]


@given(st.text(alphabet="abz09_.-=,AZ !", max_size=60))
def test_whatever_the_apis_pattern_takes_a_pool_parses_to_and_no_more(text: str) -> None:
    """The document's pattern (``POOL_PATTERN``) is what the server takes: every text it matches
    parses, and a canonical pool that parses matches it."""
    if re.fullmatch(POOL_PATTERN, text):
        assert parse_pool(text) and pool_problems(text, None) == []
    try:
        pool = parse_pool(text)
    except PoolError:
        return
    if pool:
        assert re.fullmatch(POOL_PATTERN, pool)


def test_a_node_records_queues_are_read_back_whole_tag_sets_and_all() -> None:
    from reelfarm.farm.services.pools import class_queue, split_queues

    eu_b = class_queue("render", ["region=eu", "rack=b"])
    listed = ",".join([class_queue("render-gpu", ["gpu", "region=eu"]), eu_b, "render-gpu", "render", "jobs"])
    assert split_queues(listed) == ["render-gpu@gpu,region=eu", "render@rack=b,region=eu", "render-gpu", "render",
                                    "jobs"]
    assert split_queues("render,jobs") == ["render", "jobs"] and split_queues("") == []
    assert split_queues("render@gpu,render-cpu") == ["render@gpu", "render-cpu"]


def test_a_node_may_not_carry_a_queues_name_as_a_tag() -> None:
    from reelfarm.farm.services.pools import parse_node_tags

    assert parse_node_tags("region=eu, render=fast") == {"region=eu", "render=fast"}
    with pytest.raises(PoolError) as refused:
        parse_node_tags("jobs,gpu,render")
    assert refused.value.problems == ["'jobs' is a queue's name, not a tag a node may carry",
                                      "'render' is a queue's name, not a tag a node may carry"]
