"""API key format, checksum, hash and display prefix."""

from __future__ import annotations

import hashlib
import re
import zlib

import pytest

from reelfarm.shared.keys import (
    BASE62,
    checksum,
    checksum_ok,
    constant_time_equals,
    generate_key,
    hash_key,
    key_prefix,
)


def test_generated_keys_have_the_published_shape() -> None:
    key = generate_key()
    assert re.fullmatch(r"rf_live_[0-9A-Za-z]{32}[0-9A-Za-z]{6}", key)
    assert checksum_ok(key)


def test_generated_keys_differ() -> None:
    assert len({generate_key() for _ in range(200)}) == 200


def test_checksum_is_crc32_in_six_zero_padded_base62_digits() -> None:
    body = "0" * 32
    value = 0
    for char in checksum(body):
        value = value * 62 + BASE62.index(char)
    assert value == zlib.crc32(body.encode()) == 2700251856
    # Fixed vectors: clients and secret scanners check keys offline, so the format must not drift.
    assert checksum(body) == "2wjyrI"
    assert checksum("A" * 32) == "3Ae0o2"
    assert checksum_ok("rf_live_" + "0" * 32 + "2wjyrI")
    assert checksum("") == "000000"  # crc32 of nothing is 0: padded to six digits


def test_every_single_character_typo_is_caught() -> None:
    key = generate_key()
    start = len("rf_live_")
    for position in range(start, len(key)):
        for replacement in "0aZ":
            if key[position] == replacement:
                continue
            typo = key[:position] + replacement + key[position + 1:]
            assert not checksum_ok(typo), typo


@pytest.mark.parametrize("bad", [
    "",
    "rf_live_",
    "rf_test_" + "A" * 38,
    "rf_live_" + "A" * 37,  # one short
    "rf_live_" + "A" * 39,  # one long
    "rf_live_" + "A" * 31 + "-" + "A" * 6,
    " rf_live_" + "A" * 38,
])
def test_malformed_keys_are_refused(bad: str) -> None:
    assert not checksum_ok(bad)


def test_a_key_with_another_bodys_checksum_is_refused() -> None:
    assert not checksum_ok("rf_live_" + "0" * 32 + "3Ae0o2")


def test_hash_is_sha256_hex_of_the_whole_key() -> None:
    key = generate_key()
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()
    assert len(hash_key(key)) == 64


def test_prefix_shows_the_kind_and_four_characters() -> None:
    key = "rf_live_AbCd" + "x" * 28 + checksum("AbCd" + "x" * 28)
    assert key_prefix(key) == "rf_live_AbCd"


def test_constant_time_equals() -> None:
    assert constant_time_equals("abc", "abc")
    assert not constant_time_equals("abc", "abd")
    assert not constant_time_equals("abc", "abcd")
