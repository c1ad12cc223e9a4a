"""The plans, and what each allows: the one definition the schema, the database, the API, the
console and the command line take them from.

| plan | API | translated copies | default rate limit (requests/min per key) | farm weight | chunks running at most | media library |
|---|---|---|---|---|---|---|
| ``starter`` | no (403 ``plan_without_api``) | no | none | 1 | 4 | 100 MiB |
| ``pro`` | yes | yes | 600 | 2 | 16 | 10 GiB |
| ``crypto_pro`` | yes | no (403 ``plan_feature_unavailable``) | 600 | 2 | 16 | 10 GiB |
| ``agency`` | yes | yes | 3000 | 4 | 32 | 100 GiB |

The farm weight is a workspace's share of the render farm against the other workspaces with work
waiting (``reelfarm.farm.services.fairness``); the cap bounds its chunks running at once. An
operator overrides both per workspace (``reelfarm admin share``).

The media library holds at most the plan's bytes per workspace (its uploads' sizes, each distinct
upload once; thumbnails not counted): ``reelfarm.farm.services.library`` refuses an upload that
would pass it (413 ``quota_exceeded``).

Credits work the same on every plan (``reelfarm.farm.services.renders.credits_for``); an operator's
``REELFARM_RATE_LIMITS`` may change the rate limits, not which plans have the API.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Plan:
    """A plan and what a workspace on it may do."""

    name: str
    api: bool
    locales: bool
    rate_limit: int | None  # requests per minute per key; None without API access
    dispatch_weight: float = 1.0  # share of the farm against other workspaces with work waiting
    dispatch_cap: int = 4  # chunks running at once, at most
    library_bytes: int = 100 * MiB  # the media library's quota per workspace


PLANS: Mapping[str, Plan] = MappingProxyType({p.name: p for p in (
    Plan("starter", api=False, locales=False, rate_limit=None, dispatch_weight=1, dispatch_cap=4,
         library_bytes=100 * MiB),
    Plan("pro", api=True, locales=True, rate_limit=600, dispatch_weight=2, dispatch_cap=16, library_bytes=10 * GiB),
    Plan("crypto_pro", api=True, locales=False, rate_limit=600, dispatch_weight=2, dispatch_cap=16,
         library_bytes=10 * GiB),
    Plan("agency", api=True, locales=True, rate_limit=3000, dispatch_weight=4, dispatch_cap=32,
         library_bytes=100 * GiB),
)})
NAMES: tuple[str, ...] = tuple(PLANS)
LIBRARY_BYTES: Mapping[str, int] = MappingProxyType({p.name: p.library_bytes for p in PLANS.values()})
LOCALE_PLANS: tuple[str, ...] = tuple(p.name for p in PLANS.values() if p.locales)
DEFAULT_RATE_LIMITS: Mapping[str, int] = MappingProxyType(
    {p.name: p.rate_limit for p in PLANS.values() if p.api and p.rate_limit is not None})


def allows_locales(plan: str) -> bool:
    """Whether a workspace on ``plan`` may order translated copies."""
    return plan in LOCALE_PLANS
