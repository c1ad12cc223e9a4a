"""Workspaces, credits, API keys and brand kits on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select

from reelfarm.shared import keys
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import InsufficientCredits, NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos import api_keys, brand_kits, workspaces
from reelfarm.shared.tables import api_keys as api_keys_table
from reelfarm.shared.tables import credit_ledger

NEUTRAL = {"colors": {"primary": "#1D4ED8", "background": "#0B1020", "text": "#FFFFFF"}, "radius": 8}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


def new_workspace(engine: Engine, clock: FixedClock, credits: int = 0, plan: str = "pro") -> str:
    with transaction(engine) as conn:
        return workspaces.create_workspace(conn, clock, name="Acme", plan=plan, credits=credits,
                                           brand_tokens=NEUTRAL).id


def run_together(count: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    results: list[Any] = []
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results.append(work(index))
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


# Workspaces and credits

def test_create_workspace_with_default_kit_and_granted_credits(engine: Engine, clock: FixedClock) -> None:
    with transaction(engine) as conn:
        workspace = workspaces.create_workspace(conn, clock, name="Acme", plan="agency", credits=25,
                                                brand_tokens=NEUTRAL)
    with engine.connect() as conn:
        assert workspaces.get_workspace(conn, workspace.id) == workspace
        assert (workspace.name, workspace.plan, workspace.credits) == ("Acme", "agency", 25)
        assert workspace.created_at == clock.now()
        [kit] = brand_kits.list_brand_kits(conn, workspace.id)
        assert (kit.name, kit.is_default, kit.tokens, kit.source_url) == ("Default", True, NEUTRAL, None)
        assert workspaces.ledger_total(conn, workspace.id) == 25


def test_unknown_plan_is_refused(engine: Engine, clock: FixedClock) -> None:
    with pytest.raises(ValueError, match="plan"), transaction(engine) as conn:
        workspaces.create_workspace(conn, clock, name="x", plan="platinum", brand_tokens=NEUTRAL)


def test_missing_workspace(engine: Engine) -> None:
    with engine.connect() as conn, pytest.raises(NotFound):
        workspaces.get_workspace(conn, new_id())


def test_add_credits_moves_balance_and_ledger_together(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        assert workspaces.add_credits(conn, clock, workspace_id=workspace_id, delta=10, reason="purchase") == 10
        assert workspaces.add_credits(conn, clock, workspace_id=workspace_id, delta=-4, reason="adjust") == 6
    with pytest.raises(InsufficientCredits) as short, transaction(engine) as conn:
        workspaces.add_credits(conn, clock, workspace_id=workspace_id, delta=-7, reason="adjust")
    assert (short.value.balance, short.value.needed) == (6, 7)
    with engine.connect() as conn:
        assert workspaces.get_workspace(conn, workspace_id).credits == 6
        assert workspaces.ledger_total(conn, workspace_id) == 6
        reasons = conn.execute(select(credit_ledger.c.reason, credit_ledger.c.delta)
                               .where(credit_ledger.c.workspace_id == workspace_id)).all()
    assert sorted(reasons) == [("adjust", -4), ("purchase", 10)]


def test_add_credits_to_missing_workspace(engine: Engine, clock: FixedClock) -> None:
    with pytest.raises(NotFound), transaction(engine) as conn:
        workspaces.add_credits(conn, clock, workspace_id=new_id(), delta=-1, reason="x")


def test_create_key_stores_only_hash_and_prefix(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        record, plaintext = api_keys.create_api_key(conn, clock, workspace_id=workspace_id, name="ci")
    assert keys.checksum_ok(plaintext)
    assert record.prefix == plaintext[:12] and record.key_hash == keys.hash_key(plaintext)
    with engine.connect() as conn:
        stored = conn.execute(select(api_keys_table).where(api_keys_table.c.id == record.id)).one()
    assert plaintext not in [str(v) for v in stored]


def test_authenticate(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        record, plaintext = api_keys.create_api_key(conn, clock, workspace_id=workspace_id, name="ci",
                                                    expires_at=clock.now() + timedelta(days=1))
    with engine.connect() as conn:
        assert api_keys.authenticate(conn, plaintext, clock.now()) == record
        assert api_keys.find_api_key(conn, keys.hash_key(plaintext)) == record
        assert api_keys.authenticate(conn, keys.generate_key(), clock.now()) is None  # unknown
        altered = plaintext[:-1] + ("y" if plaintext.endswith("x") else "x")  # the last character changed
        assert api_keys.authenticate(conn, altered, clock.now()) is None  # bad checksum
        assert api_keys.authenticate(conn, plaintext, clock.now() + timedelta(days=1)) is None  # expired


def test_revoked_keys_stop_working_and_revoking_twice_keeps_the_first_time(
        engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        record, plaintext = api_keys.create_api_key(conn, clock, workspace_id=workspace_id, name="ci")
        first = api_keys.revoke_api_key(conn, clock, record.id)
        clock.advance(60)
        second = api_keys.revoke_api_key(conn, clock, record.id)
    assert first.revoked_at == second.revoked_at == clock.now() - timedelta(seconds=60)
    with engine.connect() as conn:
        assert api_keys.authenticate(conn, plaintext, clock.now()) is None
    with pytest.raises(NotFound), transaction(engine) as conn:
        api_keys.revoke_api_key(conn, clock, new_id())


def test_touch_writes_at_most_once_a_minute(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        record, _ = api_keys.create_api_key(conn, clock, workspace_id=workspace_id, name="ci")
    first_use = clock.now()
    for seconds, expected in [(0, first_use), (30, first_use), (61, first_use + timedelta(seconds=91))]:
        clock.advance(seconds)
        with transaction(engine) as conn:
            api_keys.touch_api_key(conn, record.id, clock.now())
        with engine.connect() as conn:
            [listed] = api_keys.list_api_keys(conn, workspace_id)
        assert listed.last_used_at == expected


def test_list_keys_of_the_workspace_only(engine: Engine, clock: FixedClock) -> None:
    mine, theirs = new_workspace(engine, clock), new_workspace(engine, clock)
    with transaction(engine) as conn:
        api_keys.create_api_key(conn, clock, workspace_id=mine, name="a")
        clock.advance(1)
        api_keys.create_api_key(conn, clock, workspace_id=mine, name="b")
        api_keys.create_api_key(conn, clock, workspace_id=theirs, name="c")
    with engine.connect() as conn:
        assert [k.name for k in api_keys.list_api_keys(conn, mine)] == ["a", "b"]


# Brand kits

def test_brand_kits_default_first_and_switching_default(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        clock.advance(1)
        acme = brand_kits.create_brand_kit(conn, clock, workspace_id=workspace_id, name="Acme",
                                           tokens={"colors": {}}, source_url="https://acme.example")
        clock.advance(1)
        beta = brand_kits.create_brand_kit(conn, clock, workspace_id=workspace_id, name="Beta",
                                           tokens={}, is_default=True)
    with engine.connect() as conn:
        assert [k.name for k in brand_kits.list_brand_kits(conn, workspace_id)] == ["Beta", "Default", "Acme"]
    with transaction(engine) as conn:
        clock.advance(1)
        updated = brand_kits.update_brand_kit(conn, clock, workspace_id, acme.id, is_default=True,
                                              name="Acme Inc", tokens={"radius": 4})
    assert (updated.name, updated.tokens, updated.is_default) == ("Acme Inc", {"radius": 4}, True)
    assert updated.updated_at == clock.now() and updated.created_at == acme.created_at
    with engine.connect() as conn:
        kits = brand_kits.list_brand_kits(conn, workspace_id)
        assert [(k.name, k.is_default) for k in kits] == [("Acme Inc", True), ("Default", False), ("Beta", False)]
        assert brand_kits.get_default_brand_kit(conn, workspace_id) == updated
        assert brand_kits.get_brand_kit(conn, workspace_id, beta.id).is_default is False


def test_brand_kits_of_another_workspace_are_not_found(engine: Engine, clock: FixedClock) -> None:
    mine, theirs = new_workspace(engine, clock), new_workspace(engine, clock)
    with engine.connect() as conn:
        their_kit = brand_kits.list_brand_kits(conn, theirs)[0]
        with pytest.raises(NotFound):
            brand_kits.get_brand_kit(conn, mine, their_kit.id)
    with pytest.raises(NotFound), transaction(engine) as conn:
        brand_kits.update_brand_kit(conn, clock, mine, their_kit.id, name="mine now")


def test_concurrent_default_switches_leave_exactly_one_default(engine: Engine, clock: FixedClock) -> None:
    workspace_id = new_workspace(engine, clock)
    with transaction(engine) as conn:
        kit_ids = [brand_kits.create_brand_kit(conn, clock, workspace_id=workspace_id, name=f"k{i}",
                                               tokens={}).id for i in range(6)]

    def make_default(index: int) -> None:
        with transaction(engine) as conn:
            brand_kits.update_brand_kit(conn, clock, workspace_id, kit_ids[index], is_default=True)

    _, errors = run_together(6, make_default)
    assert errors == []
    with engine.connect() as conn:
        assert sum(k.is_default for k in brand_kits.list_brand_kits(conn, workspace_id)) == 1
