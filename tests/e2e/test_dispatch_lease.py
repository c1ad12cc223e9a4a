"""The farm's one dispatcher among real ``reelfarm worker`` nodes: one node holds the dispatch lease
and answers a wake at once; killed with SIGKILL, it is replaced by another node within the lease and
a try (``reelfarm.farm.runtime.dispatchlease``)."""
from __future__ import annotations

import time

from reelfarm.farm.runtime.dispatchlease import LEASE_MS, TRY_SEC, holder, wake, wake_key
from tests.e2e.test_node_names import Nodes, end_tree, nodes  # noqa: F401 - the fixture
from tests.helpers import wait_until


def _holding_pid(nodes: Nodes) -> int | None:  # noqa: F811
    token = holder(nodes.redis, "")
    return int(token.split(":")[1]) if token else None


def test_a_killed_dispatcher_node_is_replaced_within_its_lease(nodes: Nodes) -> None:  # noqa: F811
    first = nodes.start("--name", "a")
    wait_until(lambda: nodes.idle("a", first), "node a to wait for a job")
    second = nodes.start("--name", "b")
    wait_until(lambda: nodes.idle("b", second), "node b to wait for a job")
    pid = wait_until(lambda: _holding_pid(nodes), "a node to hold the dispatch lease")
    leader, other = (first, second) if pid == first.pid else (second, first)
    assert pid == leader.pid
    wake(nodes.redis, "")
    wait_until(lambda: nodes.redis.llen(wake_key("")) == 0, "the dispatcher to answer a wake")

    end_tree(leader)
    died = time.monotonic()
    wait_until(lambda: _holding_pid(nodes) == other.pid, "the other node to take the dispatch lease", every=0.05)
    replaced = time.monotonic() - died
    assert replaced <= LEASE_MS / 1000 + TRY_SEC + 1, replaced
    wake(nodes.redis, "")
    answered = time.monotonic()
    wait_until(lambda: nodes.redis.llen(wake_key("")) == 0, "the new dispatcher to answer a wake", every=0.05)
    assert time.monotonic() - answered < 1
    assert "this process is the farm's dispatcher now" in nodes.log(other)
