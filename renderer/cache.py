"""Caches with a ceiling in entries and in bytes, for processes that live for days.

A render pool process, an API worker and a node each draw thousands of videos in their
lifetime, each with its own texts; a cache keyed by what a video draws grows with every new one
unless it is bounded. A ceiling in entries alone is not one in memory (an entry can be a float
or a whole frame's pixels), so every cache here has both: the least recently used entries go
first until the cache is within both. Sizes are estimates (`approx_size`), good to a small
factor, which is what a ceiling needs; a value too big for the byte ceiling is not kept.

Each cache is per process: forked children start with a copy of their parent's, then keep
their own. A child gets fresh locks: the embedded farm forks its pool from a serving process
whose other threads may hold a cache's lock at that instant, and a child inheriting it locked
would wait for it forever.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["BoundedCache", "approx_size", "bounded_cache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])

_MISSING = object()
_CACHES: weakref.WeakSet[BoundedCache[Any, Any]] = weakref.WeakSet()  # every cache of this process


def approx_size(value: Any) -> int:
    """Bytes `value` holds, roughly: a numpy array's buffer, containers walked one level deep
    (their items' own sizes), anything else by `sys.getsizeof`."""
    if isinstance(value, np.ndarray):
        return value.nbytes + 112
    if isinstance(value, (tuple, list, frozenset, set)):
        return sys.getsizeof(value) + sum(_shallow(v) for v in value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_shallow(k) + _shallow(v) for k, v in value.items())
    return sys.getsizeof(value)


def _shallow(value: Any) -> int:
    return value.nbytes + 112 if isinstance(value, np.ndarray) else sys.getsizeof(value)


class BoundedCache(Generic[K, V]):
    """A thread-safe LRU mapping held within `max_entries` and `max_bytes` (`sizeof(key, value)`)."""

    def __init__(self, max_entries: int, max_bytes: int,
                 sizeof: Callable[[Any, Any], int] | None = None) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("a bounded cache needs room for at least one entry and one byte")
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._sizeof = sizeof or (lambda key, value: approx_size(key) + approx_size(value))
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _CACHES.add(self)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """The estimated bytes of everything held."""
        return self._bytes

    def get(self, key: K, default: Any = None) -> Any:
        with self._lock:
            item = self._items.get(key, _MISSING)
            if item is _MISSING:
                return default
            self._items.move_to_end(key)
            return item[0]  # type: ignore[index]

    def put(self, key: K, value: V) -> None:
        size = self._sizeof(key, value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


def bounded_cache(max_entries: int, max_bytes: int,
                  sizeof: Callable[[Any, Any], int] | None = None) -> Callable[[F], F]:
    """`functools.lru_cache` with a byte ceiling too; positional, hashable arguments only. The
    wrapper's `cache` is the `BoundedCache`; `cache_clear()` empties it."""
    def decorate(func: F) -> F:
        cache: BoundedCache[tuple[Any, ...], Any] = BoundedCache(max_entries, max_bytes, sizeof)

        @functools.wraps(func)
        def wrapper(*args: Any) -> Any:
            found = cache.get(args, _MISSING)
            if found is _MISSING:
                found = func(*args)
                cache.put(args, found)
            return found

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]
    return decorate


def _unlock_after_fork() -> None:
    for cache in list(_CACHES):
        cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_unlock_after_fork)
