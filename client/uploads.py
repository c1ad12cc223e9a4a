"""What an upload sends, without sending it: a ``multipart/form-data`` body with one part ``file``,
laid out as the bytes before the file, the file's own bytes, and the bytes after.

Both clients stream the file between ``head`` and ``tail`` a chunk at a time (``_async/client.py``
and its generated twin), so a large file is never held in memory, and the body's length is known
before the first byte goes (``Content-Length``; no chunked encoding). A retried upload reads the
file again from ``start``: a file object must be seekable. No I/O here beyond ``stat``/``seek``.

A presigned upload (S3 servers) sends the file alone, without the multipart wrapping (``bare``),
to the URL the server answered, declaring its size and a type guessed from its name
(``content_type_of``; the server reads what it is from its bytes all the same).
"""
from __future__ import annotations

import dataclasses
import io
import mimetypes
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CHUNK = 1 << 16
PRESIGNED_OVER = 8 * 1024 * 1024
"""Files larger than this go by a presigned upload where the server offers one (``presigned=None``)."""
_UNSAFE = re.compile(r'[^A-Za-z0-9 ._()+,-]')
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}")

Content = str | os.PathLike[str] | IO[bytes] | bytes | bytearray | memoryview
Source = Content | tuple[str, Content] | tuple[str, Content, str]
"""What ``assets.upload`` takes: a path, a binary file object open for reading (read from where it
stands), the bytes themselves, or as httpx and requests take files, a tuple ``(name, content)`` or
``(name, content, content_type)``."""


@dataclass(frozen=True)
class Form:
    """The body of one upload: ``head``, then ``size`` bytes of the file from ``start``, then ``tail``."""

    path: Path | None  # the file to open, or None when ``file`` is given
    file: IO[bytes] | None
    start: int
    size: int
    head: bytes
    tail: bytes
    boundary: str
    name: str = "upload"
    declared_type: str | None = None  # the type a tuple named; else guessed from the name where needed

    @property
    def length(self) -> int:
        return len(self.head) + self.size + len(self.tail)

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"


def form_of(source: Source, filename: str | None = None) -> Form:
    """The upload of ``source``; ``filename`` is sent as the part's name (the server ignores it)."""
    declared: str | None = None
    if isinstance(source, tuple):
        if len(source) not in (2, 3) or not isinstance(source[0], str):
            raise TypeError("an upload tuple is (name, content) or (name, content, content_type)")
        filename = filename or source[0]
        declared = source[2] if len(source) == 3 else None
        source = source[1]
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
        filename = filename or "upload"
    if isinstance(source, (str, os.PathLike)):
        path: Path | None = Path(source)
        file, start, size = None, 0, Path(source).stat().st_size
        name = filename or Path(source).name
    else:
        if not source.seekable():
            raise ValueError("the file object must be seekable (its bytes are read again on a retry)")
        path, file, start = None, source, source.tell()
        size = source.seek(0, os.SEEK_END) - start
        source.seek(start)
        name = filename or Path(str(getattr(source, "name", "") or "upload")).name
    boundary = f"reelfarm-{uuid.uuid4().hex}"
    safe = _UNSAFE.sub("_", name)[:200] or "upload"
    part_type = declared if declared and _MEDIA_TYPE.fullmatch(declared) else "application/octet-stream"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{safe}\"\r\n"
            f"Content-Type: {part_type}\r\n\r\n").encode("ascii")
    tail = f"\r\n--{boundary}--\r\n".encode("ascii")
    return Form(path, file, start, size, head, tail, boundary, safe, declared)


def bare(form: Form) -> Form:
    """The file of ``form`` alone: no multipart head or tail (a presigned PUT's body)."""
    return dataclasses.replace(form, head=b"", tail=b"")


def content_type_of(name: str, declared: str | None = None) -> str:
    """The type a presigned upload of a file called ``name`` declares: the one given with it, else
    guessed from its extension."""
    if declared and _MEDIA_TYPE.fullmatch(declared):
        return declared
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"
