"""LocalStorage's signed, expiring download URLs and its key rules, with a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from reelfarm.shared.clock import FixedClock
from reelfarm.shared.errors import InvalidStorageKey
from reelfarm.shared.storage import LocalStorage, check_key

SECRET = "k" * 48
START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def storage(tmp_path: Path, clock: FixedClock) -> LocalStorage:
    return LocalStorage(tmp_path, "https://api.example.com/", SECRET, clock)


def parts(url: str) -> tuple[str, str, str]:
    """(key, expires, sig) of a URL made by LocalStorage.url."""
    split = urlsplit(url)
    query = parse_qs(split.query)
    return unquote(split.path.removeprefix("/files/")), query["expires"][0], query["sig"][0]


def test_url_shape(storage: LocalStorage) -> None:
    url = storage.url("renders/abc/video.mp4", expires_in=600)
    split = urlsplit(url)
    assert f"{split.scheme}://{split.netloc}{split.path}" == "https://api.example.com/files/renders/abc/video.mp4"
    key, expires, sig = parts(url)
    assert key == "renders/abc/video.mp4"
    assert int(expires) == int(START.timestamp()) + 600
    assert sig


def test_a_genuine_url_verifies_until_it_expires(storage: LocalStorage, clock: FixedClock) -> None:
    key, expires, sig = parts(storage.url("stills/a.png", expires_in=600))
    assert storage.verify(key, expires, sig)
    clock.advance(600)
    assert storage.verify(key, expires, sig)  # the last second is still valid
    clock.advance(1)
    assert not storage.verify(key, expires, sig)


def test_tampered_urls_are_refused(storage: LocalStorage) -> None:
    key, expires, sig = parts(storage.url("stills/a.png", expires_in=600))
    _, _, other_sig = parts(storage.url("stills/b.png", expires_in=600))

    assert not storage.verify("stills/b.png", expires, sig)  # another key
    assert not storage.verify(key, str(int(expires) + 3600), sig)  # a later expiry
    assert not storage.verify(key, expires, other_sig)  # another URL's signature
    assert not storage.verify(key, expires, sig[:-1] + ("A" if sig[-1] != "A" else "B"))
    assert not storage.verify(key, expires, "")
    assert not storage.verify(key, "soon", sig)
    assert not storage.verify("../etc/passwd", expires, sig)


def test_another_secret_signs_differently(tmp_path: Path, storage: LocalStorage, clock: FixedClock) -> None:
    key, expires, sig = parts(storage.url("a.mp4", expires_in=60))
    impostor = LocalStorage(tmp_path, "https://api.example.com", "x" * 48, clock)
    assert not impostor.verify(key, expires, sig)


def test_keys_with_spaces_are_refused_before_signing(storage: LocalStorage) -> None:
    with pytest.raises(InvalidStorageKey):
        storage.url("a b.mp4", expires_in=60)


@pytest.mark.parametrize("key", [
    "", "/etc/passwd", "../secret", "a/../b", "a/./b", "a//b", "a/", "a\\b", "a\nb", "a b", "a\x00b",
    "x" * 513,
])
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(InvalidStorageKey):
        check_key(key)


@pytest.mark.parametrize("key", ["a", "renders/0f3c/video.mp4", "chunks/r1/0007.ts", "a=b+c@d-e_f.g"])
def test_safe_keys_are_accepted(key: str) -> None:
    assert check_key(key) == key


def test_unsafe_keys_never_touch_the_filesystem(storage: LocalStorage, tmp_path: Path) -> None:
    with pytest.raises(InvalidStorageKey):
        storage.put_bytes("../outside.txt", b"x", "text/plain")
    assert not (tmp_path.parent / "outside.txt").exists()
