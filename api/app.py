"""The application factory: wires settings, services, blueprints, errors and the OpenAPI document."""
from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, g, request
from flask_smorest import Api
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from reelfarm.api import document, examples, metrics, operator
from reelfarm.api import errors as err
from reelfarm.api.auth import PUBLIC_ENDPOINTS, Caller, authenticate
from reelfarm.api.document import ServedDocument
from reelfarm.api.jsonbody import check_body
from reelfarm.api.preconditions import refused
from reelfarm.api.ratelimit import Quota, RateLimiterUnavailable
from reelfarm.api.resources import (
    assets,
    brand_kits,
    comments,
    locales,
    me,
    renders,
    stories,
    system,
    usage,
    videos,
    webhooks,
)
from reelfarm.api.schemas.common import ErrorEnvelopeSchema, VideoDocField
from reelfarm.api.server import ENVIRON_REQUEST_ID
from reelfarm.api.services import Services
from reelfarm.farm.services.errors import (
    AllowanceExceeded,
    InvalidRequest,
    PlanFeatureUnavailable,
    QueueUnavailable,
    QuotaExceeded,
    StateConflict,
)
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES
from reelfarm.shared import logs, storage
from reelfarm.shared.config import Settings
from reelfarm.shared.errors import InsufficientCredits, NotFound
from reelfarm.shared.ids import is_uuid
from reelfarm.studio.errors import (
    BriefRejected,
    DefaultBrandKitDeletion,
    InvalidBuildRequestError,
    InvalidFieldsError,
    UnknownStoryError,
    VersionConflict,
)
from reelfarm.studio.videos import DocLintError, VideoStateError

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_BODY_METHODS = {"POST", "PUT", "PATCH"}
log = logging.getLogger("reelfarm.api")
BLUEPRINTS = (system.blp, me.blp, brand_kits.extract_blp, brand_kits.blp, stories.blp, locales.blp, videos.blp,
              comments.blp, renders.blp, renders.jobs_blp, webhooks.blp, assets.blp, usage.blp,
              usage.estimate_blp)


# The OpenAPI document of each configuration (``_config``'s values) this process has built, by
# the JSON of those values. It is the same for every app a process makes with one configuration
# (its ``servers`` are set per request): flask-smorest builds it from deep copies of every
# operation's documentation, about a tenth of a second of a CPU an app, so later apps (each
# gunicorn worker's, a test's) register their routes and share the first one's document.
_DOCUMENTS: dict[str, Any] = {}


class ReelfarmApi(ServedDocument, Api):
    """flask-smorest's Api with our error envelope instead of its own, serving the document with
    ``servers`` per request and Swagger UI from local assets (``reelfarm.api.document``). The `default`
    response it documents on every operation is that envelope too."""

    ERROR_SCHEMA = ErrorEnvelopeSchema
    documented = False  # the spec is a document already built: blueprints add their routes only

    def handle_http_exception(self, error: HTTPException) -> Response:
        return err.handle_http_exception(error)

    def register_blueprint(self, blp: Any, *, parameters: Any = None, **options: Any) -> None:
        if not self.documented:
            super().register_blueprint(blp, parameters=parameters, **options)
            return
        self._app.extensions["flask-smorest"]["blp_name_to_api"][options.get("name", blp.name)] = self
        self._app.register_blueprint(blp, **options)


