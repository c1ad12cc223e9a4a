"""One encoder family per render: the node's encoder is handed to its chunks, and a stitch that
finds segments of two families (here x264 and a stand-in for NVENC: x264 at another preset, whose
SPS/PPS and profile differ as NVENC's would) fails the render loudly, refunded, naming the
segments, and stores no file."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from reelfarm.farm.runtime import tasks
from reelfarm.farm.runtime.context import current
from reelfarm.farm.runtime.queue import describe_exception
from reelfarm.farm.services.lifecycle import OtherEncoderFamily
from reelfarm.renderer.backends import EncoderChoice
from reelfarm.renderer.concat import probe
from reelfarm.shared.repos.renders import find_render
from reelfarm.shared.storage_keys import segment_key, video_key
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_render_embedded import assert_video, local_file
from tests.stand_in_nvenc import stand_in_nvenc  # noqa: F401 - the fixture

STAND_IN_NVENC = EncoderChoice("x264", options=(("preset", "ultrafast"),))


@pytest.fixture
def node(embedded: Farm) -> Iterator[Farm]:
    ctx = current()
    before = ctx.encoder
    yield embedded
    ctx.encoder = before


def _render(farm: Farm) -> tuple[str, str]:
    workspace = farm.workspace(credits=3)
    render = farm.renders.request(workspace, farm.video(workspace, make_doc(6)), "16:9", 144, 24)
    return workspace, render["id"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_chunks_encode_with_the_nodes_encoder(node: Farm) -> None:
    workspace, render_id = _render(node)
    current().encoder = STAND_IN_NVENC
    for index in range(4):  # scene one's leading second, the rest of it, the crossfade, the rest of scene two
        tasks.render_chunk(render_id, index)
    assert probe(node.storage.open_local(segment_key(render_id, 0)))["profile"] == "Constrained Baseline"
    tasks.stitch(render_id)
    done = node.renders.get(workspace, render_id)
    assert done["status"] == "succeeded", done["error"]
    assert_video(local_file(node.storage, done["url"]), 256, 144, 24, 6 * 24, audio=False)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_stitch_of_two_families_fails_the_render_refunded_naming_the_segment(node: Farm) -> None:
    workspace, render_id = _render(node)
    assert node.balance(workspace) == 2
    current().encoder = None  # x264, the default
    tasks.render_chunk(render_id, 0)
    current().encoder = STAND_IN_NVENC
    for index in (1, 2, 3):
        tasks.render_chunk(render_id, index)

    tasks.stitch(render_id)

    failed = node.renders.get(workspace, render_id)
    assert failed["status"] == "failed" and failed["url"] is None
    assert "segment 2: profile" in failed["error"] and "segment 1" in failed["error"]
    assert "segment 3: profile" in failed["error"] and "segment 4: profile" in failed["error"], \
        "every segment that differs is named"
    assert "; render again; the 1 credit charged for it was refunded" in failed["error"]
    assert node.balance(workspace) == 3
    assert not node.storage.exists(video_key(render_id))


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_a_chunk_encodes_with_its_renders_family_and_a_node_without_it_refuses_to_draw(
        node: Farm, stand_in_nvenc: None) -> None:  # noqa: F811
    _, render_id = _render(node)
    with node.engine.connect() as conn:
        planned = find_render(conn, render_id)
    assert planned is not None and planned.encoder == "x264", "the embedded queue plans x264"
    current().encoder = EncoderChoice("nvenc")  # an NVENC node still encodes an x264 render with x264
    tasks.render_chunk(render_id, 0)
    assert probe(node.storage.open_local(segment_key(render_id, 0)))["profile"] == "High"
    with node.engine.connect() as conn:
        made = find_render(conn, render_id)
    assert made is not None and (made.encoder, made.raster) == ("x264", "cpu")

    life = tasks.lifecycle(current())
    assert life.switch_family(render_id, [segment_key(render_id, i) for i in range(3)], to="nvenc") == [0]
    assert not node.storage.exists(segment_key(render_id, 0)), "the other family's segment is gone, to redraw"
    current().encoder = EncoderChoice("x264")
    with pytest.raises(OtherEncoderFamily) as refused:
        tasks.render_chunk(render_id, 1)
    assert describe_exception(refused.value) == (f"render {render_id}'s segments are encoded with nvenc; this node "
                                                 "encodes with x264")
    assert not node.storage.exists(segment_key(render_id, 1)), "nothing drawn"
