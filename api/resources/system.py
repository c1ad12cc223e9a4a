"""Unauthenticated routes: health and signed file downloads."""
from __future__ import annotations

import mimetypes

from flask import abort, current_app, request, send_file
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import text

from api.errors import Forbidden, Unavailable
from api.schemas import ErrorEnvelopeSchema, HealthSchema
from farm.errors import QueueUnavailable

blp = Blueprint("system", __name__, description="Health and downloads")


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema)
    @blp.alt_response(503, schema=ErrorEnvelopeSchema, description="A dependency is down.")
    @blp.doc(security=[])
    def get(self):
        """Health

        Checks the database (and, in a farm, the queue). No authentication.
        """
        services = current_app.extensions["reelfarm"]
        try:
            with services.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # any database failure means unhealthy
            raise Unavailable(f"database unavailable: {type(exc).__name__}") from exc
        try:
            services.farm.queue.ping()
        except QueueUnavailable as exc:
            raise Unavailable(f"queue unavailable: {exc}") from exc
        return {"status": "ok", "checks": {"database": "ok", "queue": "ok"}}


@blp.route("/files/<path:key>")
class File(MethodView):
    @blp.doc(security=[], responses={"200": {"description": "The file's bytes"},
                                     "403": {"description": "Tampered or expired URL"}})
    def get(self, key):
        """Download a file

        URLs handed out by the API are signed and expire; a tampered or expired one gives 403.
        """
        storage = current_app.extensions["reelfarm"].storage
        verify = getattr(storage, "verify", None)
        if verify is None:
            abort(404)
        if not verify(key, request.args.get("expires", ""), request.args.get("sig", "")):
            raise Forbidden("This download link is invalid or has expired; fetch the resource again for a fresh one.",
                            code="forbidden")
        if not storage.exists(key):
            abort(404)
        mimetype = mimetypes.guess_type(key)[0] or "application/octet-stream"
        return send_file(storage.path(key), mimetype=mimetype, conditional=True, max_age=0)
