"""Bounded caches (reelfarm.renderer.cache): a ceiling in entries and one in bytes, least recently used out first."""
from __future__ import annotations

import os

import numpy as np
import pytest

from reelfarm.renderer import fonts, linter, text
from reelfarm.renderer.cache import BoundedCache, approx_size, bounded_cache
from tests.helpers import held_by_another_thread, in_a_fork


def test_the_least_recently_used_entry_goes_first_past_the_entry_ceiling():
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2, max_bytes=10**6)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_entries_go_until_the_cache_is_within_its_bytes():
    cache: BoundedCache[int, np.ndarray] = BoundedCache(max_entries=100, max_bytes=3000,
                                                        sizeof=lambda key, value: value.nbytes)
    for i in range(5):
        cache.put(i, np.zeros(1000, np.uint8))
    assert (len(cache), cache.nbytes) == (3, 3000)
    assert [cache.get(i) is not None for i in range(5)] == [False, False, True, True, True]


def test_a_value_bigger_than_the_whole_cache_is_not_kept_and_evicts_nothing():
    cache: BoundedCache[str, bytes] = BoundedCache(max_entries=10, max_bytes=1000, sizeof=lambda k, v: len(v))
    cache.put("small", b"x" * 10)
    cache.put("big", b"x" * 1001)
    assert (cache.get("small"), cache.get("big"), cache.nbytes) == (b"x" * 10, None, 10)


def test_putting_a_key_again_replaces_its_size():
    cache: BoundedCache[str, bytes] = BoundedCache(max_entries=10, max_bytes=1000, sizeof=lambda k, v: len(v))
    cache.put("a", b"x" * 600)
    cache.put("a", b"x" * 100)
    cache.put("b", b"x" * 800)
    assert (cache.get("a"), cache.nbytes) == (b"x" * 100, 900)


def test_a_cached_function_runs_once_per_arguments_and_stays_within_both_ceilings():
    calls = []

    @bounded_cache(max_entries=3, max_bytes=10**6)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert [square(2), square(2), square(3)] == [4, 4, 9]
    assert calls == [2, 3]
    for x in range(10):
        square(x)
    assert len(square.cache) == 3
    square.cache_clear()
    assert len(square.cache) == 0


def test_sizes_count_an_arrays_pixels_and_a_tuples_items():
    assert approx_size(np.zeros((100, 100), np.float32)) >= 40_000
    assert approx_size(("x" * 1000, 1.0)) > 1000


def test_a_ceiling_of_nothing_is_refused():
    with pytest.raises(ValueError):
        BoundedCache(max_entries=0, max_bytes=1)


def test_the_renderers_caches_have_both_ceilings():
    assert (text._widest_line.cache.max_entries, text._widest_line.cache.max_bytes) == (2048, 2 * 1024 * 1024)
    assert (linter._backdrops.max_entries, linter._backdrops.max_bytes) == (
        linter.BACKDROP_CACHE_SIZE, linter.BACKDROP_CACHE_BYTES)


def test_a_child_forked_while_another_thread_holds_a_cache_or_the_font_book_can_use_them():
    """The embedded farm forks its pool from a serving process whose other threads may be inside a
    cache or the font book at that instant: the child gets fresh locks, not held ones."""
    cache: BoundedCache[str, int] = BoundedCache(8, 1 << 20)
    cache.put("a", 1)
    book = fonts.font_book()
    with held_by_another_thread(cache._lock, book._lock, fonts._BOOK_LOCK):
        assert in_a_fork(lambda: (cache.put("b", 2), cache.get("a"), fonts.font_book().families_for("Inter", 400),
                                  fonts.font_book()._lock.acquire(timeout=5) or os._exit(4))) == 0
