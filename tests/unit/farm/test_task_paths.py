"""Every task the farm names by its dotted path (what the queues store and import when they run
it) resolves to a function, and each kind of job names its task once, in ``JOB_KINDS``."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from reelfarm.farm.runtime.queue import resolve
from reelfarm.farm.services import job_lifecycle

FARM = Path(job_lifecycle.__file__).resolve().parents[1]
PATH = re.compile(r"^reelfarm\.farm(\.\w+){3}$")
KINDS = {"stills", "brand_extract", "generate"}


def named_paths() -> dict[str, set[str]]:
    """Each dotted path under ``reelfarm.farm`` written as a string in the farm, and where."""
    found: dict[str, set[str]] = {}
    for path in sorted(FARM.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH.match(node.value):
                found.setdefault(node.value, set()).add(path.relative_to(FARM).as_posix())
    return found


def test_every_task_path_named_in_the_farm_resolves_to_a_function() -> None:
    paths = named_paths()
    assert len(paths) >= 10, paths  # the render graph's, the jobs', the queues' handlers, webhooks, drafts
    broken = []
    for name, where in paths.items():
        try:
            if not callable(resolve(name)):
                broken.append(f"{where}: {name} is not callable")
        except (ImportError, AttributeError) as exc:
            broken.append(f"{where}: {name} ({exc})")
    assert broken == []


def test_each_kind_of_job_names_its_task_once() -> None:
    assert set(job_lifecycle.JOB_KINDS) == KINDS
    tasks = [kind.task for kind in job_lifecycle.JOB_KINDS.values()]
    assert len(set(tasks)) == len(tasks)
    paths = named_paths()
    assert set().union(*(paths[t] for t in tasks)) == {"services/job_lifecycle.py"}, "a job's task is named in the table only"
