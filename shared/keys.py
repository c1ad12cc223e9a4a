"""API keys: ``rf_live_`` + 32 random base62 characters + a 6-character base62 CRC32 checksum.

The checksum lets a typo or a truncated paste be refused without touching the database, and
lets secret scanners recognise a real key. Only ``hash_key(key)`` is stored, with
``key_prefix(key)`` for display; the plaintext is shown once, when the key is made.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import zlib

KEY_PREFIX = "rf_live_"
BODY_LENGTH = 32
CHECKSUM_LENGTH = 6
DISPLAY_LENGTH = 12  # "rf_live_" and the first four random characters
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_KEY = re.compile(rf"{KEY_PREFIX}([0-9A-Za-z]{{{BODY_LENGTH}}})([0-9A-Za-z]{{{CHECKSUM_LENGTH}}})")


def generate_key() -> str:
    """A new random key (about 190 bits of entropy) with its checksum."""
    body = "".join(secrets.choice(BASE62) for _ in range(BODY_LENGTH))
    return KEY_PREFIX + body + checksum(body)


def checksum(body: str) -> str:
    """CRC32 of ``body`` written as 6 base62 digits, zero-padded (62**6 > 2**32)."""
    value = zlib.crc32(body.encode("ascii"))
    digits = []
    for _ in range(CHECKSUM_LENGTH):
        value, rest = divmod(value, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits))


def checksum_ok(key: str) -> bool:
    """Whether ``key`` has the right shape and a matching checksum. Pure: no database."""
    match = _KEY.fullmatch(key)
    if match is None:
        return False
    body, check = match.groups()
    return constant_time_equals(checksum(body), check)


def hash_key(key: str) -> str:
    """SHA-256 of the key, hex; what the database stores and looks keys up by.

    A fast hash is enough: keys are 190-bit random strings, not passwords.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_prefix(key: str) -> str:
    """The displayable start of a key, e.g. ``rf_live_AbCd``."""
    return key[:DISPLAY_LENGTH]


def constant_time_equals(a: str, b: str) -> bool:
    """Compare two secrets without leaking where they first differ."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
