"""``reelfarm serve``: the API's serve command over the composition root's app (``reelfarm/app.py``),
so the served app has the console on it while ``api/`` imports nothing of the console."""
from __future__ import annotations

from typing import Any

from reelfarm.api.cli import make_serve_command


def _create_app(*args: Any, **kwargs: Any) -> Any:
    from reelfarm.app import create_app  # in the serving worker: the web framework loads there

    return create_app(*args, **kwargs)


serve_command = make_serve_command(_create_app)
COMMANDS = (serve_command,)
