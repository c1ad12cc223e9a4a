"""``Client``: the blocking SDK. One attribute per resource, each method one API call (or a wait).

    from reelfarm.client import Client
    rf = Client()                      # REELFARM_API_KEY / REELFARM_API_URL, or `reelfarm login`
    video = rf.videos.create(story_id="quote", fields={"quote": "Ship it"}, format="9:16")
    render = rf.render_video(video.id, format="9:16", resolution=720)   # waits
    rf.renders.download(render, "quote.mp4")

The code is ``reelfarm.client._sync``, generated from the awaited ``reelfarm.client._async`` by
``scripts/generate_sync.py`` so that the two cannot drift.
"""
from reelfarm.client._sync.client import (
    DEFAULT_TIMEOUT,
    Assets,
    Brand,
    BrandKits,
    Client,
    Jobs,
    Renders,
    Stories,
    Videos,
    Webhooks,
)
from reelfarm.client._sync.transport import SyncTransport

__all__ = ["DEFAULT_TIMEOUT", "Assets", "Brand", "BrandKits", "Client", "Jobs", "Renders", "Stories", "SyncTransport",
           "Videos", "Webhooks"]
