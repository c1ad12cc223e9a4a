"""The farm's two rooms: the services (``reelfarm.farm.services``) decide and never import the
runtime (``reelfarm.farm.runtime``), which runs the work and may import the services. Every farm
module lives in one of the two."""
from __future__ import annotations

import ast
from pathlib import Path

from reelfarm import farm
from tests.helpers import absolute_imports

FARM = Path(farm.__file__).resolve().parent


def runtime_imports(root: Path) -> list[str]:
    found = [f"{file}: {module}" for file, module in absolute_imports(root)
             if module == "reelfarm.farm.runtime" or module.startswith("reelfarm.farm.runtime.")]
    for path in root.rglob("*.py"):  # ``from reelfarm.farm import runtime``
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "reelfarm.farm":
                found += [f"{path.name}: reelfarm.farm.{a.name}" for a in node.names if a.name == "runtime"]
    return found


def test_the_services_never_import_the_runtime() -> None:
    assert runtime_imports(FARM / "services") == []


def test_the_rule_sees_a_service_importing_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "leaky.py").write_text("def f():\n    from reelfarm.farm.runtime.tasks import stitch\n"
                                       "from reelfarm.farm import runtime\n")
    assert runtime_imports(tmp_path) == ["leaky.py: reelfarm.farm.runtime.tasks", "leaky.py: reelfarm.farm.runtime"]


def test_every_farm_module_is_in_one_of_the_two_rooms() -> None:
    loose = [p.name for p in FARM.glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert {p.name for p in FARM.iterdir() if p.is_dir() and p.name != "__pycache__"} == {"services", "runtime"}
