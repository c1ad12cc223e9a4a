"""``client/pyproject.toml`` (the ``reelfarm-client`` distribution) lists every package under
``client/``: a subpackage left out would install a client that fails on import."""
from __future__ import annotations

import tomllib
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[3] / "client"


def test_every_package_under_client_is_in_the_distribution() -> None:
    listed = set(tomllib.loads((CLIENT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"reelfarm.client" + "".join(f".{part}" for part in init.parent.relative_to(CLIENT).parts)
             for init in CLIENT.rglob("__init__.py") if "__pycache__" not in init.parts}
    assert found - listed == set(), "missing from client/pyproject.toml"
    assert listed - found == set(), "listed but not a package"
