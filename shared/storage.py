"""Object storage for renders, posters, stills and chunk segments: local files or S3.

Keys are relative, slash-separated paths (``renders/<id>/video.mp4``). Download URLs are
signed and expire: ``LocalStorage`` signs ``{public_url}/files/{key}?expires=..&sig=..``
itself and checks them in ``verify`` (the API's ``/files/`` route calls it); ``S3Storage``
hands out presigned S3 URLs.

A ``/files/`` URL with ``download=1`` (``download_url``) is answered as an attachment named by
its ``name`` parameter (``attachment_name``, ``content_disposition``); without it the file is
``inline`` for players. Only the key and the expiry are signed, so these parameters neither
break a signature nor stand in for one. ``url(key, ttl, filename)`` puts ``name`` in the URL it
signs, so that ``download=1`` alone names the file; an S3 URL made with a ``filename`` is
answered as an attachment of that name by S3 itself.

No stored file may run script in a browser that opens its link. The ``/files/`` route answers
every file with a Content-Security-Policy that forbids it and ``nosniff``. S3 answers with no
header of ours but an object's stored ``Content-Type`` and ``Content-Disposition``, so what it
serves inline is limited to types that cannot run anything (``served_inline``: raster images,
video, audio); any other object (an SVG, sanitised or not, or a type a remote server named) is
stored as an ``attachment``, which a browser that navigates to it downloads and an ``<img>`` still
draws, and a presigned GET of an ``.svg`` key asks S3 for an attachment as well (covering objects
stored before the rule).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Protocol
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from itsdangerous import Signer

from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.config import Settings, parse_storage_url
from reelfarm.shared.errors import InvalidStorageKey, ObjectNotFound, StorageError

# The address a request came in on, while the API answers it and no public URL is configured:
# links made meanwhile (signed file URLs, the console's invitation links) lead back to it.
_SERVED_AT: ContextVar[str | None] = ContextVar("reelfarm_served_at", default=None)

MAX_KEY_LENGTH = 512
_KEY_SEGMENT = re.compile(r"[A-Za-z0-9._=+@-]+")
_SIGNING_SALT = "reelfarm.storage.url"
DOWNLOAD_PARAM = "download"
NAME_PARAM = "name"
MAX_NAME_CHARS = 150
_RESERVED_IN_NAMES = re.compile(r'[/\\:*?"<>|]')
_UNSAFE_IN_FALLBACK = re.compile(r'[^A-Za-z0-9 !#$&\'()+,.;=@\[\]^_`{}~-]')
_INLINE_IMAGES = ("image/png", "image/jpeg", "image/webp", "image/gif")
ATTACHMENT = "attachment"


def serve_at(base: str) -> Token[str | None]:
    """Until ``reset_served_at(token)``, links in this context lead to ``base`` (``http://host:port``)."""
    return _SERVED_AT.set(base.rstrip("/"))


def reset_served_at(token: Token[str | None]) -> None:
    _SERVED_AT.reset(token)


def public_base(configured: str) -> str:
    """The root that links made now should lead to: the request's own address while one is being
    answered without a configured public URL, otherwise ``configured``."""
    return _SERVED_AT.get() or configured.rstrip("/")


class Storage(Protocol):
    """Where files produced by the farm live, and how clients are sent to them."""

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        """Store ``data`` under ``key``, replacing what was there (atomically)."""
        ...

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str) -> None:
        """Store the file at ``path`` under ``key``, replacing what was there (atomically)."""
        ...

    def get_bytes(self, key: str) -> bytes:
        """The stored bytes. Raises ObjectNotFound."""
        ...

    def open_local(self, key: str) -> str:
        """A local filesystem path holding the object (downloaded to a cache if remote)."""
        ...

    def exists(self, key: str) -> bool: ...

    def list_keys(self, folder: str) -> list[str]:
        """The keys stored in the folder ``folder`` (at any depth below it), sorted: one listing,
        where asking ``exists`` of each would be a request each (an S3 HEAD)."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; a missing one is not an error."""
        ...

    def url(self, key: str, expires_in: int, filename: str | None = None, now: datetime | None = None) -> str:
        """A signed download URL valid for ``expires_in`` seconds (from ``now`` in whole seconds,
        where given: a caller stating the expiry reads its clock once; S3 signs with its own
        time); ``filename``, the name a download of it is saved under (``attachment_name``
        sanitises it)."""
        ...

    def size(self, key: str) -> int:
        """Size in bytes. Raises ObjectNotFound."""
        ...

    def modified(self, key: str) -> datetime:
        """When the object was last written (UTC). Raises ObjectNotFound."""
        ...


