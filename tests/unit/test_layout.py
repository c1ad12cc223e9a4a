"""The namespace layout: each part's folder joined to the one ``reelfarm`` package by a link.

``reelfarm.PARTS`` is the one list of parts (``reelfarm/__init__.py`` says why the links exist).
Here: each part has its link in ``reelfarm/``, relative, naming its own folder, and no other link
is there; the deploy images copy exactly those folders; and the parts' former top-level names do
not import in the test run, though the repository root is on ``sys.path`` for ``tests.*``.
"""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reelfarm
from reelfarm import PARTS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reelfarm"
DOCKERFILES = sorted((ROOT / "deploy" / "docker").glob("Dockerfile*"))


def link_problems(package: Path, parts: tuple[str, ...]) -> list[str]:
    """What is wrong with the links in ``package``: a part without a link, a link that is absolute
    or names another folder or nothing, a link that is no part's."""
    found = []
    for part in parts:
        link = package / part
        if not link.is_symlink():
            found.append(f"{part}: no link")
            continue
        target = os.readlink(link)
        if target != f"../{part}":
            found.append(f"{part}: links to {target!r}, not '../{part}'")
        elif not (package.parent / part).is_dir():
            found.append(f"{part}: ../{part} is not a folder")
    found += [f"{entry.name}: a link to no part" for entry in sorted(package.iterdir())
              if entry.is_symlink() and entry.name not in parts]
    return found


def copied_folders(dockerfile: Path) -> list[str]:
    """The repository folders a Dockerfile's ``COPY <folder> <folder>`` lines bring in."""
    return [m.group(1) for m in re.finditer(r"^COPY (\w+) \1$", dockerfile.read_text("utf-8"), re.MULTILINE)]


def test_reelfarm_is_this_checkouts_package() -> None:
    assert Path(reelfarm.__file__).resolve().parent == PACKAGE


def test_each_part_has_a_relative_link_to_its_folder_and_nothing_else_is_linked() -> None:
    assert link_problems(PACKAGE, PARTS) == []


def test_the_link_check_names_what_is_wrong(tmp_path: Path) -> None:
    package = tmp_path / "reelfarm"
    package.mkdir()
    for folder in ("api", "farm", "shared"):
        (tmp_path / folder).mkdir()
    (package / "api").symlink_to("../api")
    (package / "farm").symlink_to(tmp_path / "farm")  # absolute
    (package / "shared").symlink_to("../farm")  # another folder
    (package / "studio").symlink_to("../studio")  # nothing there
    (package / "extra").symlink_to("../api")
    assert link_problems(package, ("api", "farm", "shared", "studio", "client")) == [
        f"farm: links to {str(tmp_path / 'farm')!r}, not '../farm'", "shared: links to '../farm', not '../shared'",
        "studio: ../studio is not a folder", "client: no link", "extra: a link to no part"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_each_image_copies_every_part_and_the_package(dockerfile: Path) -> None:
    assert sorted(copied_folders(dockerfile)) == sorted([*PARTS, "reelfarm"])


def test_there_are_images_to_check() -> None:
    assert [p.name for p in DOCKERFILES] == ["Dockerfile", "Dockerfile.gpu"]


@pytest.mark.parametrize("part", PARTS)
def test_a_former_top_level_name_does_not_import_in_the_test_run(part: str) -> None:
    assert (ROOT / part).is_dir() and str(ROOT) in [os.path.abspath(p or ".") for p in sys.path]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(part)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{part}.__init__")


def test_no_module_is_loaded_under_a_former_name() -> None:
    assert sorted(n for n in sys.modules if n.split(".", 1)[0] in PARTS) == []


def test_a_plain_interpreter_at_the_root_would_load_a_second_copy() -> None:
    """Why the guard in ``tests/conftest.py`` exists: with the root on ``sys.path``, ``farm`` would be
    found as a second package beside ``reelfarm.farm``."""
    out = subprocess.run([sys.executable, "-c", "import farm, reelfarm.farm; print(farm is reelfarm.farm)"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
