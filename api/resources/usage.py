"""GET /usage: what the workspace's renders used on the farm and cost, over a period; and what
rendering a video would cost (POST /videos/{id}/renders/estimate, POST /videos/{id}/variants/estimate)."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import errors
from reelfarm.api.schemas.renders import RenderCreateSchema, VariantsCreateSchema
from reelfarm.api.schemas.usage import RenderEstimateSchema, UsageQuerySchema, UsageSchema, VariantsEstimateSchema
from reelfarm.api.services import services
from reelfarm.farm.services.estimates import Output

blp = Blueprint("usage", __name__, url_prefix="/api/v1/usage", description="What the workspace's renders used")
estimate_blp = Blueprint("estimates", __name__, url_prefix="/api/v1/videos",
                         description="What rendering a video would cost")


@blp.route("")
class Usage(MethodView):
    @blp.arguments(UsageQuerySchema, location="query", error_status_code=400)
    @blp.response(200, UsageSchema, example=ex.RESPONSES["Usage"])
    @blp.doc(operationId="getUsage")
    @errors(blp, 400)
    def get(self, query):
        """The workspace's usage

        Totals over the days `from` to `to` (UTC, both included): renders created, frames drawn
        and reused, CPU and GPU seconds and bytes stored on the farm's nodes (as measured there,
        each task attempt counted, retries included), and credits charged less refunds; broken down
        by `day` or `video` with `group_by`. Only the calling key's workspace. Renders, reused
        frames and credits count renders created in the period; the farm's figures count the tasks
        that ended in it. `from` after `to`, or a period over 366 days, is 400.
        """
        return services().usage.usage(current_workspace_id(), query.get("start"), query.get("end"),
                                      query.get("group_by"))


@estimate_blp.route("/<string:video_id>/renders/estimate")
class RenderEstimate(MethodView):
    @estimate_blp.arguments(RenderCreateSchema, error_status_code=400, example=ex.REQUESTS["RenderCreate"])
    @estimate_blp.response(200, RenderEstimateSchema, example=ex.RESPONSES["RenderEstimate"])
    @estimate_blp.doc(operationId="estimateRender")
    @errors(estimate_blp, 400, 404, 409)
    def post(self, body, video_id):
        """Estimate a render

        What asking for this render (the same body as `POST /videos/{id}/renders`) would cost,
        without asking: the frames the farm would draw and those it would reuse from segments the
        workspace keeps, the CPU and task seconds it would spend (a model of the document: frames,
        pixels, what moves, clips decoded; scaled by the farm's own recent measurements on the
        node kind that drew most, or a built-in baseline before any) and the credits it would
        charge. A render identical to one finished or in flight is named (`existing_render_id`),
        at 0. Creates and charges nothing.
        """
        return services().estimates.estimate(current_workspace_id(), video_id, _output(body, body["format"]))


@estimate_blp.route("/<string:video_id>/variants/estimate")
class VariantsEstimate(MethodView):
    @estimate_blp.arguments(VariantsCreateSchema, error_status_code=400, example=ex.REQUESTS["VariantsCreate"])
    @estimate_blp.response(200, VariantsEstimateSchema, example=ex.RESPONSES["VariantsEstimate"])
    @estimate_blp.doc(operationId="estimateVariants")
    @errors(estimate_blp, 400, 404, 409)
    def post(self, body, video_id):
        """Estimate variants

        One estimate for the renders `POST /videos/{id}/variants` would make of the current version
        (the same body; `locales` are not counted: their copies are rendered when ready): the
        figures summed over the formats, credits charged once, and each format's estimate in
        `renders`. Creates and charges nothing.
        """
        return services().estimates.estimate_variants(current_workspace_id(), video_id, body["formats"],
                                                      _output(body, body["formats"][0]))


def _output(body, fmt: str) -> Output:
    return Output(fmt, body["resolution"], body.get("fps"), body["container"], body["transparent"])
