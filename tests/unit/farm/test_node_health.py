"""Bad nodes set aside and stuck chunks stopped: the policies (``reelfarm.farm.services.nodehealth``)
specified by what they guarantee, and the runtime's judgement of whose fault a failure is
(``reelfarm.farm.runtime.nodehealth``)."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from reelfarm.farm.runtime.nodehealth import (
    FrameCounter,
    StallWatch,
    counts_against_node,
    describe_death,
    describe_failure,
)
from reelfarm.farm.services.lifecycle import OtherEncoderFamily
from reelfarm.farm.services.nodehealth import REASON_CHARS, SetAsidePolicy, StallClock, Standing, after_failure
from reelfarm.renderer.errors import AssetError, EncodeError
from reelfarm.shared.config import Settings
from reelfarm.shared.errors import ConfigError, StorageError

CHUNK = "reelfarm.farm.runtime.tasks.render_chunk"
CHUNK_ATTEMPTS = 3  # a chunk's first run and its 2 retries (RenderService's default)
NOW = 1_000_000.0
DEFAULT = SetAsidePolicy()


def fail(standing: Standing, times: int = 1, now: float = NOW, policy: SetAsidePolicy = DEFAULT,
         others_working: bool = True) -> Standing:
    for _ in range(times):
        standing = after_failure(standing, "EncodeError: no space left on device", now, policy, others_working)
    return standing


def test_the_defaults_are_three_failures_ten_minutes_aside_and_two_minutes_without_a_frame() -> None:
    settings = Settings.from_env({"REELFARM_SECRET_KEY": "k" * 40, "REELFARM_DATA_DIR": "/nonexistent"})
    assert (settings.node_setaside_after, settings.node_cooldown_sec, settings.chunk_stall_sec) == (3, 600.0, 120.0)
    assert SetAsidePolicy() == SetAsidePolicy(3, 600.0) and StallClock().after_sec == 120.0
    tuned = Settings.from_env({"REELFARM_SECRET_KEY": "k" * 40, "REELFARM_DATA_DIR": "/nonexistent",
                               "REELFARM_NODE_SETASIDE_AFTER": "2", "REELFARM_NODE_COOLDOWN_SEC": "1.5",
                               "REELFARM_CHUNK_STALL_SEC": "30"})
    assert (tuned.node_setaside_after, tuned.node_cooldown_sec, tuned.chunk_stall_sec) == (2, 1.5, 30.0)


def test_the_third_failure_in_a_row_sets_a_node_aside_for_the_cool_down() -> None:
    twice = fail(Standing(), 2)
    assert twice.failures == 2 and not twice.set_aside(NOW)
    thrice = fail(twice)
    assert thrice == Standing(3, "EncodeError: no space left on device", NOW + 600)
    assert thrice.set_aside(NOW + 599.9) and not thrice.set_aside(NOW + 600)


def test_after_the_cool_down_one_more_failure_sets_it_aside_again_at_once() -> None:
    back = fail(Standing(), 3)
    later = NOW + 601
    assert not back.set_aside(later)
    assert fail(back, now=later).set_aside(later)
    assert not fail(Standing(), now=later).set_aside(later), "cleared (a success, an operator): three again"


def test_the_last_node_taking_work_is_never_set_aside() -> None:
    alone = fail(Standing(), 5, others_working=False)
    assert alone.failures == 5 and not alone.set_aside(NOW)


@given(after=st.integers(1, 8), events=st.lists(st.booleans(), max_size=30))
def test_the_count_is_the_run_of_failures_since_the_last_success(after: int, events: list[bool]) -> None:
    """``events``: True a failure, False a success (which starts the node afresh)."""
    policy, standing, run = SetAsidePolicy(after, 60.0), Standing(), 0
    for failed in events:
        standing, run = (fail(standing, policy=policy), run + 1) if failed else (Standing(), 0)
        assert standing.failures == run
        assert standing.set_aside(NOW) == (failed and run >= after)


@given(after=st.integers(1, CHUNK_ATTEMPTS), picks=st.lists(st.integers(0, 4), max_size=20))
def test_one_bad_node_never_spends_the_last_attempt_of_a_chunk(after: int, picks: list[int]) -> None:
    """A node that fails every chunk it takes, whichever chunks it takes: every failure spends an
    attempt except the one that sets the node aside (handed back), so while ``after`` is at most a
    chunk's attempts, every chunk still has one left for another node."""
    attempts, standing = dict.fromkeys(range(5), CHUNK_ATTEMPTS), Standing()
    for chunk in picks:
        if standing.set_aside(NOW):
            break
        standing = fail(standing, policy=SetAsidePolicy(after, 600.0))
        if not standing.set_aside(NOW):
            attempts[chunk] -= 1
    assert min(attempts.values()) >= 1


