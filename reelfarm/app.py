"""The composition root: one app with the API and the web console on it.

``api/`` and ``console/`` do not import each other (``tests/unit/test_layers.py``). This module,
above both, builds the app from the API's factory and registers the console on it, handing the
console the API's way to the services (``reelfarm.api.services.services``) through the app's
config. ``reelfarm serve`` and the tests build the app here.
"""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from reelfarm import console
from reelfarm.api import app as api_app
from reelfarm.api import services as api_services
from reelfarm.api.services import Services
from reelfarm.console import web
from reelfarm.console.ports import ConsoleServices
from reelfarm.shared.config import Settings


def create_app(settings: Settings | None = None, services: Services | None = None,
               start_farm: bool = False) -> Flask:
    """The WSGI app: ``reelfarm.api.app.create_app`` with the console registered on it."""
    return api_app.create_app(settings, services, start_farm=start_farm, extend=register_console)


def register_console(app: Flask) -> None:
    lookup: Callable[[], ConsoleServices] = api_services.services  # the type checker holds them to the console's needs
    app.config[web.SERVICES] = lookup
    app.register_blueprint(console.blp)
