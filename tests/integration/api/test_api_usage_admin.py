"""`reelfarm admin usage`: the farm's usage per workspace for operators, as text, JSON or CSV."""
from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime

from reelfarm.shared.db import transaction
from reelfarm.shared.tables import task_costs
from tests.integration.api.test_api_admin_cli import admin  # noqa: F401 - the fixture

NOW = datetime.now(UTC)
TODAY = NOW.date().isoformat()
DAY = ("--since", TODAY, "--until", TODAY)  # one day, named: a run that goes past midnight keeps it


def _used(services, workspace_id: str, cpu: float, frames: int, chunk: int = 0) -> None:
    with transaction(services.engine) as conn:
        conn.execute(task_costs.insert().values(
            id=str(uuid.uuid4()), workspace_id=workspace_id, video_id=str(uuid.uuid4()), render_id=str(uuid.uuid4()),
            task="chunk", chunk=chunk, outcome="finished", node="node-1", node_kind="cpu", cpu_sec=cpu, wall_sec=cpu,
            gpu_sec=None, peak_memory_bytes=1 << 20, storage_bytes=1000, frames=frames, started_at=NOW,
            finished_at=NOW))


def test_admin_usage_per_workspace_as_json_csv_and_text(services, make_tenant, admin):  # noqa: F811
    one, two = make_tenant(), make_tenant(name="two")
    _used(services, one.workspace_id, 2.5, 30)
    _used(services, two.workspace_id, 1.0, 12)

    found = json.loads(admin("usage", *DAY, "--json").output)
    rows = {g["workspace_id"]: g for g in found["groups"]}
    assert rows[one.workspace_id]["frames_rendered"] == 30 and rows[one.workspace_id]["cpu_sec"] == 2.5
    assert rows[two.workspace_id]["frames_rendered"] == 12 and rows[two.workspace_id]["storage_bytes"] == 1000
    assert found["from"] == found["to"] == TODAY

    only = json.loads(admin("usage", "--workspace", one.workspace_id, *DAY, "--json").output)
    assert only["groups"] is None and (only["frames_rendered"], only["cpu_sec"]) == (30, 2.5)

    table = list(csv.DictReader(io.StringIO(admin("usage", *DAY, "--csv").output)))
    assert {r["workspace_id"]: r["frames_rendered"] for r in table
            if r["workspace_id"] in (one.workspace_id, two.workspace_id)} == {
        one.workspace_id: "30", two.workspace_id: "12"}
    assert list(table[0]) == ["workspace_id", "renders", "frames_rendered", "frames_reused", "cpu_sec", "gpu_sec",
                              "storage_bytes", "credits"]

    text = admin("usage", "--workspace", two.workspace_id, *DAY).output
    assert "12 frames rendered" in text and "1.0 CPU s" in text

    refused = admin("usage", "--since", "2999-01-01", ok=False)
    assert refused.exit_code == 1 and "after" in refused.output
