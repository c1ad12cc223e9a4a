"""The local commands, run through click's runner as a user would type them."""
from __future__ import annotations

import json

from click.testing import CliRunner
from PIL import Image

from reelfarm.cli import main
from reelfarm.renderer.concat import probe
from reelfarm.studio.stories import list_stories


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result


def test_story_list_prints_one_story_per_line_id_first():
    result = run("story", "--list")
    lines = result.output.strip().splitlines()
    assert result.exit_code == 0
    assert [line.split("\t")[0] for line in lines] == [s.id for s in list_stories()]


def test_story_build_lint_still_render(tmp_path, doc):
    story = list_stories()[0]
    out = tmp_path / "doc.json"
    result = run("story", story.id, "--format", "9:16", "--duration", "8", "-o", str(out))
    assert result.exit_code == 0, result.output
    built = json.loads(out.read_text())
    assert built["duration"] == 8 and built["format"] == "9:16"

    result = run("lint", str(out), "--json")
    assert result.exit_code == 0 and json.loads(result.output)["errors"] == []

    png = tmp_path / "f.png"
    assert run("still", str(out), "--time", "2.5", "--format", "1:1", "--resolution", "360", "-o", str(png)).exit_code == 0
    assert Image.open(png).size == (360, 360)

    mp4 = tmp_path / "v.mp4"
    doc_path = tmp_path / "small.json"
    doc_path.write_text(json.dumps(doc))
    result = run("render", str(doc_path), "-o", str(mp4), "--resolution", "720", "--fps", "24", "--workers", "2")
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].endswith("frames/s (x264)"), "auto is x264 without NVENC"
    info = probe(str(mp4))
    assert (info["width"], info["height"], info["frames"]) == (1280, 720, 144)


def test_story_rejects_bad_fields(tmp_path):
    story = list_stories()[0]
    result = CliRunner().invoke(main, ["story", story.id, "--field", "no_such_field=1"])
    assert result.exit_code != 0
    assert "no_such_field" in result.output


def test_lint_exits_nonzero_on_errors(tmp_path, doc):
    doc["duration"] = 4
    doc["scenes"][0]["duration"] = 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    result = run("lint", str(path))
    assert result.exit_code == 1 and "less than the minimum of 6" in result.output


def test_render_asked_for_nvenc_where_it_cannot_be_had_refuses_in_one_line(tmp_path, doc):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["render", str(path), "-o", str(tmp_path / "x.mp4"), "--encoder", "nvenc"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: NVENC cannot be used: ")
    assert not (tmp_path / "x.mp4").exists()


def test_render_refuses_a_broken_doc(tmp_path, doc):
    doc["scenes"][0]["layers"][0]["color"] = "$brand.colors.nope"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["render", str(path), "-o", str(tmp_path / "x.mp4")])
    assert result.exit_code != 0 and "unknown_token" in result.output


def test_render_and_still_on_gl(tmp_path, doc):
    doc_path = tmp_path / "doc.json"
    doc_path.write_text(json.dumps(doc))
    png, mp4 = tmp_path / "f.png", tmp_path / "v.mp4"
    assert run("still", str(doc_path), "--raster", "gl", "--resolution", "180", "-o", str(png)).exit_code == 0
    assert Image.open(png).size == (320, 180)
    result = run("render", str(doc_path), "-o", str(mp4), "--raster", "gl", "--resolution", "180", "--workers", "1")
    assert result.exit_code == 0, result.output
    assert probe(str(mp4))["frames"] == 180


def test_sizes_beyond_the_renderers_limits_are_refused_by_name(tmp_path, doc):
    doc_path = tmp_path / "doc.json"
    doc_path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["still", str(doc_path), "--resolution", "8", "-o", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "--resolution" in result.output and "16<=x<=4320" in result.output
    result = CliRunner().invoke(main, ["render", str(doc_path), "-o", str(tmp_path / "x.mp4"), "--fps", "121"])
    assert result.exit_code == 2 and "--fps" in result.output
