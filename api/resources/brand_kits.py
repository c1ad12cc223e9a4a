"""Brand kits: extract from a website (a job), list, get, update."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from api import serialize
from api.auth import current_workspace_id
from api.docs import WITH_BODY, errors
from api.errors import detail, invalid
from api.schemas import (
    BrandExtractSchema,
    BrandKitListSchema,
    BrandKitPatchSchema,
    BrandKitSchema,
    JobSchema,
)
from shared.db import transaction
from shared.repos import brand_kits as repo

blp = Blueprint("brand_kits", __name__, url_prefix="/api/v1/brand-kits", description="Brand kits")
extract_blp = Blueprint("brand", __name__, url_prefix="/api/v1/brand", description="Brand extraction")


@extract_blp.route("/extract")
class BrandExtract(MethodView):
    @extract_blp.arguments(BrandExtractSchema, error_status_code=400)
    @extract_blp.response(202, JobSchema)
    @errors(extract_blp, 503, *WITH_BODY)
    def post(self, body):
        """Extract a brand from a website

        Starts a `brand_extract` job (stages `fetch`, `analyze`, `save`). It reads the site's
        name, tagline, colours, fonts and logo; when it succeeds the new kit is in the brand-kit
        list, its id is the job's `result.brand_kit_id`, and `brand_kit.extracted` is sent. A
        workspace's first extracted kit becomes its default while the neutral kit is its only
        one. Addresses that are not public (loopback, private, link-local, ...) fail the job.
        """
        return _services().jobs.request_brand_extract(current_workspace_id(), body["url"])


def _services():
    return current_app.extensions["reelfarm"]


@blp.route("")
class BrandKits(MethodView):
    @blp.response(200, BrandKitListSchema)
    @errors(blp)
    def get(self):
        """List brand kits

        Every brand kit of the workspace, the default kit first.
        """
        with _services().engine.connect() as conn:
            kits = repo.list_brand_kits(conn, current_workspace_id())
        return {"data": [serialize.brand_kit(k) for k in kits]}


@blp.route("/<string:kit_id>")
class BrandKit(MethodView):
    @blp.response(200, BrandKitSchema)
    @errors(blp, 404)
    def get(self, kit_id):
        """Get a brand kit"""
        with _services().engine.connect() as conn:
            return serialize.brand_kit(repo.get_brand_kit(conn, current_workspace_id(), kit_id))

    @blp.arguments(BrandKitPatchSchema, error_status_code=400)
    @blp.response(200, BrandKitSchema)
    @errors(blp, 404, *(400, 413, 415))
    def patch(self, body, kit_id):
        """Update a brand kit

        Rename it, replace its tokens, or make it the workspace's default (`is_default: true`).
        """
        if not body:
            raise invalid([detail("", "empty_update", "send name, tokens or is_default")])
        services = _services()
        with transaction(services.engine) as conn:
            kit = repo.update_brand_kit(conn, services.clock, current_workspace_id(), kit_id, **body)
        return serialize.brand_kit(kit)
