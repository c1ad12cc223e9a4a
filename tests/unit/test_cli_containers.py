"""The local render command's --container and --transparent, run as a user would type them."""
from __future__ import annotations

import json

import av
from click.testing import CliRunner

from reelfarm.cli import main


def _frames(path, codec=None):
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        audio = [s.codec_context.name for s in c.streams.audio]
        if codec is None:
            return list(c.decode(stream)), audio
        decoder = av.CodecContext.create(codec, "r")
        return [f for p in c.demux(stream) for f in decoder.decode(p)], audio


def test_render_a_gif_and_a_transparent_webm(tmp_path, doc):
    del doc["scenes"][1]["background"]
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    common = ["--resolution", "180", "--fps", "8", "--workers", "2", "--raster", "cpu"]
    gif, webm = tmp_path / "v.gif", tmp_path / "v.webm"
    result = CliRunner().invoke(main, ["render", str(path), "-o", str(gif), "--container", "gif", *common])
    assert result.exit_code == 0, result.output
    frames, audio = _frames(gif)
    assert len(frames) == 48 and (frames[0].width, frames[0].height) == (320, 180) and audio == []
    result = CliRunner().invoke(main, ["render", str(path), "-o", str(webm), "--container", "webm", "--transparent",
                                       *common])
    assert result.exit_code == 0, result.output
    frames, _ = _frames(webm, "libvpx-vp9")
    assert len(frames) == 48 and frames[0].format.name == "yuva420p"
    assert (frames[-1].to_ndarray(format="rgba")[..., 3] == 0).mean() > 0.5


def test_transparent_needs_webm(tmp_path, doc):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["render", str(path), "-o", str(tmp_path / "v.gif"), "--container", "gif",
                                       "--transparent"])
    assert result.exit_code == 2 and "transparent needs container webm" in result.output
    assert not (tmp_path / "v.gif").exists()