def check_key(key: str) -> str:
    """Return ``key`` if it is a safe relative path of plain segments, else raise InvalidStorageKey."""
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidStorageKey(key, f"must be 1 to {MAX_KEY_LENGTH} characters")
    if key.startswith("/"):
        raise InvalidStorageKey(key, "must be relative")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidStorageKey(key, "empty, '.' and '..' segments are not allowed")
        if not _KEY_SEGMENT.fullmatch(segment):
            raise InvalidStorageKey(key, "only letters, digits and . _ = + @ - are allowed")
    return key


class LocalStorage:
    """Files under ``root``; URLs point at the API's ``/files/`` route and are HMAC-signed.

    Content types are not stored: the route serving ``/files/`` derives them from the key's
    extension (``.mp4``, ``.png``, ``.ts``).
    """

    def __init__(self, root: str | os.PathLike[str], public_url: str, secret_key: str,
                 clock: Clock | None = None) -> None:
        self.root = Path(root).resolve()
        self.public_url = public_url.rstrip("/")
        self._signer = Signer(secret_key, salt=_SIGNING_SALT, key_derivation="hmac",
                              digest_method=hashlib.sha256)
        self._clock = clock or SystemClock()

    def path(self, key: str) -> Path:
        """The file that holds ``key`` (it may not exist)."""
        return self.root / check_key(key)

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        with _atomic_write(self.path(key)) as handle:
            handle.write(data)

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str) -> None:
        with _atomic_write(self.path(key)) as handle, open(path, "rb") as source:
            shutil.copyfileobj(source, handle, length=1024 * 1024)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def open_local(self, key: str) -> str:
        target = self.path(key)
        if not target.is_file():
            raise ObjectNotFound(key)
        return str(target)

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def list_keys(self, folder: str) -> list[str]:
        top = self.path(folder)
        if not top.is_dir():
            return []
        # files being written (``_atomic_write``) are hidden until renamed into place
        return sorted(path.relative_to(self.root).as_posix() for path in top.rglob("*")
                      if path.is_file() and not path.name.startswith("."))

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def size(self, key: str) -> int:
        try:
            return self.path(key).stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def modified(self, key: str) -> datetime:
        try:
            return datetime.fromtimestamp(self.path(key).stat().st_mtime, UTC)
        except (FileNotFoundError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def url(self, key: str, expires_in: int, filename: str | None = None, now: datetime | None = None) -> str:
        """``/files/KEY?expires=..&sig=..``, and ``name=`` when ``filename`` is given: the name a
        ``download=1`` of it is answered with (unsigned, as a name added later is)."""
        check_key(key)
        expires = int((now or self._clock.now()).timestamp()) + expires_in
        fields: dict[str, str | int] = {"expires": expires, "sig": self._signature(key, expires)}
        if filename:
            fields[NAME_PARAM] = attachment_name(filename, key)
        query = urlencode(fields, quote_via=quote)
        return f"{public_base(self.public_url)}/files/{quote(key, safe='/')}?{query}"

    def verify(self, key: str, expires: int | str, sig: str) -> bool:
        """Whether a URL's ``key``, ``expires`` and ``sig`` are genuine and not yet expired.

        Constant-time in the signature; False (never an exception) for anything malformed.
        """
        try:
            check_key(key)
            expires_at = int(expires)
        except (InvalidStorageKey, ValueError, TypeError):
            return False
        # The expiry is part of what is signed, so a client cannot extend it.
        genuine = self._signer.verify_signature(_signed_value(key, expires_at), sig)
        return genuine and self._clock.now().timestamp() <= expires_at

    def _signature(self, key: str, expires: int) -> str:
        return self._signer.get_signature(_signed_value(key, expires)).decode("ascii")


def download_url(url: str, name: str) -> str:
    """``url``, a signed ``/files/`` URL, asking for the file as an attachment called ``name``.

    A URL signed another way (an S3 presigned URL signs its whole query) is returned unchanged:
    a parameter added to it would break its signature.
    """
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in (DOWNLOAD_PARAM, NAME_PARAM)]
    if "/files/" not in parts.path or not {"expires", "sig"} <= {k for k, _ in query}:
        return url
    query += [(DOWNLOAD_PARAM, "1"), (NAME_PARAM, name)]
    return parts._replace(query=urlencode(query, quote_via=quote)).geturl()


