"""The web console at ``/app``: people sign in, manage API keys, make and watch videos.

One Flask blueprint, ``blp``, registered by the composition root (``reelfarm/app.py``) on the same app
as the API; the console and the API import nothing of each other. It has its own ways in and out,
and shares only the services:

- Authentication is a signed session cookie (``console/web.py``), never an API key; the API's
  bearer hook skips the ``console`` blueprint and the API never reads the cookie.
- Errors are HTML pages (``console/errors.py``), registered on the blueprint so they win over the
  API's JSON envelope for console routes; a catch-all route under ``/app`` gives the console's
  own not-found page.
- Views call the same services as ``api/``, found the same way (``web.services()`` calls
  ``reelfarm.api.services.services()``, handed over by the composition root in the app's config):
  videos, renders, jobs, webhooks, brand kits and the media library, and the console's own people (``shared/accounts.py``),
  API keys (``shared/apikeys.py``) and read-only lists (``shared/readmodels.py``), each call
  scoped to the signed-in user's workspace exactly as the API scopes to a key's. No console module
  holds SQL, a transaction, a repository or the engine (``tests/unit/api/test_views_seam.py``).

Pages are Jinja templates with a small script (``static/console/console.js``) that adds live
progress by polling and copy buttons; every action is also a plain form post, so the console
works without JavaScript. No build step and no CDN: every asset is served by the app.
"""

from __future__ import annotations

from reelfarm.console.blueprint import blp
from reelfarm.console.pages import (  # noqa: F401  (routes)
    brand,
    drafts,
    farm,
    media,
    new_video,
    session,
    settings,
    usage,
    video,
    videos,
    webhooks,
)

__all__ = ["blp"]
