"""The operator API, ``/api/v1/operator/...``: the farm's status and the operator's controls over
HTTP, for the farm's own tools (an on-call script, a dashboard), not for workspaces.

It answers only an operator key (``Authorization: Bearer <key>``), one of
``REELFARM_OPERATOR_KEYS`` (``name:key,...``); API keys and console sessions do not open it, and
without operator keys it answers 404 (it is not there). Every control is the command line's
(``reelfarm farm render ...``, ``farm pause``/``resume``; ``reelfarm.farm.services.rendercontrols``)
and is recorded in the audit log with the actor ``key:<name>``. It stands outside the published
OpenAPI document (which is the workspaces' API) and its rate limits.

- ``GET  /farm``: what ``reelfarm farm status --json`` shows.
- ``POST /farm/pause`` (``{"reason"}``), ``POST /farm/resume``: on a farm (409 ``not_a_farm`` in the
  embedded mode).
- ``POST /renders/<id>/suspend`` (``{"reason"}``), ``/resume``, ``/requeue``, ``/priority``
  (``{"priority": "normal"|"low"}``); ``POST /workspaces/<id>/suspend|resume|priority``: the
  workspace's live renders. Each answers what was done to each render (``changed`` false where
  it changed nothing); a render that has finished answers 409, an unknown id 404.
- ``GET /workspaces/<id>/pools``, ``PUT /workspaces/<id>/pools`` (``{"pools": ["region=eu", ...]}``),
  ``DELETE /workspaces/<id>/pools``: the pools of nodes the workspace's renders are limited to
  (``reelfarm farm pool show|set|clear``; ``api.operatorpools``).
- ``GET /renders?workspace=&status=&limit=``: the farm's recent renders (``reelfarm farm render history``).
- ``GET /renders/<id>/logs``: the render's log lines from every node (``reelfarm farm render logs``).
- ``GET /audit?limit=&action=&target=&workspace=&actor=``: the audit log, newest first.
"""
from __future__ import annotations

import time
from typing import Any

from flask import Response, jsonify, request

from reelfarm.api.errors import ConflictError, NotFoundError, ValidationFailed
from reelfarm.api.operatorbase import _actor, _body, blp
from reelfarm.api.services import services
from reelfarm.farm.services.audit import AuditEntry, AuditLog
from reelfarm.farm.services.fairness import PRIORITIES

RENDER_ACTIONS = ("suspend", "resume", "requeue", "priority")
WORKSPACE_ACTIONS = ("suspend", "resume", "priority")


def _audit() -> AuditLog:
    return services().audit_log


def _controls() -> Any:
    from reelfarm.farm.runtime.embeddedholds import EmbeddedHolds
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.runtime.renderholds import RedisHolds
    from reelfarm.farm.services.rendercontrols import RenderControls

    svc = services()
    queue = svc.farm.queue
    if isinstance(queue, RQQueue):
        return RenderControls(svc.engine, svc.clock, RedisHolds(queue.dispatcher), _audit(), rq_id=queue.rq_job_id)
    return RenderControls(svc.engine, svc.clock, EmbeddedHolds(svc.engine, svc.clock), _audit())


def _dispatcher() -> Any:
    queue = services().farm.queue
    dispatcher = getattr(queue, "dispatcher", None)
    if dispatcher is None:
        raise ConflictError("This server runs renders itself (the embedded mode): there is no farm to pause.",
                            code="not_a_farm")
    return dispatcher


def _priority(body: dict[str, Any]) -> str:
    priority = body.get("priority")
    if priority not in PRIORITIES:
        raise ValidationFailed("The body names no priority.", [{"field": "/priority", "code": "invalid_choice",
                                                               "message": f"Must be one of: {', '.join(PRIORITIES)}."}])
    return str(priority)


@blp.get("/farm")
def farm_status() -> Response:
    from reelfarm.farm.runtime.statusview import typed_status

    _actor()
    return jsonify(typed_status(services().farm_status()))


@blp.post("/farm/pause")
def pause() -> Response:
    actor, body = _actor(), _body()
    dispatcher = _dispatcher()
    before = dispatcher.paused()
    record = dispatcher.pause(actor, str(body.get("reason", "")))
    if before is None:
        _audit().record(AuditEntry(actor, "farm.pause", "farm", details={"reason": record["reason"]}))
    return jsonify({**record, "changed": before is None})


@blp.post("/farm/resume")
def resume() -> Response:
    actor = _actor()
    resumed = _dispatcher().resume()
    if resumed:
        _audit().record(AuditEntry(actor, "farm.resume", "farm"))
    return jsonify({"resumed": resumed})


