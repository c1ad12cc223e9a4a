"""``Client`` and ``AsyncClient`` offer the same surface: every resource, every method, every
parameter (name, kind and default), the async one awaited. A method added to one and not the
other fails here."""
from __future__ import annotations

import inspect
from typing import Any

from reelfarm.client import AsyncClient, Client

# Where the two differ by nature, not by drift.
CLOSE = {"close": "aclose", "__enter__": "__aenter__", "__exit__": "__aexit__"}


def _parameters(method: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


def _methods(owner: type) -> dict[str, Any]:
    return {name: member for name, member in inspect.getmembers(owner, callable)
            if not name.startswith("_") or name in CLOSE or name in CLOSE.values()}


def _resources(client: Any) -> dict[str, type]:
    return {name: type(value) for name, value in vars(client).items()
            if not name.startswith("_") and "_t" in getattr(value, "__dict__", {})}


def surface(client_cls: type, instance: Any) -> dict[str, list[tuple[str, Any, Any]]]:
    found = {}
    for name, method in _methods(client_cls).items():
        found[CLOSE.get(name, name)] = _parameters(method)
    for resource, cls in _resources(instance).items():
        for name, method in _methods(cls).items():
            found[f"{resource}.{name}"] = _parameters(method)
    return found


def test_the_sync_and_async_clients_have_the_same_resources_methods_and_parameters() -> None:
    sync = surface(Client, Client(api_key="rf_live_x", base_url="http://127.0.0.1:9"))
    aio = surface(AsyncClient, AsyncClient(api_key="rf_live_x", base_url="http://127.0.0.1:9"))
    assert set(sync) - set(aio) == set(), "only in Client"
    assert set(aio) - set(sync) == set(), "only in AsyncClient"
    differing = {name: (sync[name], aio[name]) for name in sync if sync[name] != aio[name]}
    assert differing == {}


def test_every_async_call_is_awaited() -> None:
    instance = AsyncClient(api_key="rf_live_x", base_url="http://127.0.0.1:9")
    for resource, cls in _resources(instance).items():
        for name, method in _methods(cls).items():
            if name in ("list", "verify") and not inspect.iscoroutinefunction(method):
                continue  # an async iterator of pages; a pure function
            assert inspect.iscoroutinefunction(method), f"{resource}.{name}"


def test_the_comparison_sees_a_method_or_a_parameter_on_one_side_only() -> None:
    class Wider(Client):
        def extra(self) -> None:
            pass

        def me(self, verbose: bool = False) -> Any:  # type: ignore[override]
            return None

    instance = Client(api_key="rf_live_x", base_url="http://127.0.0.1:9")
    base, wider = surface(Client, instance), surface(Wider, instance)
    assert set(wider) - set(base) == {"extra"}
    assert wider["me"] != base["me"] and {k: v for k, v in wider.items() if k not in ("extra", "me")} == \
        {k: v for k, v in base.items() if k != "me"}
