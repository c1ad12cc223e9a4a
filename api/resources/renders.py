"""Renders (MP4), stills and variants of a video's current version."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import WITH_BODY, errors
from reelfarm.api.schemas.jobs import JobSchema
from reelfarm.api.schemas.renders import (
    RenderCreateSchema,
    RenderListSchema,
    RenderSchema,
    StillsCreateSchema,
    VariantsCreateSchema,
    VariantsSchema,
)
from reelfarm.api.services import services

blp = Blueprint("renders", __name__, url_prefix="/api/v1", description="Renders, stills and variants")

@blp.route("/videos/<string:video_id>/renders")
class VideoRenders(MethodView):
    @blp.arguments(RenderCreateSchema, error_status_code=400, example=ex.REQUESTS["RenderCreate"])
    @blp.response(202, RenderSchema, example=ex.RESPONSES["RenderQueued"])
    @blp.doc(operationId="renderVideo")
    @errors(blp, 402, 404, 409, 503, *WITH_BODY)
    def post(self, body, video_id):
        """Render an MP4

        Renders the current version in one format. An identical render (same version, format,
        resolution, fps and renderer) that succeeded or is still in flight is returned instead
        of a new one. The first render of a version charges `ceil(duration / 60)` credits;
        every later render of it is free; a failed or canceled render refunds.

        `priority` places it in the workspace's line on the farm: the farm serves the workspaces
        with work waiting in turn (by plan weight, in frames), a workspace's renders in turn, and
        a workspace's `low` renders only while none of its `normal` ones waits. While it waits,
        `queue` says how many frames are ahead of it and when it should start.

        An identical render in flight asked for at a higher `priority` takes the higher one: the
        answer is that render, now `normal`, and its chunks still waiting take their place as
        `normal` ones (chunks already running go on as they are). Asking at a lower priority never
        lowers it.

        `container` asks for a `gif` or `webm` file instead of an MP4 (`transparent` with `webm`):
        another render than the MP4's, free like it once the version is paid. A GIF is made at
        most 720 px on its short side and 24 fps; larger values are lowered and named in
        `clamped`.

        `pool` runs it on the farm's nodes of that pool (nodes carrying every tag of it, such as
        `region=eu`): one of the pools the farm's operator limited the workspace to, else 400
        `forbidden_pool`; without it, the workspace's default pool, or any node. An identical render
        is the same render whatever pool it is asked in (the file does not depend on where it is drawn).
        While no live node serves its pool, `held_up` says `no_node_in_pool`.
        """
        return services().renders.request(current_workspace_id(), video_id, body["format"],
                                           body["resolution"], body.get("fps"), body["priority"],
                                           body["container"], body["transparent"], body.get("pool"))

    @blp.response(200, RenderListSchema, example=ex.RESPONSES["RenderList"])
    @blp.doc(operationId="listRenders")
    @errors(blp, 404)
    def get(self, video_id):
        """List a video's renders

        Newest first.
        """
        return {"data": services().renders.list_for_video(current_workspace_id(), video_id)}


@blp.route("/renders/<string:render_id>")
class Render(MethodView):
    @blp.response(200, RenderSchema, example=ex.RESPONSES["Render"])
    @blp.doc(operationId="getRender")
    @errors(blp, 404)
    def get(self, render_id):
        """Get a render

        Status, progress (frames done over frames total) and, once succeeded, signed MP4 and
        poster URLs valid for 7 days (each GET signs them afresh).
        """
        return services().renders.get(current_workspace_id(), render_id)


@blp.route("/renders/<string:render_id>/cancel")
class RenderCancel(MethodView):
    @blp.response(200, RenderSchema, example={**ex.RESPONSES["RenderQueued"], "status": "canceled"})
    @blp.doc(operationId="cancelRender")
    @errors(blp, 404, 409)
    def post(self, render_id):
        """Cancel a render

        A queued or running render becomes `canceled` and its charge is refunded; a finished
        one gives 409.
        """
        return services().renders.cancel(current_workspace_id(), render_id)


@blp.route("/videos/<string:video_id>/stills")
class Stills(MethodView):
    @blp.arguments(StillsCreateSchema, error_status_code=400, example=ex.REQUESTS["StillsCreate"])
    @blp.response(202, JobSchema, example=ex.RESPONSES["StillsJob"])
    @blp.doc(operationId="renderStills")
    @errors(blp, 404, 409, 503, *WITH_BODY)
    def post(self, body, video_id):
        """Render still frames

        Starts a `stills` job for the current version: 1 to 20 times, each within the video.
        When it succeeds its result holds PNG URLs signed for 10 minutes.
        """
        return services().jobs.request_stills(current_workspace_id(), video_id, body["times"], body.get("format"))


@blp.route("/videos/<string:video_id>/variants")
class Variants(MethodView):
    @blp.arguments(VariantsCreateSchema, error_status_code=400, example=ex.REQUESTS["VariantsCreate"])
    @blp.response(202, VariantsSchema, example=ex.RESPONSES["Variants"])
    @blp.doc(operationId="renderVariants")
    @errors(blp, 402, 404, 409, 503, *WITH_BODY)
    def post(self, body, video_id):
        """Render variants

        Renders the current version in several formats at once (deduplicated and charged like
        single renders). Each of `locales` (Pro and Agency plans; see `GET /api/v1/locales`)
        becomes a translated copy: a new `draft` video with its own `generate` job (stages
        `translate`, `fit`, `save`) that translates every text, re-fits it, switches to
        right-to-left layout for Arabic, Hebrew, Persian and Urdu and picks fonts for the script;
        the copy is then `ready` (version source `translate`). The renders cover the original;
        render each copy when it is ready. Large sets are batch work: ask for them with
        `priority: "low"` so the workspace's other renders go first. `container` and
        `transparent` apply to every format's render, as for a single render, and so does `pool`.
        """
        return services().videos.request_variants(current_workspace_id(), video_id, body["formats"],
                                                  body["resolution"], body.get("locales") or [], body["priority"],
                                                  body["container"], body["transparent"], body.get("pool"))


jobs_blp = Blueprint("jobs", __name__, url_prefix="/api/v1/jobs", description="Asynchronous jobs")


@jobs_blp.route("/<string:job_id>")
class Job(MethodView):
    @jobs_blp.response(200, JobSchema, example=ex.RESPONSES["Job"])
    @jobs_blp.doc(operationId="getJob")
    @errors(jobs_blp, 404)
    def get(self, job_id):
        """Get a job

        Progress and result of an asynchronous job (brand extraction, stills, generation).
        """
        return services().jobs.get(current_workspace_id(), job_id)


@jobs_blp.route("/<string:job_id>/cancel")
class JobCancel(MethodView):
    @jobs_blp.response(200, JobSchema, example={**ex.RESPONSES["Job"], "status": "canceled", "finished_at": ex.FINISHED})
    @jobs_blp.doc(operationId="cancelJob")
    @errors(jobs_blp, 404, 409)
    def post(self, job_id):
        """Cancel a job

        A queued or running job becomes `canceled`; a finished one gives 409.
        """
        return services().jobs.cancel(current_workspace_id(), job_id)
