"""Brand kits: list, get, update."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from api import serialize
from api.auth import current_workspace_id
from api.docs import errors
from api.errors import detail, invalid
from api.schemas import BrandKitListSchema, BrandKitPatchSchema, BrandKitSchema
from shared.db import transaction
from shared.repos import brand_kits as repo

blp = Blueprint("brand_kits", __name__, url_prefix="/api/v1/brand-kits", description="Brand kits")


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
