"""GET /me: who the key belongs to and what it may do."""
from __future__ import annotations

from flask import g
from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.docs import errors
from reelfarm.api.schemas.me import MeSchema
from reelfarm.api.services import services

blp = Blueprint("me", __name__, url_prefix="/api/v1/me", description="The calling key's workspace")


@blp.route("")
class Me(MethodView):
    @blp.response(200, MeSchema, example=ex.RESPONSES["Me"])
    @blp.doc(operationId="getMe")
    @errors(blp)
    def get(self):
        """The key's workspace

        Its workspace, plan, credit balance and rate-limit policy, and its media library's bytes
        against the plan's quota (`library`).
        """
        return services().me(g.caller)
