"""``AsyncClient``: the same resources as ``Client``, awaited (asyncio or trio, through anyio).

    async with AsyncClient() as rf:
        video = await rf.videos.create(brief="Our spring sale, 20% off")
        video = await rf.videos.wait(video.id)
        render = await rf.render_video(video.id, resolution=720)

The code is ``reelfarm.client._async``; the blocking client is generated from it.
"""
from reelfarm.client._async.client import (
    DEFAULT_TIMEOUT,
    Assets,
    AsyncClient,
    Brand,
    BrandKits,
    Jobs,
    Renders,
    Stories,
    Videos,
    Webhooks,
)
from reelfarm.client._async.transport import AsyncTransport

__all__ = ["DEFAULT_TIMEOUT", "Assets", "AsyncClient", "AsyncTransport", "Brand", "BrandKits", "Jobs", "Renders",
           "Stories", "Videos", "Webhooks"]
