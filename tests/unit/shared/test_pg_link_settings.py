"""Every PostgreSQL engine bounds its waits on a silent link (``shared.db.pg_link_settings``); a URL's
own parameters win. The behaviour on a silent link is tested in ``tests/e2e/test_partitions.py``."""
from __future__ import annotations

import contextlib

from sqlalchemy import event, exc

from reelfarm.shared.db import DATABASE_WAIT_BOUND_SEC, PG_USER_TIMEOUT_MS, make_engine


def connect_args(url: str) -> dict[str, object]:
    """The parameters the engine hands libpq (captured as it connects; nothing listens there)."""
    engine = make_engine(url)
    seen: dict[str, object] = {}

    @event.listens_for(engine, "do_connect")
    def capture(dialect: object, record: object, cargs: object, cparams: dict[str, object]) -> None:
        seen.update(cparams)

    with contextlib.suppress(exc.OperationalError):
        engine.connect().close()
    engine.dispose()
    return seen


def test_client_and_server_side_bounds_are_set() -> None:
    found = connect_args("postgresql+psycopg2://u@127.0.0.1:1/x")
    assert found["connect_timeout"] == 3 and found["keepalives"] == 1
    assert found["tcp_user_timeout"] == PG_USER_TIMEOUT_MS
    options = str(found["options"])
    for setting in ("tcp_keepalives_idle=4", "tcp_user_timeout=4000", "statement_timeout=60000",
                    "idle_in_transaction_session_timeout=60000"):
        assert f"-c {setting}" in options
    assert DATABASE_WAIT_BOUND_SEC == 7.0


def test_the_urls_own_parameters_win() -> None:
    found = connect_args("postgresql+psycopg2://u@127.0.0.1:1/x?connect_timeout=10&options=-c%20search_path%3Dx")
    assert found["connect_timeout"] == "10"
    assert found["options"] == "-c search_path=x"
    assert found["tcp_user_timeout"] == PG_USER_TIMEOUT_MS  # the rest still apply