def create_app(settings: Settings | None = None, services: Services | None = None,
               start_farm: bool = False, extend: Callable[[Flask], None] | None = None) -> Flask:
    """Build the WSGI app; `services` may be given to share collaborators (tests, workers).

    `extend` registers what else the app serves (the composition root, ``reelfarm/app.py``,
    registers the web console with it); the API itself imports nothing of the console.

    `start_farm` starts this process's share of the farm (serving processes do): the embedded
    executor, or with Redis, whose `reelfarm worker` nodes run the tasks, the farm's repair timer.
    """
    settings = settings or (services.settings if services else Settings.from_env())
    services = services or Services.from_settings(settings)
    app = Flask("reelfarm")
    if settings.trusted_proxies:
        # Behind a load balancer or ingress: the client's address (sign-in throttling, logs), the
        # scheme (Secure cookies) and the host (the document's `servers`) come from the last
        # `trusted_proxies` hops' X-Forwarded-* headers; a client cannot forge the hops before.
        n = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)  # type: ignore[method-assign]
    config = _config(settings)
    app.config.update(config)
    app.extensions["reelfarm"] = services
    api = ReelfarmApi(app)
    key = json.dumps(config, sort_keys=True, default=str)
    if key in _DOCUMENTS:
        api.spec, api.documented = _DOCUMENTS[key], True
    else:
        _document(api)
    for blueprint in BLUEPRINTS:
        api.register_blueprint(blueprint)
    if extend is not None:
        extend(app)  # the web console at /app: session sign-in, CSRF, HTML error pages
    if not api.documented:
        _refine(api)
        _DOCUMENTS[key] = api.spec
    metrics.install(app)  # before the other hooks, so it times them too
    operator.install(app)  # /api/v1/operator: operator keys only, outside the published document
    _install_hooks(app, services)
    logging.getLogger("reelfarm").setLevel(settings.log_level)
    if start_farm:
        services.farm.start()  # embedded: the executor; RQ: farm repairs even while no render node is alive
    return app


def _config(settings: Settings) -> dict[str, Any]:
    """Flask's and flask-smorest's settings: the document's title, version, servers and security."""
    return dict(
        API_TITLE="reelfarm", API_VERSION="v1", OPENAPI_VERSION="3.1.0",
        OPENAPI_URL_PREFIX="/api/v1", OPENAPI_JSON_PATH="openapi.json",
        MAX_CONTENT_LENGTH=settings.max_body_bytes, JSON_SORT_KEYS=False, REELFARM_PUBLIC_URL=settings.public_url,
        **document.config("/api/v1"),
        API_SPEC_OPTIONS={
            "info": {"description": (
                "Brand kits, stories, videos with immutable versions, renders and jobs. Request bodies are "
                "JSON objects of the documented types (no numbers as strings, no 0/1 for booleans), without "
                "unknown fields; text is Unicode without NUL characters or unpaired surrogates. A PATCH of a "
                "video's `doc` is also linted (unknown references, timing) and a `fields` patch is checked "
                "against the video's own story; both give 400 with every problem listed."),
                "license": {"name": "Proprietary"}},
            "servers": [{"url": settings.public_url}],  # served: the URL the request reached (api.document)
            "security": [{"bearerAuth": []}],
        },
    )


def _document(api: Api) -> None:
    from reelfarm.renderer.model import doc_schema

    api.spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer",
                                                       "description": "rf_live_ workspace API key"})
    for name, schema in _videodoc_components(doc_schema()).items():
        api.spec.components.schema(name, component=schema)
    plugin = api.ma_plugin

    def videodoc(self: Any, field: Any, **_: Any) -> dict[str, Any]:
        return {"$ref": "#/components/schemas/VideoDoc"} if isinstance(field, VideoDocField) else {}
    plugin.converter.add_attribute_function(videodoc)


def _refine(api: Api) -> None:
    from reelfarm.api.contract import refine
    from reelfarm.studio.stories import list_stories

    refine(api.spec.components.schemas, list_stories())
    # flask-smorest registers its own pagination header schema; pages here are `next_cursor` bodies.
    api.spec.components.schemas.pop("PaginationMetadata", None)
    default = api.spec.components.responses[api.DEFAULT_ERROR_RESPONSE_NAME]
    default["content"]["application/json"]["example"] = examples.error(500)


def _videodoc_components(schema: dict[str, Any]) -> dict[str, Any]:
    """The VideoDoc JSON Schema as OpenAPI components, `$defs` lifted to `VideoDoc.<name>`."""
    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (f"#/components/schemas/VideoDoc.{v.rsplit('/', 1)[-1]}"
                        if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/") else rewrite(v))
                    for k, v in node.items() if k not in ("$schema", "$id", "$defs")}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node
    components = {"VideoDoc": rewrite(schema)}
    for name, sub in schema.get("$defs", {}).items():
        components[f"VideoDoc.{name}"] = rewrite(sub)
    return components


