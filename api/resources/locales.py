"""GET /locales: the languages translated copies can be made in."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.docs import errors
from reelfarm.api.schemas.locales import LocaleListSchema, LocaleQuerySchema
from reelfarm.api.services import services

blp = Blueprint("locales", __name__, url_prefix="/api/v1/locales", description="Translation locales")


@blp.route("")
class Locales(MethodView):
    @blp.arguments(LocaleQuerySchema, location="query", error_status_code=400)
    @blp.response(200, LocaleListSchema, example=ex.RESPONSES["LocaleList"])
    @blp.doc(operationId="listLocales")
    @errors(blp, 400)
    def get(self, query):
        """List locales

        The BCP 47 tags that `locales` of `POST /videos/{id}/variants` accepts for a video in
        `source` (default `en`): what the configured translation engines can do, sorted by
        tag, with each language's writing direction. Other tags give 400.
        """
        return services().jobs.locales(query["source"])