def attachment_name(asked: str, key: str) -> str:
    """The name a download of ``key`` is saved under: ``asked`` without control characters or
    path and reserved punctuation, at most ``MAX_NAME_CHARS`` long and ending in the key's own
    extension; the key's file name when nothing of ``asked`` is left."""
    suffix = PurePosixPath(key).suffix
    text = "".join(ch for ch in unicodedata.normalize("NFC", asked[:1000]) if unicodedata.category(ch)[0] != "C")
    text = " ".join(_RESERVED_IN_NAMES.sub("-", text).split()).strip(" .-")
    if suffix and text.lower().endswith(suffix.lower()):
        text = text[:-len(suffix)].rstrip(" .-")
    text = text[:MAX_NAME_CHARS - len(suffix)].rstrip(" .-")
    return f"{text}{suffix}" if text else PurePosixPath(key).name


def content_disposition(name: str) -> str:
    """``attachment`` naming ``name`` twice (RFC 6266): an ASCII fallback in ``filename`` for
    old clients and the UTF-8 name in ``filename*``."""
    suffix = PurePosixPath(name).suffix
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    plain = " ".join(_UNSAFE_IN_FALLBACK.sub("_", plain).split())
    if not plain.removesuffix(suffix).strip(" ._"):
        plain = f"download{suffix}"
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


def served_inline(content_type: str) -> bool:
    """Whether a file of ``content_type`` may be shown inline where no Content-Security-Policy
    guards it: a raster image, video or audio, which a browser shows without running anything."""
    kind = content_type.split(";")[0].strip().lower()
    return kind in _INLINE_IMAGES or kind.startswith(("video/", "audio/"))


def _signed_value(key: str, expires: int) -> bytes:
    # A newline cannot occur in a key, so (key, expires) pairs never collide.
    return f"{key}\n{expires}".encode()