def _install_hooks(app: Flask, services: Services) -> None:
    _install_links(app, services)
    _install_request_checks(app, services)
    _install_error_handlers(app)


def _install_links(app: Flask, services: Services) -> None:
    if not services.settings.public_url_configured:
        # No REELFARM_PUBLIC_URL: links handed out lead to the address this request reached (a
        # server reached as localhost and as its LAN name answers each with its own).
        @app.before_request
        def served_here() -> None:
            g.served_at = storage.serve_at(request.host_url)

        @app.teardown_request
        def served_done(_error: BaseException | None) -> None:
            token = g.pop("served_at", None)
            if token is not None:
                storage.reset_served_at(token)


def _install_request_checks(app: Flask, services: Services) -> None:
    """Per request: its id, its caller (401, 403, 429), its path ids and body (404, 415, 400), its
    idempotency key; then the per-response headers."""

    @app.before_request
    def begin() -> Response | None:
        sent = request.headers.get("X-Request-Id", "")
        g.request_id = sent if _REQUEST_ID.match(sent) else f"req_{secrets.token_hex(12)}"
        request.environ[ENVIRON_REQUEST_ID] = g.request_id  # for the server's log of a request cut at shutdown
        logs.clear_context()
        logs.bind_context(request_id=g.request_id)
        if request.endpoint in PUBLIC_ENDPOINTS | document.PUBLIC or request.endpoint is None \
                or request.blueprint in ("console", "operator"):  # each its own sign-in (operator keys: api/operator.py)
            return None
        caller = authenticate(services)
        logs.bind_context(workspace_id=caller.workspace.id)
        _count_request(services, caller)
        _check_path_and_body()
        return services.idempotency.begin(caller.workspace.id)

    @app.after_request
    def finish(response: Response) -> Response:
        services.idempotency.finish(response)  # before the per-response headers below
        quota: Quota | None = g.get("rate_quota")
        if quota is not None:
            response.headers.update(quota.headers())
        response.headers["X-Request-Id"] = getattr(g, "request_id", "")
        response.headers.pop("Server", None)
        return response

    @app.teardown_request
    def abandon(_error: BaseException | None) -> None:
        services.idempotency.abandon()  # a no-op unless no response was ever finished


def _check_path_and_body() -> None:
    """Ids in the path that cannot name an object are 404; a body that is not JSON is 415, JSON
    the API does not take (duplicate keys, NUL, unpaired surrogates) 400."""
    for name, value in (request.view_args or {}).items():
        if name in _ID_KINDS and not is_uuid(value):  # ids are UUIDs; anything else names no object
            raise err.NotFoundError(f"No such {_ID_KINDS[name]} in this workspace.")
        if name == "number" and not 1 <= value <= _MAX_VERSION:  # no such version, and no overflow
            raise err.NotFoundError("No such version of this video.")
    if request.endpoint == assets.UPLOAD_ENDPOINT and request.method == "POST":
        # an upload is multipart (its limits, larger than a JSON body's, are the library's own)
        request.max_content_length = MAX_UPLOAD_BYTES + 64 * 1024
        g.upload_limit = MAX_UPLOAD_BYTES  # a body past it is 413 on `/file`, as a file past it read
        if request.mimetype != "multipart/form-data":
            raise _UnsupportedMediaType("Send the file as multipart/form-data in a part named 'file'.")
        return
    if request.method in _BODY_METHODS and request.content_length and not request.is_json:
        raise _unsupported()
    if request.method in _BODY_METHODS and request.is_json and (raw := request.get_data(cache=True)):
        check_body(raw)


