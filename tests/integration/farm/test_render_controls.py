"""An operator's render controls through ``reelfarm farm render ...`` and the audit log through
``reelfarm admin audit``, on the embedded queue (SQLite and PostgreSQL) and on RQ (real Redis,
the dispatcher's copy of the fair queues kept from round to round, as the farm's dispatcher keeps
it). Nothing renders here: chunks are dispatched by the test, one round at a time; real nodes are
``test_render_controls_nodes.py``'s."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine

from reelfarm.api.cli import admin_group
from reelfarm.farm.runtime.cli import farm_group
from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.embeddedholds import EmbeddedHolds
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.reaper import reap
from reelfarm.farm.runtime.renderholds import RedisHolds
from reelfarm.farm.runtime.tasks import fail_render
from reelfarm.farm.services.audit import AuditEntry, AuditLog
from reelfarm.farm.services.graph import chunk_job_id, chunk_of, render_job_ids
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc, work_burst
from tests.integration.farm.test_cli_and_nodes import env_for
from tests.integration.farm.test_render_embedded import wait_for


@pytest.fixture(params=["embedded", "rq"])
def farm(request: pytest.FixtureRequest, db_url: str) -> Farm:
    if request.param == "rq":
        return request.getfixturevalue("rq_farm")  # type: ignore[no-any-return]
    return request.getfixturevalue("make_embedded")(workers=64)  # type: ignore[no-any-return]


class Rounds:
    """Dispatch rounds as the farm's dispatcher makes them: on RQ, one ``Dispatcher`` whose copy of
    the fair queues lives across rounds (it sees a control only through its events)."""

    def __init__(self, farm: Farm) -> None:
        self.farm = farm
        if isinstance(farm.queue, RQQueue):
            self.dispatcher = Dispatcher(farm.queue.redis, farm.queue.namespace, shares=Shares(farm.engine))
            self.dispatcher.round(slots=0)  # the copy is built now, before any control

    def take(self, places: int) -> list[tuple[str, int]]:
        """The chunks given the next ``places`` free places (render id, chunk index), in order."""
        if isinstance(self.farm.queue, EmbeddedQueue):
            ids = [t.id for t in self.farm.queue._claim(places)]
        else:
            ids = self.dispatcher.round(slots=places)
        found = [chunk_of(i.removeprefix(getattr(self.farm.queue, "namespace", ""))) for i in ids]
        return [f for f in found if f is not None]


def env(farm: Farm, tmp_path: Path) -> dict[str, str]:
    found = env_for(farm, tmp_path)
    if isinstance(farm.queue, RQQueue):
        kwargs = farm.queue.redis.connection_pool.connection_kwargs
        found["REELFARM_REDIS_URL"] = f"redis://{kwargs.get('host', '127.0.0.1')}:{kwargs['port']}/{kwargs.get('db', 0)}"
    return found


def control(farm: Farm, tmp_path: Path, *args: str, operator: str = "ops-alice") -> Result:
    extra = ["--namespace", farm.queue.namespace] if isinstance(farm.queue, RQQueue) else []
    return CliRunner().invoke(farm_group, ["render", *args, *extra, "--operator", operator], env=env(farm, tmp_path))


def audit(farm: Farm, tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(admin_group, ["audit", "--json", *args], env=env(farm, tmp_path))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def ask(farm: Farm, workspace: str, title: str, priority: str = "normal", seconds: float = 6) -> dict[str, Any]:
    video = farm.video(workspace, make_doc(seconds, title=title))
    return farm.renders.request(workspace, video, "16:9", resolution=180, priority=priority)  # type: ignore[return-value]


def test_a_suspended_render_waits_aside_until_resumed_and_both_are_in_the_audit_log(farm: Farm,
                                                                                    tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    held, other = ask(farm, workspace, "held"), ask(farm, workspace, "other")
    chunks = held["queue"]["chunks_waiting"]
    rounds = Rounds(farm)

    done = control(farm, tmp_path, "suspend", held["id"], "--reason", "customer asked")
    assert done.exit_code == 0, done.output
    assert f"render {held['id']}: suspended ({chunks} chunk(s) held back)" in done.output
    shown = farm.renders.get(workspace, held["id"])
    assert shown["status"] == "queued" and shown["queue"] is None
    assert shown["held_up"]["reason"] == "suspended" and shown["held_up"]["chunk"] == 0
    assert "suspended by the farm's operator" in shown["held_up"]["message"]

    taken = rounds.take(100)
    assert taken and {r for r, _ in taken} == {other["id"]}  # within a round: none of the held render's

    again = control(farm, tmp_path, "suspend", held["id"])
    assert again.exit_code == 0 and "was suspended already" in again.output

    back = control(farm, tmp_path, "resume", held["id"], operator="ops-bob")
    assert back.exit_code == 0 and f"resumed ({chunks} chunk(s) back in line)" in back.output, back.output
    assert farm.renders.get(workspace, held["id"])["held_up"] is None
    assert rounds.take(100) == [(held["id"], i) for i in range(chunks)]
    assert "was not suspended" in control(farm, tmp_path, "resume", held["id"]).output

    entries = audit(farm, tmp_path, "--target", f"render:{held['id']}")
    assert [(e["action"], e["actor"]) for e in entries] == [("render.resume", "ops-bob"),
                                                            ("render.suspend", "ops-alice")]  # newest first
    assert entries[1]["details"]["reason"] == "customer asked" and entries[1]["workspace_id"] == workspace
    assert entries[0]["details"]["chunks_back"] == chunks


def test_a_workspace_wide_suspend_holds_only_that_workspaces_renders(farm: Farm, tmp_path: Path) -> None:
    mine, theirs = farm.workspace(credits=50), farm.workspace(credits=50)
    held = [ask(farm, mine, f"mine-{i}") for i in range(2)]
    free = ask(farm, theirs, "theirs")
    rounds = Rounds(farm)

    done = control(farm, tmp_path, "suspend", "--workspace", mine, "--json")
    assert done.exit_code == 0, done.output
    assert sorted(d["render_id"] for d in json.loads(done.output)) == sorted(r["id"] for r in held)
    assert farm.renders.get(theirs, free["id"])["held_up"] is None
    assert {r for r, _ in rounds.take(100)} == {free["id"]}
    assert all(farm.renders.get(mine, r["id"])["held_up"]["reason"] == "suspended" for r in held)

    later = ask(farm, mine, "asked while suspended")  # a new render of the workspace is not held
    assert {r for r, _ in rounds.take(100)} == {later["id"]}

    back = control(farm, tmp_path, "resume", "--workspace", mine)
    assert back.exit_code == 0 and back.output.count("resumed") == 2, back.output
    assert {r for r, _ in rounds.take(100)} == {r["id"] for r in held}
    entries = audit(farm, tmp_path, "--workspace", mine)
    assert sorted(e["action"] for e in entries) == ["render.resume"] * 2 + ["render.suspend"] * 2
    assert all(e["details"]["scope"] == "workspace" for e in entries)
    assert audit(farm, tmp_path, "--workspace", theirs) == []


def test_a_render_lowered_to_low_waits_for_the_workspaces_normal_renders(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    first = ask(farm, workspace, "first")
    second = ask(farm, workspace, "second")
    rounds = Rounds(farm)

    done = control(farm, tmp_path, "priority", "low", first["id"])
    assert done.exit_code == 0 and "priority low" in done.output, done.output
    assert farm.renders.get(workspace, first["id"])["priority"] == "low"
    chunks = second["queue"]["chunks_waiting"]
    assert rounds.take(chunks) == [(second["id"], i) for i in range(chunks)]  # the normal one first, now

    raised = control(farm, tmp_path, "priority", "normal", first["id"])
    assert raised.exit_code == 0 and "priority normal" in raised.output
    assert "is normal already" in control(farm, tmp_path, "priority", "normal", first["id"]).output
    (entry_up, entry_down) = audit(farm, tmp_path, "--action", "render.priority", "--target", f"render:{first['id']}")
    assert (entry_up["details"]["priority"], entry_up["details"]["was"]) == ("normal", "low")
    assert (entry_down["details"]["priority"], entry_down["details"]["was"]) == ("low", "normal")


def test_a_refused_control_changes_and_records_nothing(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    render = ask(farm, workspace, "canceled")
    farm.renders.cancel(workspace, render["id"])

    unknown = control(farm, tmp_path, "suspend", "no-such-render")
    assert unknown.exit_code != 0 and "no render no-such-render" in unknown.output
    finished = control(farm, tmp_path, "suspend", render["id"])
    assert finished.exit_code != 0 and "is canceled" in finished.output
    no_workspace = control(farm, tmp_path, "resume", "--workspace", "no-such-workspace")
    assert no_workspace.exit_code != 0 and "no workspace no-such-workspace" in no_workspace.output
    both = control(farm, tmp_path, "suspend", render["id"], "--workspace", workspace)
    assert both.exit_code != 0 and "not both" in both.output
    assert audit(farm, tmp_path, "--target", f"render:{render['id']}") == []
    assert audit(farm, tmp_path, "--target", "render:no-such-render") == []


def test_a_suspended_render_outlives_the_queued_bound_and_its_resume_restarts_its_clock(farm: Farm,
                                                                                       tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    render = ask(farm, workspace, "long wait")
    assert control(farm, tmp_path, "suspend", render["id"]).exit_code == 0
    assert render["id"] not in reap(queued_max=timedelta(0)).renders  # a bound it is past
    assert farm.renders.get(workspace, render["id"])["status"] == "queued"
    assert control(farm, tmp_path, "resume", render["id"]).exit_code == 0
    assert render["id"] not in reap(queued_max=timedelta(seconds=30)).renders  # its clock started again
    assert render["id"] in reap(queued_max=timedelta(0)).renders  # resumed: the bound applies again


def test_set_plan_and_admin_audit_filters(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace()
    e = env(farm, tmp_path)
    done = CliRunner().invoke(admin_group, ["set-plan", workspace, "agency", "--operator", "ops-carol"], env=e)
    assert done.exit_code == 0, done.output
    refused = CliRunner().invoke(admin_group, ["set-plan", "no-such-workspace", "agency"], env=e)
    assert refused.exit_code != 0
    (entry,) = audit(farm, tmp_path, "--workspace", workspace)
    assert (entry["action"], entry["actor"], entry["target_kind"], entry["target_id"]) == (
        "workspace.set_plan", "ops-carol", "workspace", workspace)
    assert entry["details"] == {"plan": "agency", "was": "pro"}
    assert audit(farm, tmp_path, "--target", "workspace:no-such-workspace") == []
    for plan in ("pro", "starter"):
        CliRunner().invoke(admin_group, ["set-plan", workspace, plan, "--operator", "ops-carol"], env=e)
    assert [x["details"]["plan"] for x in audit(farm, tmp_path, "--workspace", workspace, "--limit", "2")] == [
        "starter", "pro"]
    assert audit(farm, tmp_path, "--workspace", workspace, "--action", "render.") == []
    assert len(audit(farm, tmp_path, "--workspace", workspace, "--action", "workspace.")) == 3
    text = CliRunner().invoke(admin_group, ["audit", "--workspace", workspace, "--limit", "1"], env=e).output
    assert "ops-carol\tworkspace.set_plan\tworkspace:" in text and '"plan": "starter"' in text


def test_an_entry_the_database_cannot_take_waits_in_redis_and_is_written_later(rq_farm: Farm) -> None:
    queue = rq_farm.queue
    assert isinstance(queue, RQQueue)
    down = create_engine("postgresql+psycopg2://nobody@127.0.0.1:9/none", connect_args={"connect_timeout": 1})
    entry = AuditLog(down, rq_farm.clock, queue.redis, queue.namespace).record(
        AuditEntry("ops-dave", "farm.pause", "farm", details={"reason": "db down"}))
    log = AuditLog(rq_farm.engine, rq_farm.clock, queue.redis, queue.namespace)
    assert log.pending() == 1
    found = [e for e in log.entries(5, action="farm.pause", actor="ops-dave") if e.id == entry.id]
    assert len(found) == 1 and found[0].details == {"reason": "db down"} and log.pending() == 0
    log.redis.rpush(log.pending_key, json.dumps(entry.as_dict()))  # kept twice: written once
    assert [e.id for e in log.entries(5, actor="ops-dave")].count(entry.id) == 1


def run_to_end(farm: Farm, workspace: str, render_id: str) -> dict[str, Any]:
    """Every chunk drawn and stitched: RQ's burst workers, or the embedded queue started."""
    if isinstance(farm.queue, RQQueue):
        work_burst(farm.queue.redis, farm.queue.namespace)
    else:
        farm.queue.start()
        wait_for(lambda: farm.renders.get(workspace, render_id)["status"] in ("succeeded", "failed"),
                 WORK_CEILING_SEC, 0.2)
    return farm.renders.get(workspace, render_id)


