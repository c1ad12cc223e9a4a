"""What differs between the awaited SDK and the blocking one besides ``async``/``await``: how to
sleep, how to open a file, how to tell a listener. Written by hand on both sides."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

# A progress listener: a plain function or a coroutine function (an MCP progress report).
Listener = Callable[[Any], Awaitable[None] | None]
Sleep = Callable[[float], Awaitable[None]]

sleep: Sleep = anyio.sleep
open_file = anyio.open_file
wrap_file = anyio.wrap_file  # a caller's file object, read without blocking the event loop
BinaryFile = anyio.AsyncFile[bytes]


async def tell(listener: Listener | None, state: Any) -> None:
    if listener is not None:
        result = listener(state)
        if result is not None:
            await result
