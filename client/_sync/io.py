"""What differs between the awaited SDK and the blocking one besides ``async``/``await``: how to
sleep, how to open a file, how to tell a listener. Written by hand on both sides."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO, Any

Listener = Callable[[Any], None]
Sleep = Callable[[float], None]

sleep: Sleep = time.sleep
open_file = open
BinaryFile = IO[bytes]


def wrap_file(file: IO[bytes]) -> IO[bytes]:
    return file


def tell(listener: Listener | None, state: Any) -> None:
    if listener is not None:
        listener(state)
