"""The image addresses of a story form, checked when it is saved: each must answer, through the
SSRF guard, with an image the renderer can draw and within its size
(``reelfarm.farm.services.assets.check_image_url``), so that a render does not fail on it later.
A problem is put beside its field, by form name, as ``reelfarm.console.problems`` puts the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reelfarm.console.forms import PREFIX, label_at
from reelfarm.farm.services.assets import MAX_IMAGE_BYTES, check_image_url
from reelfarm.shared.config import Settings
from reelfarm.studio.assets import is_remote
from reelfarm.studio.fetch import make_fetcher

SAVE_FETCH_SEC = 15.0  # the whole check of one address; the person is waiting for the page


def image_problems(settings: Settings, schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, str]:
    """A message for each image field (``format: uri``) whose address cannot be drawn, by form name."""
    fetcher = make_fetcher(settings, total_timeout=SAVE_FETCH_SEC, max_bytes=MAX_IMAGE_BYTES + 1)
    found = {}
    for name, prop in (schema.get("properties") or {}).items():
        url = values.get(name)
        if prop.get("format") != "uri" or not isinstance(url, str) or not is_remote(url):
            continue
        problem = check_image_url(fetcher, url)
        if problem is not None:
            found[PREFIX + name] = (f"{label_at(schema, [name])}: the image at this address {problem}; "
                                    "give an address that shows the image itself, or leave it empty")
    return found
