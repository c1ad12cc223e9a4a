"""``reelfarm.client``: the SDK under the distribution's own name; the code lives in ``client/``."""
from __future__ import annotations

from client import *
from client import (
    __all__,  # noqa: F401
    webhooks,  # noqa: F401  - ``reelfarm.client.webhooks.verify``
)