def test_a_failed_render_requeued_starts_again_free_and_succeeds(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    render = ask(farm, workspace, "failed once")
    balance = farm.balance(workspace)
    for job_id in render_job_ids(render["id"], render["queue"]["chunks_waiting"]):
        farm.queue.cancel(job_id)  # its work ended with it, as a render that failed has
    assert fail_render(render["id"], "a node's disk was full")
    assert farm.balance(workspace) == balance + 1  # refunded

    done = control(farm, tmp_path, "requeue", render["id"], "--json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["changed"] and found["was"] == "failed" and found["error"].startswith("a node's disk was full")
    shown = farm.renders.get(workspace, render["id"])
    assert (shown["status"], shown["error"]) == ("queued", None)
    assert "nothing to requeue" in control(farm, tmp_path, "requeue", render["id"]).output  # all of it waits

    assert run_to_end(farm, workspace, render["id"])["status"] == "succeeded"
    assert farm.balance(workspace) == balance + 1  # free: the refund stands
    (entry,) = audit(farm, tmp_path, "--action", "render.requeue", "--target", f"render:{render['id']}")
    assert entry["actor"] == "ops-alice" and entry["details"]["refunded"] == 1
    refused = control(farm, tmp_path, "requeue", render["id"])
    assert refused.exit_code != 0 and "is succeeded" in refused.output


def test_a_live_render_whose_chunks_were_lost_gets_them_back_at_once(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    render = ask(farm, workspace, "lost chunks")
    chunks = render["queue"]["chunks_waiting"]
    farm.queue.cancel(chunk_job_id(render["id"], 1))  # as Redis that lost it, or a chunk given up on
    done = control(farm, tmp_path, "requeue", render["id"])
    assert done.exit_code == 0 and "requeued (" in done.output, done.output
    assert farm.renders.get(workspace, render["id"])["queue"]["chunks_waiting"] in (chunks, None)
    assert run_to_end(farm, workspace, render["id"])["status"] == "succeeded"
    (entry,) = audit(farm, tmp_path, "--action", "render.requeue", "--target", f"render:{render['id']}")
    assert entry["details"]["was"] == "queued" and chunk_job_id(render["id"], 1) in entry["details"]["enqueued"]


def test_a_suspended_render_canceled_leaves_no_hold_behind(farm: Farm, tmp_path: Path) -> None:
    workspace = farm.workspace(credits=50)
    render = ask(farm, workspace, "suspended then canceled")
    assert control(farm, tmp_path, "suspend", render["id"]).exit_code == 0
    assert farm.renders.cancel(workspace, render["id"])["status"] == "canceled"
    if isinstance(farm.queue, RQQueue):
        holds = RedisHolds(farm.queue.dispatcher)
        assert holds.suspended(render["id"]) is None and holds.parked(render["id"]) == []
    else:
        assert EmbeddedHolds(farm.engine, farm.clock).suspended(render["id"]) is None
    refused = control(farm, tmp_path, "resume", render["id"])
    assert refused.exit_code != 0 and "is canceled" in refused.output


def test_a_chunk_of_a_suspended_render_that_arrives_later_is_parked_not_dispatched(rq_farm: Farm,
                                                                                   tmp_path: Path) -> None:
    """A chunk released into its waiting queue after the suspend (by the asset import it waited
    on) is held back by the round that would have moved it, its turn kept for the resume."""
    queue = rq_farm.queue
    assert isinstance(queue, RQQueue)
    workspace = rq_farm.workspace(credits=50)
    render = ask(rq_farm, workspace, "late chunk")
    chunks = render["queue"]["chunks_waiting"]
    rounds = Rounds(rq_farm)
    assert control(rq_farm, tmp_path, "suspend", render["id"]).exit_code == 0
    holds, d = RedisHolds(queue.dispatcher), queue.dispatcher
    late = holds.parked(render["id"])[-1]
    queue.redis.lrem(holds.parked_list(render["id"]), 1, late)  # as if it had not arrived yet
    queue.redis.rpush(d.waiting_list(workspace), late)  # released now, as RQ releases a dependent
    d.arrived(late)

    assert rounds.take(100) == []
    assert holds.parked(render["id"])[-1] == late and queue.redis.hexists(d.key("turns"), late)
    assert control(rq_farm, tmp_path, "resume", render["id"]).exit_code == 0
    assert rounds.take(100) == [(render["id"], i) for i in range(chunks)]
