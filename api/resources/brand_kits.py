"""Brand kits: extract from a website (a job), list, get, update."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import WITH_BODY, errors
from reelfarm.api.schemas.brand_kits import (
    BrandExtractSchema,
    BrandKitListSchema,
    BrandKitPatchSchema,
    BrandKitSchema,
)
from reelfarm.api.schemas.jobs import JobSchema
from reelfarm.api.services import services

blp = Blueprint("brand_kits", __name__, url_prefix="/api/v1/brand-kits", description="Brand kits")
extract_blp = Blueprint("brand", __name__, url_prefix="/api/v1/brand", description="Brand extraction")


@extract_blp.route("/extract")
class BrandExtract(MethodView):
    @extract_blp.arguments(BrandExtractSchema, error_status_code=400, example=ex.REQUESTS["BrandExtract"])
    @extract_blp.response(202, JobSchema, example=ex.RESPONSES["JobDone"])
    @extract_blp.doc(operationId="extractBrand")
    @errors(extract_blp, 503, *WITH_BODY)
    def post(self, body):
        """Extract a brand from a website

        Starts a `brand_extract` job (stages `fetch`, `analyze`, `save`). It reads the site's
        name, tagline, colours, fonts and logo; when it succeeds the new kit is in the brand-kit
        list, its id is the job's `result.brand_kit_id`, and `brand_kit.extracted` is sent. A
        workspace's first extracted kit becomes its default while the neutral kit is its only
        one. Addresses that are not public (loopback, private, link-local, ...) fail the job.
        """
        return services().jobs.request_brand_extract(current_workspace_id(), body["url"])


@blp.route("")
class BrandKits(MethodView):
    @blp.response(200, BrandKitListSchema, example=ex.RESPONSES["BrandKitList"])
    @blp.doc(operationId="listBrandKits")
    @errors(blp)
    def get(self):
        """List brand kits

        Every brand kit of the workspace, the default kit first.
        """
        return {"data": services().brand_kits.list(current_workspace_id())}


@blp.route("/<string:kit_id>")
class BrandKit(MethodView):
    @blp.response(200, BrandKitSchema, example=ex.RESPONSES["BrandKit"])
    @blp.doc(operationId="getBrandKit")
    @errors(blp, 404)
    def get(self, kit_id):
        """Get a brand kit"""
        return services().brand_kits.get(current_workspace_id(), kit_id)

    @blp.arguments(BrandKitPatchSchema, error_status_code=400, example=ex.REQUESTS["BrandKitPatch"])
    @blp.response(200, BrandKitSchema, example=ex.RESPONSES["BrandKit"])
    @blp.doc(operationId="updateBrandKit")
    @errors(blp, 404, *(400, 413, 415))
    def patch(self, body, kit_id):
        """Update a brand kit

        Rename it, replace its tokens, or make it the workspace's default (`is_default: true`).
        """
        return services().brand_kits.update(current_workspace_id(), kit_id, body, any_family=True)

    @blp.response(204)
    @blp.doc(operationId="deleteBrandKit")
    @errors(blp, 404, 409)
    def delete(self, kit_id: str) -> None:
        """Delete a brand kit

        Videos made with it keep their look (their versions name its colours, fonts and logo) and
        no longer name the kit. The workspace's default kit cannot be deleted (409 `default_brand_kit`):
        make another kit the default first.
        """
        services().brand_kits.delete(current_workspace_id(), kit_id)
