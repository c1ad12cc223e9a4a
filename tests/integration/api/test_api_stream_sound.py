"""The sound of a render's stream (``reelfarm.farm.services.stream``): a video with an audio track,
rendered for real, its chunks run here one by one.

- the audio is mixed and encoded once per render, stored beside the segments, and every segment
  carries its slice of those packets: FFmpeg's HLS demuxer (PyAV), opening the final playlist
  over HTTP, finds one audio stream, without a gap from start to end, lasting the video's duration
  within an AAC frame at each end, and sounding exactly as the MP4's (the same mix, the same
  encoder), while its frames are still the MP4's, one for one;
- segments reused from an earlier render wait for the audio, then appear with it once the first
  chunk is drawn;
- two workspaces' renders of the same video keep their own stream files, and ``stream_keys``,
  what deleting a render's files deletes of its stream, names every one, the audio included.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import httpx
import numpy as np

from reelfarm.farm.runtime import tasks
from reelfarm.farm.services import stream
from tests.helpers import write_tone
from tests.integration.api.test_api_streams import BODY, fetched, path_of, plan, playlist, served  # noqa: F401

AAC_FRAME_SEC = 1024 / 48000
FRAMES = 144  # 6 s at 24 fps


def video_with_sound(client: Any, services: Any, tenant: Any, tmp_path: Path) -> dict[str, Any]:
    """A 6 s video whose music starts 0.3 s in and runs to the end, across every chunk boundary."""
    video = client.post("/api/v1/videos", json=BODY, headers=tenant.headers).get_json()
    key = f"brand-kits/{tenant.default_kit_id}/tone.wav"
    services.storage.put_file(key, write_tone(tmp_path / "tone.wav", 7.0), "audio/wav")
    doc = video["current_version"]["doc"]
    doc["assets"] = {**doc.get("assets", {}), "music": {"type": "audio", "key": key}}
    doc["audio"] = [{"asset": "music", "start": 0.3, "volume": 0.8, "fade_in": 0.2}]
    edited = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=tenant.headers)
    assert edited.status_code == 200, edited.get_json()
    return dict(edited.get_json())


def request(client: Any, tenant: Any, video_id: str) -> dict[str, Any]:
    render = client.post(f"/api/v1/videos/{video_id}/renders", json={"format": "16:9", "resolution": 720, "fps": 24},
                         headers=tenant.headers)
    assert render.status_code == 202, render.get_json()
    return dict(render.get_json())


def decoded(url: str) -> tuple[list[np.ndarray], list[Any]]:
    """The video frames (RGB) and audio frames of a file or stream."""
    video, audio = [], []
    with av.open(url) as container:
        assert len(container.streams.audio) == 1, "one audio stream"
        for frame in container.decode(container.streams.video[0], container.streams.audio[0]):
            if isinstance(frame, av.VideoFrame):
                video.append((float(frame.time), frame.to_ndarray(format="rgb24")))
            else:
                audio.append(frame)
    video.sort(key=lambda item: item[0])
    return [image for _, image in video], audio


def test_the_stream_carries_the_videos_sound_mixed_once(client, services, make_tenant, served,  # noqa: F811
                                                         tmp_path: Path) -> None:
    tenant = make_tenant(credits=5)
    video = video_with_sound(client, services, tenant, tmp_path)
    render = request(client, tenant, video["id"])
    starts = plan(services, render["id"])
    assert len(starts) >= 3, starts

    tasks.render_chunk(render["id"], 1)  # the first chunk task to finish mixes the audio
    audio_key = stream.stream_audio_key(render["id"])
    assert services.storage.exists(audio_key)
    mixed = services.storage.size(audio_key)
    tasks.render_chunk(render["id"], 0)
    assert services.storage.size(audio_key) == mixed
    for index in range(2, len(starts)):
        tasks.render_chunk(render["id"], index)
    tasks.stitch(render["id"])
    done = fetched(client, tenant, render["id"])
    assert done["status"] == "succeeded", done
    final = playlist(client, done["stream_url"])
    assert final.is_endlist and len(final.segments) == len(starts)

    streamed_video, streamed_audio = decoded(served + path_of(done["stream_url"]))
    mp4 = tmp_path / "video.mp4"
    mp4.write_bytes(httpx.get(served + path_of(done["url"]), timeout=30).content)
    whole_video, whole_audio = decoded(str(mp4))
    assert len(streamed_video) == len(whole_video) == FRAMES
    assert all(np.array_equal(a, b) for a, b in zip(streamed_video, whole_video, strict=True))

    # one run of sound, no gap where segments meet, as long as the video within a frame each end
    rate = streamed_audio[0].sample_rate
    assert rate == 48000 and streamed_audio[0].layout.nb_channels == 2
    base = streamed_audio[0].time_base
    for before, after in itertools.pairwise(streamed_audio):
        assert after.pts == before.pts + round(before.samples / rate / base), "contiguous"
    with av.open(served + path_of(done["stream_url"])) as container:
        video_start = float(container.streams.video[0].start_time * container.streams.video[0].time_base)
    audio_start = float(streamed_audio[0].time)
    audio_end = float(streamed_audio[-1].time) + streamed_audio[-1].samples / rate
    video_end = video_start + FRAMES / 24
    assert video_start - AAC_FRAME_SEC - 1e-3 <= audio_start <= video_start
    assert abs(audio_end - video_end) <= AAC_FRAME_SEC
    samples = sum(f.samples for f in streamed_audio)
    assert abs(samples / rate - FRAMES / 24) <= 2 * AAC_FRAME_SEC

    # the same sound as the MP4's: its encoder's priming frame, then the MP4's samples exactly
    stream_pcm = np.concatenate([f.to_ndarray() for f in streamed_audio], axis=1)
    mp4_pcm = np.concatenate([f.to_ndarray() for f in whole_audio], axis=1)
    assert stream_pcm.shape[1] == mp4_pcm.shape[1] + 1024  # the MP4's edit list drops the priming frame
    assert np.array_equal(stream_pcm[:, 1024:], mp4_pcm)
    assert np.abs(mp4_pcm[:, 48000:]).max() > 0.1, "music plays"


def test_reused_segments_wait_for_the_sound_then_carry_it(client, services, make_tenant, tmp_path: Path) -> None:
    tenant = make_tenant(credits=5)
    video = video_with_sound(client, services, tenant, tmp_path)
    first = request(client, tenant, video["id"])
    starts = plan(services, first["id"])
    for index in range(len(starts)):
        tasks.render_chunk(first["id"], index)
    tasks.stitch(first["id"])
    doc = client.get(f"/api/v1/videos/{video['id']}", headers=tenant.headers).get_json()["current_version"]["doc"]
    texts = [layer for layer in doc["scenes"][-1]["layers"] if layer.get("type") == "text"]
    texts[0]["text"] += " now"
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=tenant.headers).status_code == 200

    second = request(client, tenant, video["id"])
    assert second["reused_frames"] > 0, second
    assert second["stream_url"] is None, "no segment without its sound"
    assert not services.storage.list_keys(stream.stream_folder(second["id"]))
    drawn = [i for i in range(len(starts)) if not services.storage.exists(f"renders/{second['id']}/seg{i}.mp4")]
    assert drawn and 0 not in drawn, drawn
    tasks.render_chunk(second["id"], drawn[0])
    shown = fetched(client, tenant, second["id"])
    assert shown["stream_url"], "the reused segments are published with the audio the chunk mixed"
    listed = playlist(client, shown["stream_url"])
    assert len(listed.segments) == (drawn[1] if len(drawn) > 1 else len(starts)), "the run up to the next undrawn"
    for index in range(len(listed.segments)):
        with av.open(services.storage.open_local(stream.stream_segment_key(second["id"], index))) as container:
            assert len(container.streams.audio) == 1 and len(container.streams.video) == 1


def test_each_renders_stream_files_are_its_own_and_all_named(client, services, make_tenant, tmp_path: Path) -> None:
    """Two workspaces render the same video with sound: each render has its own audio and segments,
    its playlist names its own files only, and ``stream_keys`` (what deleting a render's files
    deletes of its stream) names every one, the audio included."""
    owner, other = make_tenant(credits=5), make_tenant(credits=5, name="other")
    mine = request(client, owner, video_with_sound(client, services, owner, tmp_path)["id"])
    theirs = request(client, other, video_with_sound(client, services, other, tmp_path)["id"])
    chunks = len(plan(services, mine["id"]))
    for index in range(chunks):
        tasks.render_chunk(mine["id"], index)
    tasks.render_chunk(theirs["id"], 0)
    stored = services.storage.list_keys(stream.stream_folder(mine["id"]))
    assert stream.stream_audio_key(mine["id"]) in stored and len(stored) == chunks + 1
    assert set(stored) == set(stream.stream_keys(SimpleNamespace(id=mine["id"], chunks=chunks)))
    assert services.storage.list_keys(stream.stream_folder(theirs["id"])) == [
        stream.stream_audio_key(theirs["id"]), stream.stream_segment_key(theirs["id"], 0)]
    for tenant, render, count in ((owner, mine, chunks), (other, theirs, 1)):
        listed = playlist(client, fetched(client, tenant, render["id"])["stream_url"])
        assert len(listed.segments) == count
        assert all(f"/renders/{render['id']}/stream/seg" in s.uri for s in listed.segments)