@contextmanager
def _atomic_write(target: Path) -> Iterator[BinaryIO]:
    """Write beside ``target`` and rename over it only once the write has finished."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class S3Storage:
    """Objects in an S3 bucket under ``prefix``; presigned GET URLs (and PUT URLs, for uploads a
    client sends straight to the bucket); a local download cache."""

    def __init__(self, bucket: str, prefix: str, client: Any, cache_dir: str | os.PathLike[str]) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.cache_dir = Path(cache_dir).resolve()

    def object_key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        self._call(key, self.client.put_object, Bucket=self.bucket, Key=self.object_key(key),
                   Body=data, **_stored_headers(content_type))

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str) -> None:
        self._call(key, self.client.upload_file, str(path), self.bucket, self.object_key(key),
                   ExtraArgs=_stored_headers(content_type))

    def get_bytes(self, key: str) -> bytes:
        response = self._call(key, self.client.get_object, Bucket=self.bucket, Key=self.object_key(key))
        return bytes(response["Body"].read())

    def open_local(self, key: str) -> str:
        """Download once into the cache; later calls reuse the copy while its size still matches."""
        target = self.cache_dir / check_key(key)
        remote_size = self.size(key)
        if target.is_file() and target.stat().st_size == remote_size:
            return str(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(fd)
        try:
            self._call(key, self.client.download_file, self.bucket, self.object_key(key), tmp)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return str(target)

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
        except ObjectNotFound:
            return False
        return True

    def list_keys(self, folder: str) -> list[str]:
        inside = self.object_key(folder).rstrip("/") + "/"
        strip = len(self.prefix) + 1 if self.prefix else 0
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=inside)
        found = [item["Key"][strip:] for page in self._call(folder, list, pages) for item in page.get("Contents", [])]
        return sorted(found)

    def delete(self, key: str) -> None:
        self._call(key, self.client.delete_object, Bucket=self.bucket, Key=self.object_key(key))

    def size(self, key: str) -> int:
        head = self._call(key, self.client.head_object, Bucket=self.bucket, Key=self.object_key(key))
        return int(head["ContentLength"])

    def modified(self, key: str) -> datetime:
        head = self._call(key, self.client.head_object, Bucket=self.bucket, Key=self.object_key(key))
        return head["LastModified"].astimezone(UTC)

    def url(self, key: str, expires_in: int, filename: str | None = None, now: datetime | None = None) -> str:
        """A presigned GET (signed with boto's own time, ``now`` aside); with ``filename``, S3
        answers it as an attachment of that name (``ResponseContentDisposition``, signed with the
        rest: a presigned URL takes no ``download=1`` added later)."""
        params = {"Bucket": self.bucket, "Key": self.object_key(key)}
        if filename:
            params["ResponseContentDisposition"] = content_disposition(attachment_name(filename, key))
        elif key.lower().endswith(".svg"):
            params["ResponseContentDisposition"] = ATTACHMENT
        return str(self._call(key, self.client.generate_presigned_url, "get_object",
                              Params=params, ExpiresIn=expires_in))

    def upload_url(self, key: str, expires_in: int, content_type: str, size: int) -> str:
        """A presigned PUT of ``key`` valid for ``expires_in`` seconds: the client sends the bytes
        itself, with exactly this ``Content-Type`` and ``Content-Length`` (both are signed with the
        rest, so S3 refuses a PUT of any other size: the URL cannot store more than was declared).

        The object it writes is staged, never served (no GET URL is made for it): the bytes are
        read back, checked and stored again with ``put_bytes``, whose rules then apply; so the PUT
        asks the client for no further header."""
        params = {"Bucket": self.bucket, "Key": self.object_key(key), "ContentType": content_type,
                  "ContentLength": size}
        return str(self._call(key, self.client.generate_presigned_url, "put_object",
                              Params=params, ExpiresIn=expires_in))

    def _call(self, key: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        from boto3.exceptions import Boto3Error
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return method(*args, **kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound"):
                raise ObjectNotFound(key) from None
            raise StorageError(f"S3 {code or 'error'} on {key!r}: {exc}") from exc
        except (BotoCoreError, Boto3Error) as exc:
            raise StorageError(f"S3 request for {key!r} failed: {exc}") from exc


def _stored_headers(content_type: str) -> dict[str, str]:
    """What an S3 object is stored with: its type and, unless ``served_inline``, ``attachment``."""
    if served_inline(content_type):
        return {"ContentType": content_type}
    return {"ContentType": content_type, "ContentDisposition": ATTACHMENT}


def make_storage(settings: Settings, clock: Clock | None = None) -> Storage:
    """The storage ``settings.storage_url`` names: ``file://DIR`` or ``s3://BUCKET/PREFIX``.

    S3 credentials and region come from boto3's usual sources (environment, config files,
    instance roles).
    """
    scheme, location, prefix = parse_storage_url(settings.storage_url)
    if scheme == "file":
        return LocalStorage(location, settings.public_url, settings.secret_key, clock)
    client = make_s3_client(settings.s3_endpoint_url)
    return S3Storage(location, prefix, client, settings.data_dir / "cache" / "s3")


S3_CONNECT_TIMEOUT_SEC = 3
S3_READ_TIMEOUT_SEC = 10  # waiting for an answer, or for a send to move on: a silent host fails the attempt
S3_ATTEMPTS = 3  # botocore's standard retry mode (throttling, 5xx, connection errors; backoff under 4 s): a silent host fails a call in about 40 s


def make_s3_client(endpoint_url: str | None = None, **kwargs: Any) -> Any:
    """A boto3 S3 client signing with SigV4; path-style addressing for S3-compatible services.

    Every call is bounded: a storage host that goes silent fails an attempt after the read
    timeout, and a call after ``S3_ATTEMPTS`` attempts (``StorageError``), so a chunk's upload
    fails in bounded time and the chunk is retried rather than stuck.
    """
    import boto3  # slow to import: only S3 users pay for it
    from botocore.config import Config

    addressing = "path" if endpoint_url else "auto"
    config = Config(signature_version="s3v4", s3={"addressing_style": addressing},
                    connect_timeout=S3_CONNECT_TIMEOUT_SEC, read_timeout=S3_READ_TIMEOUT_SEC, tcp_keepalive=True,
                    retries={"mode": "standard", "max_attempts": S3_ATTEMPTS})
    return boto3.client("s3", endpoint_url=endpoint_url, config=config, **kwargs)
