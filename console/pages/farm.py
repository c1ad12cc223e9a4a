"""The farm (operators only): nodes and what they can do and run, queue depths, renders in
flight with their frames per second, and the latest failed renders with their errors.

The same snapshot as ``reelfarm farm status`` (``Services.farm_status``), read from Redis and the
database on each load; the page refreshes itself every few seconds (by script; without one, a
``<noscript>`` meta refresh). The queue table counts work waiting or running only: tasks that ended
(a failed render's chunks are canceled) are shown by their render's status, with the failed renders.
"""

from __future__ import annotations

from typing import Any

from flask import render_template

from reelfarm.console import web
from reelfarm.console.blueprint import blp

REFRESH_SEC = 5
ENDED = frozenset({"succeeded", "finished", "failed", "canceled", "stopped"})  # task states, embedded and RQ


@blp.route("/farm")
@web.operator_only
def farm() -> Any:
    svc = web.services()
    queue = svc.farm.queue
    status = svc.farm_status()
    failed = svc.read_models.failed_renders()
    queues = {name: {k: n for k, n in depth.items() if k not in ENDED} for name, depth in status["queues"].items()}
    columns = sorted({k for depth in queues.values() for k in depth})
    nodes = status["nodes"] if status["mode"] == "farm" else [_this_server(queue)]
    return render_template("console/farm.html", status=status, queues=queues, nodes=nodes, failed=failed,
                           columns=columns, refresh=REFRESH_SEC, title="Farm")


def _this_server(queue: Any) -> dict[str, Any]:
    """The embedded mode's one node: this machine, running at most ``max_running`` tasks."""
    caps = web.services().this_machine()
    return {"name": "this server (embedded)", "hostname": caps.hostname, "cores": caps.cores,
            "gpu": caps.gpu, "nvenc": "1" if caps.nvenc else "0", "queues": "render,jobs",
            "state": f"up to {getattr(queue, 'max_running', 1)} tasks at once", "alive": True,
            "current_job": "", "seen_sec_ago": 0}
