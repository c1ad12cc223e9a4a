"""The video page with renders in several formats and versions: the player plays the render in
the video's own format (the others one click away), an older version's renders offer one
"Render version N" button per format and resolution, and the still panel beside a finished
render shows its poster rather than an empty frame. Two workspaces, both databases.
"""
from __future__ import annotations

import re
import secrets
from html import unescape

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from tests.integration.console.conftest import signed_in_owner


def _render(services, clock, tenant, video_id: str, fmt: str, resolution: int = 720) -> str:
    """A succeeded render of the video's current version, with an MP4 and a poster."""
    version_id = services.videos.get(tenant.workspace_id, video_id)["current_version"]["id"]
    key = f"renders/{secrets.token_hex(8)}"
    services.storage.put_bytes(f"{key}/video.mp4", b"not really an mp4", "video/mp4")
    services.storage.put_bytes(f"{key}/poster.jpg", b"not really a jpeg", "image/jpeg")
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video_id, version_id=version_id, format=fmt,
            resolution=resolution, fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        renders_repo.complete_render(conn, clock, render.id, url_key=f"{key}/video.mp4",
                                     poster_key=f"{key}/poster.jpg", size=17, duration_sec=1.0)
    clock.advance(1)
    return render.id


def _player(page: str) -> str:
    return re.search(r'id="player" class="player-box" data-render="([^"]*)"', page).group(1)


def test_the_player_plays_the_videos_format_and_the_others_are_one_click_away(app, services, clock, make_tenant,
                                                                              create_video):
    acme, other = make_tenant(name="acme", credits=10), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    video = create_video(acme, title="Teaser", format="9:16")
    tall = _render(services, clock, acme, video["id"], "9:16")
    square = _render(services, clock, acme, video["id"], "1:1")  # newer, another format

    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    assert _player(page) == f"{tall}:mp4" and "Playing version 1 · 9:16 · 720p" in page
    link = re.search(r'<a href="([^"]+)" data-play-render>Play 1:1 720p', page).group(1)
    assert link == f"/app/videos/{video['id']}?play={square}#player"
    assert "Play 9:16 720p" not in page  # the one playing says so instead
    page = unescape(ann.get(link.split("#")[0]).get_data(as_text=True))
    assert _player(page) == f"{square}:mp4" and "Playing version 1 · 1:1 · 720p" in page
    assert re.search(r'data-play-render>Play 9:16 720p', page)
    # the still panel beside a finished render is not empty: its poster until a still is asked for
    assert re.search(r'<img id="still-image" src="[^"]*poster\.jpg[^"]*" alt="The poster of version 1', page)
    assert "Pick a time and preview a still." not in page
    # another workspace's render cannot be asked for
    assert signed_in_owner(app, other).get(link.split("#")[0]).status_code == 404


def test_an_older_version_offers_one_render_button_per_format_and_resolution(app, services, clock, make_tenant,
                                                                             create_video):
    acme = make_tenant(name="acme", credits=10)
    ann = signed_in_owner(app, acme)
    video = create_video(acme, title="Teaser", format="9:16")
    _render(services, clock, acme, video["id"], "9:16")
    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Second take"})
    _render(services, clock, acme, video["id"], "1:1")
    _render(services, clock, acme, video["id"], "16:9")
    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Third take"})

    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    buttons = re.findall(r">(Render version 3 in [^<]+)</button>", page)
    assert sorted(buttons) == ["Render version 3 in 16:9 720p", "Render version 3 in 1:1 720p",
                               "Render version 3 in 9:16 720p"]
    assert len(buttons) == len(set(buttons))
    _render(services, clock, acme, video["id"], "9:16")  # version 3 now has a 9:16 render
    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Fourth take"})
    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Third take"})  # version 5
    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    buttons = re.findall(r">(Render version 5 in [^<]+)</button>", page)
    assert sorted(buttons) == ["Render version 5 in 16:9 720p", "Render version 5 in 1:1 720p",
                               "Render version 5 in 9:16 720p"]
    assert "Render version 5 in 9:16 720p with the button of the newer render above." in page