def test_a_larger_count_than_a_chunks_attempts_lets_one_bad_node_fail_a_render() -> None:
    standing, attempts = Standing(), CHUNK_ATTEMPTS
    while attempts and not standing.set_aside(NOW):
        standing = fail(standing, policy=SetAsidePolicy(CHUNK_ATTEMPTS + 1, 600.0))
        attempts -= 0 if standing.set_aside(NOW) else 1
    assert attempts == 0 and not standing.set_aside(NOW)


def test_a_standing_is_stored_as_fields_of_the_node_hash() -> None:
    standing = Standing(3, "EncodeError: [Errno 28] No space left on device", NOW + 600)
    assert Standing.from_fields(standing.as_fields()) == standing
    assert Standing.from_fields({}) == Standing() == Standing.from_fields({"failures": "x"})
    assert fail(Standing()).failure == "EncodeError: no space left on device"
    assert len(after_failure(Standing(), "x\n" * 1000, NOW, SetAsidePolicy(), True).failure) == REASON_CHARS


def test_a_stall_is_a_count_of_frames_that_stood_still_for_the_stall_time() -> None:
    clock = StallClock(after_sec=120.0)
    clock.restart(frames=40, now=0.0)
    assert not clock.stalled(40, 119.9) and clock.stalled(40, 120.0)
    assert not clock.stalled(48, 200.0), "a new frame starts the wait again"
    assert not clock.stalled(48, 319.9) and clock.stalled(48, 320.0)
    clock.restart(48, 400.0)  # a wait for the database, say, does not count
    assert not clock.stalled(48, 519.9)


def test_the_horse_monitor_wakes_four_times_per_stall_time_at_most_every_30_s() -> None:
    def every(seconds: float) -> int:
        return StallWatch(FrameCounter(), StallClock(seconds)).monitor_sec
    assert (every(120), every(600), every(3), every(0.5)) == (30, 30, 1, 1)


def test_frames_a_forked_horse_adds_are_seen_by_its_node() -> None:
    frames = FrameCounter()
    frames.add(3)
    pid = os.fork()
    if pid == 0:  # the work horse
        frames.add(8)
        os._exit(0)
    os.waitpid(pid, 0)
    assert frames.value() == 11


def test_only_a_chunks_own_failures_count_against_its_node() -> None:
    full = EncodeError("writing the MP4 trailer failed: [Errno 28] No space left on device")
    assert counts_against_node(CHUNK, full) and counts_against_node(CHUNK, OSError(28, "No space left on device"))
    assert counts_against_node(CHUNK, None), "its work horse died"
    assert not counts_against_node("reelfarm.farm.runtime.tasks.stitch", full), "only chunks count"
    assert not counts_against_node(CHUNK, AssetError("asset 'photo' is not an image")), "the user's to fix"
    assert not counts_against_node(CHUNK, OtherEncoderFamily("r", "nvenc", "x264")), "routing's"
    try:
        try:
            raise RedisConnectionError("Connection refused")
        except RedisConnectionError as exc:
            raise RuntimeError("progress not recorded") from exc
    except RuntimeError as outage:
        assert not counts_against_node(CHUNK, outage), "an outage is not the node's fault"
    try:
        try:
            raise StorageError("S3 request for 'renders/x/seg0.mp4' failed")
        except StorageError as exc:
            raise RuntimeError("asset 'photo' could not be read from storage") from exc
    except RuntimeError as storage:
        assert not counts_against_node(CHUNK, storage), "the farm's storage is every node's"


def test_failures_are_described_in_one_line_for_operators() -> None:
    assert describe_failure(EncodeError("writing failed:\n  [Errno 28] No space")) == \
        "EncodeError: writing failed: [Errno 28] No space"
    assert describe_death(_ended(lambda pid: os.kill(pid, signal.SIGKILL))) == "its work horse died (SIGKILL)"
    assert describe_death(_ended(exit_code=3)) == "its work horse died (exit status 3)"
    assert describe_death(None) == "its work horse died; its status could not be read"


def _ended(stop: Callable[[int], None] = lambda pid: None, exit_code: int = 0) -> int:
    """The waitpid status of a forked child that ``stop`` ends, or that exits with ``exit_code``."""
    pid = os.fork()
    if pid == 0:
        if exit_code:
            os._exit(exit_code)
        time.sleep(30)
        os._exit(0)
    stop(pid)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("raw", ["0", "-1", "three"])
def test_a_count_that_is_not_a_whole_number_from_one_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="REELFARM_NODE_SETASIDE_AFTER"):
        Settings.from_env({"REELFARM_SECRET_KEY": "k" * 40, "REELFARM_DATA_DIR": "/nonexistent",
                           "REELFARM_NODE_SETASIDE_AFTER": raw})