@blp.post("/renders/<render_id>/<action>")
def render_control(render_id: str, action: str) -> Response:
    actor, body = _actor(), _body()
    if action not in RENDER_ACTIONS:
        raise NotFoundError(f"No operator control {action!r}; one of {', '.join(RENDER_ACTIONS)}.")
    controls = _controls()
    if action == "requeue":
        return jsonify([controls.requeue(actor, render_id, _enqueuer()).as_dict()])
    return jsonify([d.as_dict() for d in _apply(controls, actor, action, body, render_id=render_id)])


@blp.post("/workspaces/<workspace_id>/<action>")
def workspace_control(workspace_id: str, action: str) -> Response:
    actor, body = _actor(), _body()
    if action not in WORKSPACE_ACTIONS:
        raise NotFoundError(f"No operator control {action!r}; one of {', '.join(WORKSPACE_ACTIONS)}.")
    return jsonify([d.as_dict() for d in _apply(_controls(), actor, action, body, workspace_id=workspace_id)])


def _apply(controls: Any, actor: str, action: str, body: dict[str, Any], **target: str) -> list[Any]:
    if action == "suspend":
        return controls.suspend(actor, reason=str(body.get("reason", "")), **target)
    if action == "resume":
        return controls.resume(actor, **target)
    return controls.set_priority(actor, _priority(body), **target)


def _enqueuer() -> Any:
    from reelfarm.farm.runtime.context import TaskContext
    from reelfarm.farm.runtime.requeue import requeue_render

    svc = services()
    ctx = TaskContext(engine=svc.engine, storage=svc.storage, clock=svc.clock, progress=svc.farm.progress,
                      settings=svc.settings)

    def enqueue(render: Any) -> list[str]:
        ctx.progress.set_total(render.id, render.frames or 0)
        return requeue_render(ctx, svc.farm.queue, render)

    return enqueue


@blp.get("/renders")
def render_history() -> Response:
    """The farm's recent renders (``reelfarm farm render history``): ``?workspace=&status=&limit=``."""
    from reelfarm.farm.services.renderhistory import HISTORY_LIMIT
    from reelfarm.farm.services.renderhistory import render_history as history

    _actor()
    try:
        limit = int(request.args.get("limit", 20))
    except ValueError:
        limit = 0
    if not 1 <= limit <= HISTORY_LIMIT:
        raise ValidationFailed(f"limit is a whole number from 1 to {HISTORY_LIMIT}.",
                               [{"field": "/limit", "code": "out_of_range", "message": f"from 1 to {HISTORY_LIMIT}"}])
    found = history(services().engine, workspace_id=request.args.get("workspace") or None,
                    status=request.args.get("status") or None, limit=limit)
    return jsonify({"data": found})


@blp.get("/renders/<render_id>/logs")
def render_logs(render_id: str) -> Response:
    """The render's log lines from every node that worked on it (``reelfarm farm render logs``)."""
    from reelfarm.farm.runtime.renderlogs import render_log_lines

    _actor()
    dispatcher = getattr(services().farm.queue, "dispatcher", None)
    if dispatcher is None:
        raise ConflictError("The embedded mode keeps no copy of a render's lines: they are in the output of "
                            "`reelfarm serve`.", code="not_a_farm")
    queue: Any = services().farm.queue  # an RQQueue: the embedded one has no dispatcher
    lines = render_log_lines(queue.redis, queue.namespace, render_id)
    if not lines:
        raise NotFoundError(f"No lines of render {render_id} (unknown, or more than a week old).")
    return jsonify({"data": lines})


@blp.get("/audit")
def audit() -> Response:
    _actor()
    args = request.args
    try:
        limit = int(args.get("limit", 50))
    except ValueError:
        limit = 0
    if not 1 <= limit <= 1000:
        raise ValidationFailed("limit is a whole number from 1 to 1000.", [{"field": "/limit", "code": "out_of_range",
                                                                           "message": "from 1 to 1000"}])
    kind, _, target_id = args.get("target", "").partition(":")
    entries = _audit().entries(limit, action=args.get("action") or None, target_kind=kind or None,
                               target_id=target_id or None, workspace_id=args.get("workspace") or None,
                               actor=args.get("actor") or None)
    return jsonify({"data": [e.as_dict() for e in entries], "at": time.time()})


def install(app: Any) -> None:
    """Register the operator API (``reelfarm.api.app.create_app``)."""
    from reelfarm.api import operatorpools  # noqa: F401 - its views join the blueprint

    app.register_blueprint(blp)
