"""Every storage key the farm writes is named in ``reelfarm.shared.storage_keys``: no other module
of the server spells a key folder, and each key begins with its folder and its owner's id."""
from __future__ import annotations

import ast
from pathlib import Path

from reelfarm.shared import storage_keys as keys

ROOT = Path(keys.__file__).resolve().parents[1]
FOLDERS = (keys.RENDERS, keys.JOBS, keys.DRAFTS, keys.SEGMENTS, keys.BRAND_KITS, keys.PREVIEWS, keys.ASSETS, keys.UPLOADS)
PARTS = ("api", "console", "farm", "shared", "studio")


def spelled_keys(sources: list[tuple[str, ast.AST]]) -> list[str]:
    """String and f-string pieces that begin with a key folder (``"renders/"``, ``f"jobs/{id}"``)."""
    found = []
    for rel, tree in sources:
        pieces = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in pieces:
                continue
            if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                text = str(node.values[0].value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            if any(text.startswith(f"{folder}/") for folder in FOLDERS):
                found.append(f"{rel}:{node.lineno}: {text}")
    return found


def test_storage_keys_are_named_in_one_module() -> None:
    sources: list[tuple[str, ast.AST]] = []
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != "shared/storage_keys.py" and "/migrations/" not in rel:
                sources.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    assert len(sources) > 100
    assert spelled_keys(sources) == []
    planted: list[tuple[str, ast.AST]] = [("planted.py", ast.parse('k = f"renders/{rid}/seg0.mp4"\nj = "jobs/x"\n'))]
    assert spelled_keys(planted) == ["planted.py:1: renders/", "planted.py:2: jobs/x"]


def test_each_key_begins_with_its_folder_and_owner() -> None:
    assert keys.segment_key("r1", 3) == "renders/r1/seg3.mp4"
    assert {keys.video_key("r1"), keys.poster_key("r1")} == {"renders/r1/video.mp4", "renders/r1/poster.jpg"}
    assert keys.stream_segment_key("r1", 0) == "renders/r1/stream/seg0.ts"
    assert keys.stream_audio_key("r1").startswith(keys.stream_folder("r1") + "/")
    assert keys.stills_key("j1", 2) == "jobs/j1/still-2.png"
    assert keys.draft_segment_key("w1", "d1", 0) == "drafts/w1/d1/seg0.ts"
    assert keys.cache_key("w1", "abc") == "segments/w1/abc.mp4"
    assert keys.logo_key("k1") == "brand-kits/k1/logo.png"
    assert keys.uploaded_logo_key("k1", "0123456789abcdef0123") == "brand-kits/k1/logo-0123456789abcdef.png"
    assert keys.story_thumbnail_key("w1", "quote", "9:16") == "previews/w1/thumbnails/quote-9x16.png"
    assert keys.imported_key("renders/r1", "photo").startswith("renders/r1/assets/")
    assert keys.imported_key("renders/r1", "photo") != keys.imported_key("renders/r1", "logo")
    assert keys.asset_key("w1", "ab12", "png") == "assets/w1/ab12.png"
    assert keys.asset_thumbnail_key(keys.asset_key("w1", "ab12", "png")) == "assets/w1/ab12.thumb.jpg"
    assert keys.staging_key("w1", "u1") == "uploads/w1/u1"
