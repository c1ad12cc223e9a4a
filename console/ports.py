"""What the console needs of the app's services, as a type.

The console imports nothing of the API (``tests/unit/test_import_graph.py``); the composition root
(``reelfarm/app.py``) hands it the API's ``Services`` through the app's config, and checks there,
for the type checker, that they are a ``ConsoleServices``. The members are the domain's own
services (``farm.services``, ``studio``, ``shared``); those that live in the farm's runtime or the API,
which the console may not import, are described by what the console calls on them.
"""
from __future__ import annotations

from typing import Any, Protocol

from reelfarm.farm.services.drafts import DraftService
from reelfarm.farm.services.jobs import JobService
from reelfarm.farm.services.library import AssetService
from reelfarm.farm.services.renders import RenderService
from reelfarm.farm.services.usage import UsageService
from reelfarm.farm.services.videos import Videos
from reelfarm.shared.accounts import AccountService
from reelfarm.shared.apikeys import ApiKeyService
from reelfarm.shared.clock import Clock
from reelfarm.shared.config import RateLimit, Settings
from reelfarm.shared.formtokens import FormTokens
from reelfarm.shared.readmodels import ReadModels
from reelfarm.shared.storage import Storage
from reelfarm.studio.brand_kits import BrandKitService
from reelfarm.studio.previews import StoryPreviews
from reelfarm.studio.webhooks import WebhookService


class Deliveries(Protocol):
    """Sends an endpoint a test event, or an event again (``farm.runtime.webhooks.WebhookSender``)."""

    def send_test(self, workspace_id: str, endpoint_id: str) -> dict[str, Any]: ...

    def redeliver(self, workspace_id: str, endpoint_id: str, delivery_id: str) -> dict[str, Any]: ...


class Counted(Protocol):
    """A hit counted in a rate window (``api.ratelimit.Quota``)."""

    @property
    def allowed(self) -> bool: ...
    @property
    def retry_after(self) -> int: ...


class RateCounter(Protocol):
    """Counts requests per key and window (``api.ratelimit.RateLimiter``)."""

    def hit(self, key_id: str, rate: RateLimit) -> Counted: ...


class Queued(Protocol):
    """The farm as far as the console's farm page reads it (``farm.runtime.wiring.Farm``)."""

    @property
    def queue(self) -> Any: ...


class ConsoleServices(Protocol):
    """The services the console's pages call (``reelfarm.api.services.Services`` is one)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def storage(self) -> Storage: ...
    @property
    def rate_limiter(self) -> RateCounter: ...
    @property
    def farm(self) -> Queued: ...
    @property
    def accounts(self) -> AccountService: ...
    @property
    def api_keys(self) -> ApiKeyService: ...
    @property
    def assets(self) -> AssetService: ...
    @property
    def brand_kits(self) -> BrandKitService: ...
    @property
    def drafts(self) -> DraftService: ...
    @property
    def form_tokens(self) -> FormTokens: ...
    @property
    def jobs(self) -> JobService: ...
    @property
    def previews(self) -> StoryPreviews: ...
    @property
    def read_models(self) -> ReadModels: ...
    @property
    def renders(self) -> RenderService: ...
    @property
    def usage(self) -> UsageService: ...
    @property
    def videos(self) -> Videos: ...
    @property
    def webhooks(self) -> WebhookService: ...
    @property
    def webhook_sender(self) -> Deliveries: ...

    def farm_status(self) -> dict[str, Any]:
        """What the farm is doing: nodes, queue depths, renders in flight."""

    def this_machine(self) -> Any:
        """What this server can do (hostname, cores, GPU, NVENC): the farm page's one node."""
