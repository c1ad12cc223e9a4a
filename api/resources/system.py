"""Unauthenticated routes: health and signed file downloads."""
from __future__ import annotations

from flask import request, send_file
from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.schemas import ErrorEnvelopeSchema, HealthSchema
from reelfarm.api.services import services

blp = Blueprint("system", __name__, description="Health and downloads")


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema, example=ex.RESPONSES["Health"])
    @blp.alt_response(503, schema=ErrorEnvelopeSchema, description="A dependency is down.", example=ex.error(503))
    @blp.doc(security=[], operationId="getHealth")
    def get(self):
        """Health

        Checks the database (and, in a farm, the queue). No authentication.
        """
        return services().health()


@blp.route("/files/<path:key>")
class File(MethodView):
    @blp.doc(security=[], operationId="downloadFile", responses={"200": {"description": "The file's bytes"},
                                     "403": {"description": "Tampered or expired URL"}})
    def get(self, key):
        """Download a file

        URLs handed out by the API are signed and expire; a tampered or expired one gives 403.
        """
        path, mimetype = services().signed_file(key, request.args.get("expires", ""), request.args.get("sig", ""))
        return send_file(path, mimetype=mimetype, conditional=True, max_age=0)
