"""A node's grace period after SIGTERM: ``REELFARM_WORKER_GRACE_SEC``, read once at start."""
from __future__ import annotations

import pytest

from reelfarm.farm.runtime.worker import STOP_GRACE_SEC, stop_grace_sec


def test_the_grace_period_defaults_to_less_than_a_deployment_gives_a_node() -> None:
    assert stop_grace_sec({}) == stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": " "}) == STOP_GRACE_SEC < 600


@pytest.mark.parametrize(("raw", "seconds"), [("0", 0.0), ("1.5", 1.5), (" 90 ", 90.0)])
def test_a_grace_period_is_seconds_from_zero_up(raw: str, seconds: float) -> None:
    assert stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": raw}) == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "inf", "nan"])
def test_anything_else_is_refused_with_the_variable_named(raw: str) -> None:
    with pytest.raises(ValueError, match="REELFARM_WORKER_GRACE_SEC"):
        stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": raw})
