"""What counts as the database being down: a refused connection does; a broken constraint does not."""
from __future__ import annotations

import socket

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from reelfarm.shared.db import database_outage, make_engine
from reelfarm.shared.errors import DatabaseUnavailable


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_postgresql_connection_is_an_outage() -> None:
    engine = make_engine(f"postgresql+psycopg2://postgres@127.0.0.1:{_closed_port()}/postgres")
    with pytest.raises(OperationalError) as caught, engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    outage = database_outage(caught.value)
    assert isinstance(outage, DatabaseUnavailable)
    assert "refused" in str(outage).lower() or "could not connect" in str(outage).lower()
    try:
        raise RuntimeError("wrapped") from caught.value
    except RuntimeError as wrapped:
        assert database_outage(wrapped) is not None  # found through the chain


def test_errors_the_server_answered_are_not_outages(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/x.db")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    with pytest.raises(IntegrityError) as caught, engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
    assert database_outage(caught.value) is None
    assert database_outage(ValueError("no")) is None
