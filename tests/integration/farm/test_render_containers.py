"""GIF and WebM renders on the embedded queue and on RQ: the files decode at the size, rate and
frame count asked for, a WebM carries Opus sound and keeps alpha where a scene has no background,
a GIF's values are lowered to its limits, and the container is part of what dedup compares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av
import pytest

from reelfarm.farm.services.errors import InvalidRequest
from tests.integration.farm.conftest import Farm, make_doc, with_audio, work_burst
from tests.integration.farm.test_render_embedded import local_file, wait_for


def finished(farm: Farm, workspace: str, render_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        current = farm.renders.get(workspace, render_id)
        return current if current["status"] in ("succeeded", "failed", "canceled") else None
    render = wait_for(done)
    assert render["status"] == "succeeded", render["error"]
    return render


def decoded(path: Path, codec: str | None = None) -> tuple[str, list[av.VideoFrame], list[str]]:
    """The container's format name, its video frames (decoded with ``codec`` when given) and its
    audio codecs."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        audio = [s.codec_context.name for s in container.streams.audio]
        if codec is None:
            frames = list(container.decode(stream))
        else:
            decoder = av.CodecContext.create(codec, "r")
            frames = [f for p in container.demux(stream) for f in decoder.decode(p)]
        return container.format.name, frames, audio


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_gif_and_webm_on_the_embedded_queue(embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, with_audio(make_doc(6), embedded, workspace, tmp_path))
    mp4 = embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8)
    gif = embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8, container="gif")
    webm = embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8, container="webm")
    assert len({mp4["id"], gif["id"], webm["id"]}) == 3  # three files, three renders
    assert embedded.balance(workspace) == 4  # the version is charged once
    assert embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8, container="gif")["id"] == gif["id"]
    assert (gif["container"], gif["transparent"], gif["clamped"]) == ("gif", False, [])

    embedded.queue.start()  # type: ignore[attr-defined]
    gif, webm = finished(embedded, workspace, gif["id"]), finished(embedded, workspace, webm["id"])
    finished(embedded, workspace, mp4["id"])

    gif_file = local_file(embedded.storage, gif["url"])
    assert gif_file.suffix == ".gif" and "name=" in gif["url"] and ".gif" in gif["url"].split("name=")[1]
    kind, frames, audio = decoded(gif_file)
    assert kind == "gif" and audio == [] and len(frames) == 48
    assert (frames[0].width, frames[0].height) == (320, 180)
    assert gif["stream_url"] is None and gif["poster_url"] is not None  # only an MP4 streams

    webm_file = local_file(embedded.storage, webm["url"])
    assert webm_file.suffix == ".webm"
    kind, frames, audio = decoded(webm_file)
    assert kind.startswith("matroska") and audio == ["opus"] and len(frames) == 48
    assert (frames[0].width, frames[0].height) == (320, 180) and frames[0].format.name == "yuv420p"
    assert webm["stream_url"] is None and webm["poster_url"] is not None


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_transparent_webm_keeps_alpha_where_a_scene_has_no_background(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    del doc["scenes"][1]["background"]
    video = embedded.video(workspace, doc)
    render = embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8, container="webm",
                                      transparent=True)
    opaque = embedded.renders.request(workspace, video, "16:9", resolution=180, fps=8, container="webm")
    assert render["transparent"] and render["id"] != opaque["id"]
    embedded.queue.start()  # type: ignore[attr-defined]
    render = finished(embedded, workspace, render["id"])
    _, frames, audio = decoded(local_file(embedded.storage, render["url"]), codec="libvpx-vp9")
    assert len(frames) == 48 and frames[0].format.name == "yuva420p" and audio == []
    assert frames[4].to_ndarray(format="rgba")[..., 3].min() > 250  # scene one has its gradient
    alpha = frames[-1].to_ndarray(format="rgba")[..., 3]  # scene two has no background
    assert (alpha == 0).mean() > 0.5 and alpha.max() > 200


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_gif_values_are_lowered_and_said_and_transparent_needs_webm(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    big = embedded.renders.request(workspace, video, "9:16", resolution=1080, fps=60, container="gif")
    assert (big["resolution"], big["fps"], big["clamped"]) == (720, 24, ["resolution", "fps"])
    same = embedded.renders.request(workspace, video, "9:16", resolution=720, fps=24, container="gif")
    assert same["id"] == big["id"] and same["clamped"] == []  # what this request asked for was within them
    assert embedded.renders.get(workspace, big["id"])["clamped"] == ["resolution", "fps"]
    with pytest.raises(InvalidRequest) as caught:
        embedded.renders.request(workspace, video, "5:4", resolution=180, container="gif", transparent=True)
    assert [d["field"] for d in caught.value.details] == ["/transparent", "/format"]
    embedded.renders.cancel(workspace, big["id"])


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_gif_and_webm_on_rq(rq_farm: Farm, redis: Any, namespace: str, tmp_path: Path) -> None:
    workspace = rq_farm.workspace(credits=5)
    video = rq_farm.video(workspace, with_audio(make_doc(6), rq_farm, workspace, tmp_path))
    gif = rq_farm.renders.request(workspace, video, "1:1", resolution=96, fps=6, container="gif")
    webm = rq_farm.renders.request(workspace, video, "1:1", resolution=96, fps=6, container="webm")
    work_burst(redis, namespace)
    gif, webm = rq_farm.renders.get(workspace, gif["id"]), rq_farm.renders.get(workspace, webm["id"])
    assert gif["status"] == webm["status"] == "succeeded", (gif["error"], webm["error"])
    kind, frames, audio = decoded(local_file(rq_farm.storage, gif["url"]))
    assert kind == "gif" and len(frames) == 36 and (frames[0].width, frames[0].height) == (96, 96) and not audio
    kind, frames, audio = decoded(local_file(rq_farm.storage, webm["url"]))
    assert audio == ["opus"] and len(frames) == 36 and (frames[0].width, frames[0].height) == (96, 96)
