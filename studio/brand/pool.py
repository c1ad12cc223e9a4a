"""``FetchPool``: a few fetches at once through the SSRF guard, all under one deadline.

Brand extraction needs a page's stylesheets and logo candidates, which do not depend on each
other; fetched one after another against a slow site they add up to minutes. The pool runs them
on a few threads, each through the same ``SafeFetcher`` (so every address rule, timeout and byte
cap holds as for a single fetch), and stops waiting at one deadline for the whole extraction:
a fetch still queued then is never started, and one still running is given the same deadline,
so its thread ends with it. Waiting happens on the caller's thread only, so progress
callbacks, and the errors they raise, stay on that thread.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, as_completed, wait

from reelfarm.studio.errors import FetchError, FetchFailed
from reelfarm.studio.fetch import FetchResult, SafeFetcher

log = logging.getLogger(__name__)


class FetchPool:
    """Fetches on ``workers`` threads until ``time_limit`` seconds after it is made.

    ``close()`` must be called (try/finally): it cancels what has not started and returns without
    waiting for what has.
    """

    def __init__(self, fetcher: SafeFetcher, *, workers: int, time_limit: float) -> None:
        self.time_limit = time_limit
        self._fetcher = fetcher
        self._deadline = time.monotonic() + time_limit
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="brand-fetch")
        self._urls: dict[Future[FetchResult], str] = {}

    def remaining(self) -> float:
        """Seconds left until the deadline; 0 once it has passed."""
        return max(0.0, self._deadline - time.monotonic())

    def submit(self, url: str, accept: tuple[str, ...]) -> Future[FetchResult]:
        """Start fetching ``url`` (queued while every worker is busy); after the deadline, nothing starts."""
        if self.remaining() <= 0:
            future: Future[FetchResult] = Future()
            future.set_exception(FetchFailed(f"no time left of the {self.time_limit:g} s allowed"))
        else:
            future = self._executor.submit(self._fetcher.fetch, url, accept, deadline=self._deadline)
        self._urls[future] = url
        return future

    def fetch(self, url: str, accept: tuple[str, ...]) -> FetchResult:
        """Fetch ``url`` and wait for it until the deadline.

        Raises:
            FetchRefused, FetchFailed: as ``SafeFetcher.fetch``; FetchFailed too when the deadline passes.
        """
        future = self.submit(url, accept)
        if not wait([future], timeout=self.remaining()).done:
            raise FetchFailed(f"{url} did not answer within {self.time_limit:g} s")
        try:
            return future.result()
        except FetchFailed as exc:
            if self.remaining() > 0:
                raise
            # the fetcher's own wait ran to the same deadline and ended first: the same answer
            raise FetchFailed(f"{url} did not answer within {self.time_limit:g} s") from exc

    def completed(self, futures: Iterable[Future[FetchResult]]) -> Iterator[Future[FetchResult]]:
        """``futures`` as they finish, in any order; stops at the deadline, leaving the others unfinished."""
        try:
            yield from as_completed(list(futures), timeout=self.remaining())
        except TimeoutError:  # as_completed's own: the deadline passed
            return

    def result(self, future: Future[FetchResult]) -> FetchResult | None:
        """The answer, waiting for it until the deadline; None (logged) when it failed or is too late."""
        url = self._urls.get(future, "?")
        if not wait([future], timeout=self.remaining()).done:
            log.info("brand: gave up waiting for %s after %g s", url, self.time_limit)
            return None
        try:
            return future.result()
        except CancelledError:
            return None
        except FetchError as exc:
            log.info("brand: skipping %s: %s", url, exc)
            return None

    def close(self) -> None:
        """Cancel fetches not yet started; running ones end at the deadline on their own, not awaited."""
        self._executor.shutdown(wait=False, cancel_futures=True)
