"""The monthly compute allowance's rule (``reelfarm.farm.services.allowance``) over generated figures."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from reelfarm.farm.services.allowance import month_start, passes

seconds = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@given(st.one_of(st.none(), seconds), seconds, seconds)
def test_a_request_is_refused_only_when_it_costs_something_and_would_pass_the_allowance(allowance, used, estimate):
    refused = passes(allowance, used, estimate)
    assert refused == (allowance is not None and estimate > 0 and used + estimate > allowance)
    assert not passes(allowance, used, 0.0)  # an identical render runs nothing
    assert not passes(None, used, estimate)  # no allowance by default


@given(st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)),
       st.integers(-12, 12))
def test_the_month_starts_on_its_first_day_at_midnight_utc(now, hours):
    local = now.astimezone(timezone(timedelta(hours=hours)))
    start = month_start(local)
    assert start == datetime(now.year, now.month, 1, tzinfo=UTC) and start <= now < start + timedelta(days=32)