def _install_error_handlers(app: Flask) -> None:
    """Every domain error in the one error envelope, with its status."""
    app.register_error_handler(err.ApiError, err.handle_api_error)
    app.register_error_handler(NotFound, lambda e: err.handle_api_error(err.NotFoundError(_not_found(e))))
    app.register_error_handler(UnknownStoryError, lambda e: err.handle_api_error(
        err.invalid([err.detail("/storyId", "unknown_story", f"no story {e.story_id!r}; see GET /api/v1/stories")])))
    app.register_error_handler(InvalidFieldsError, lambda e: err.handle_api_error(err.invalid(e.details)))
    app.register_error_handler(InvalidBuildRequestError, lambda e: err.handle_api_error(
        err.invalid([err.detail(_BUILD_FIELDS.get(e.field, "/" + e.field), "invalid", str(e))])))
    app.register_error_handler(DocLintError, lambda e: err.handle_api_error(err.invalid(e.details)))
    app.register_error_handler(VideoStateError, lambda e: err.handle_api_error(err.ConflictError(str(e), code=e.code)))
    app.register_error_handler(VersionConflict, lambda e: err.handle_api_error(refused(e)))
    app.register_error_handler(DefaultBrandKitDeletion, lambda e: err.handle_api_error(
        err.ConflictError(str(e), code=e.code)))
    app.register_error_handler(InsufficientCredits, lambda e: err.handle_api_error(
        err.InsufficientCreditsError(str(e))))
    app.register_error_handler(InvalidRequest, lambda e: err.handle_api_error(err.refusal(e.details)))
    app.register_error_handler(BriefRejected, lambda e: err.handle_api_error(
        err.invalid([err.detail("/brief", "moderation_rejected", e.reason)])))
    app.register_error_handler(StateConflict, lambda e: err.handle_api_error(err.ConflictError(str(e), code=e.code)))
    app.register_error_handler(PlanFeatureUnavailable, lambda e: err.handle_api_error(
        err.Forbidden(str(e), code="plan_feature_unavailable")))
    app.register_error_handler(QuotaExceeded, lambda e: err.handle_api_error(
        err.QuotaExceededError(str(e))))
    app.register_error_handler(AllowanceExceeded, lambda e: err.handle_api_error(err.allowance_exceeded(e)))
    app.register_error_handler(QueueUnavailable, lambda e: err.handle_api_error(
        err.Unavailable("The render queue is unavailable; nothing was created. Try again shortly.",
                        headers={"Retry-After": "5"})))
    app.register_error_handler(Exception, err.handle_unexpected)


def _count_request(services: Services, caller: Caller) -> None:
    """Count the request against its key's rate limit; 429 over it.

    Fails open: when the counters (Redis) cannot be reached the request is served, without
    RateLimit headers since no count is known, and a warning is logged.
    """
    rate = services.settings.rate_limit_for(caller.workspace.plan)
    if rate is None:
        return
    try:
        quota = services.rate_limiter.hit(caller.key_id, rate)
    except RateLimiterUnavailable as exc:
        log.warning("rate limiter unavailable, request not counted (request_id=%s): %s", g.request_id, exc)
        return
    g.rate_quota = quota
    if not quota.allowed:
        raise err.RateLimited(
            f"Rate limit of {rate.limit} requests per {rate.window_sec} s exceeded for this API key; "
            f"retry in {quota.retry_after} s.", headers={"Retry-After": str(quota.retry_after)})


_ID_KINDS = {"video_id": "video", "kit_id": "brand kit", "render_id": "render", "job_id": "job",
             "comment_id": "comment", "webhook_id": "webhook", "delivery_id": "delivery",
             "asset_id": "asset"}
_MAX_VERSION = 2**31 - 1
_BUILD_FIELDS = {"duration_sec": "/durationSec", "format": "/format", "fields": "/fields"}


def _not_found(error: NotFound) -> str:
    kind = getattr(error, "kind", "object").replace("_", " ")
    return f"No such {kind} in this workspace."


class _UnsupportedMediaType(err.ApiError):
    status, code = 415, "unsupported_media_type"


def _unsupported() -> err.ApiError:
    return _UnsupportedMediaType("Send JSON with Content-Type: application/json.")
