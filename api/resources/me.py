"""GET /me: who the key belongs to and what it may do."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView
from flask_smorest import Blueprint

from api.docs import errors
from api.schemas import MeSchema

blp = Blueprint("me", __name__, url_prefix="/api/v1/me", description="The calling key's workspace")


@blp.route("")
class Me(MethodView):
    @blp.response(200, MeSchema)
    @errors(blp)
    def get(self):
        """The key's workspace

        Its workspace, plan, credit balance and rate-limit policy.
        """
        caller = g.caller
        ws = caller.workspace
        limit = current_app.extensions["reelfarm"].settings.rate_limit_for(ws.plan)
        return {"workspace": {"id": ws.id, "name": ws.name, "plan": ws.plan, "credits": ws.credits},
                "rate_limit": {"limit": limit.limit, "window_sec": limit.window_sec, "policy": limit.policy},
                "api_key": {"id": caller.key_id, "prefix": caller.key_prefix}}
