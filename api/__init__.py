"""reelfarm's HTTP API: flask-smorest views over the services; thin by design."""
from __future__ import annotations

from reelfarm.api.app import create_app

__all__ = ["create_app"]
