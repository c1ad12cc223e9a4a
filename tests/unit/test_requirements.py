"""Every third-party module the product imports is installed by the package's own requirements.

The README's first command installs the package without extras (``pip install -e .``) and starts the
server, and the deploy image installs it the same way; the test extra (Pillow, moto, PyYAML, ...) is
on CI's machine only. So an import that only the test extra satisfies works under CI and fails for
every user. This test walks every import statement of the product's modules (at the top, inside
functions, in ``try``: all run at some point; ``if TYPE_CHECKING:`` ones never do), finds the
distribution that provides each third-party top-level module in this environment, and holds that it is
one of ``install_requires`` or their own requirements (the closure, without extras).

The GPU extras (``gpu``, ``nvenc``) are allowed only where the import stands inside a function, which
runs where the node has asked for that part: a module-level import would break the import of the module
on every machine without the extra.

The light client distribution (``client/pyproject.toml``) is held to its own dependencies the same way,
its MCP server to the ``mcp`` extra.
"""
from __future__ import annotations

import ast
import configparser
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.unit.test_import_graph import _walk, project_modules

ROOT = Path(__file__).resolve().parents[2]
GPU_EXTRAS = ("gpu", "nvenc")
# The GPU extras' modules by distribution, for machines (like CI's) where they are not installed, so
# that no installed distribution names them.
GPU_MODULES = {"PyNvVideoCodec": "pynvvideocodec", "pynvml": "nvidia-ml-py"}


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


def _requirement_lines(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def closure(requirements: list[str]) -> set[str]:
    """The canonical names of ``requirements`` and everything they require in turn (no extras unless a
    requirement names them), as installed here."""
    found: set[str] = set()
    todo = [Requirement(line) for line in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        wanted_extras = set(requirement.extras)
        key = name + "[" + ",".join(sorted(wanted_extras)) + "]"
        if key in found:
            continue
        found.add(key)
        found.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform, not installed here
        for line in requires:
            sub = Requirement(line)
            if sub.marker is not None:
                keep = any(sub.marker.evaluate({**default_environment(), "extra": extra})
                           for extra in (wanted_extras or {""}))
                if not keep:
                    continue
            todo.append(sub)
    return {name for name in found if "[" not in name}


@cache
def _distributions_of() -> dict[str, list[str]]:
    return {module: [canonicalize_name(d) for d in dists]
            for module, dists in metadata.packages_distributions().items()}


def third_party_imports(modules: dict[str, Path]) -> list[tuple[str, int, str, bool]]:
    """``(module, line, top-level name imported, inside a function)`` for every absolute import of a
    module that is neither the standard library's nor the project's."""
    found = []
    for module, path in modules.items():
        for node, in_function in _walk(ast.parse(path.read_text("utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".", 1)[0]
                if top in sys.stdlib_module_names or top in ("reelfarm", "__future__"):
                    continue
                found.append((module, node.lineno, top, in_function))
    return found


def _check(modules: dict[str, Path], allowed: set[str], lazily_allowed: set[str]) -> list[str]:
    problems = []
    for module, line, top, in_function in third_party_imports(modules):
        dists = set(_distributions_of().get(top, [])) or ({GPU_MODULES[top]} if top in GPU_MODULES else set())
        where = f"{module}:{line} imports {top!r}"
        if not dists:
            problems.append(f"{where}, which no installed distribution provides")
        elif dists & allowed:
            continue
        elif dists & lazily_allowed:
            if not in_function:
                problems.append(f"{where} ({', '.join(sorted(dists))}, a GPU extra) at module level; "
                                "import it inside the function that needs it")
        else:
            problems.append(f"{where}, from {', '.join(sorted(dists))}, which the package's requirements "
                            "do not install")
    return problems


def test_the_servers_imports_are_installed_by_its_own_requirements() -> None:
    config = _setup_cfg()
    required = closure(_requirement_lines(config["options"]["install_requires"]))
    extras = closure([line for extra in GPU_EXTRAS
                      for line in _requirement_lines(config["options.extras_require"][extra])])
    assert set(GPU_MODULES.values()) <= extras
    modules = {name: path for name, path in project_modules().items() if not name.startswith("reelfarm.client")}
    assert len(modules) > 100
    assert _check(modules, required, extras - required) == []


def test_the_clients_imports_are_installed_by_the_client_distribution() -> None:
    project = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    required = closure(project["dependencies"])
    mcp = closure(project["optional-dependencies"]["mcp"])
    modules = project_modules()
    client = {name: path for name, path in modules.items()
              if name.startswith("reelfarm.client") and not name.startswith("reelfarm.client.mcp_server")}
    mcp_server = {name: path for name, path in modules.items() if name.startswith("reelfarm.client.mcp_server")}
    assert client and mcp_server
    assert _check(client, required, set()) == []
    assert _check(mcp_server, required | mcp, set()) == []


def test_the_check_sees_an_import_only_the_test_extra_installs(tmp_path: Path) -> None:
    """The check itself: Pillow (the test extra's, before it was a requirement) and a GPU extra's module
    at module level are caught; the same GPU import inside a function is not."""
    source = tmp_path / "m.py"
    source.write_text("import yaml\nimport pynvml\n\ndef f():\n    import pynvml\n    import click\n")
    problems = _check({"m": source}, closure(["click"]), closure(["nvidia-ml-py"]))
    assert len(problems) == 2
    assert "'yaml'" in problems[0] and "do not install" in problems[0]
    assert "'pynvml'" in problems[1] and "module level" in problems[1]
