"""The media library's words for a person: a file's name as kept (cleaned) or as given (checked),
sizes in KB, MB and GB, and what a refused image says of its bytes and pixels."""
from __future__ import annotations

import pytest

from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.farm.services.media import MAX_IMAGE_BYTES, MediaRefused, admit
from reelfarm.farm.services.media_names import check_name, file_name, url_file_name
from reelfarm.farm.services.media_sizes import file_size
from tests.integration.api.test_api_assets import huge_png


@pytest.mark.parametrize(("sent", "kept"), [
    ("Team photo.png", "Team photo.png"),
    ("uploads/2026/Team photo.png", "Team photo.png"),  # a path: its last part
    ("C:\\fakepath\\logo.svg", "logo.svg"),
    ("  two\t\tspaces\n.png ", "two spaces .png"),
    ("bell\x07.wav", "bell.wav"),  # control characters go
    ("Cafe\u0301.png", "Café.png"),  # one way of writing each letter (NFC)
    ("x" * 300 + ".png", "x" * 255),
    ("", None), (None, None), ("   ", None), ("dir/", None), ("..", None),
])
def test_a_file_name_is_kept_as_a_label(sent, kept):
    assert file_name(sent) == kept


@pytest.mark.parametrize(("url", "kept"), [
    ("https://example.com/img/Team%20Photo%20%28final%29.png?size=2#top", "Team Photo (final).png"),
    ("https://example.com/a/..%2F..%2Fetc%2Fpasswd", "passwd"),
    ("https://example.com/a%5Cb.png", "b.png"),
    ("https://example.com/%E2%99%AA%20song.mp3", "♪ song.mp3"),
    ("https://example.com/", None), ("https://example.com", None), ("https://example.com/x/%0A%0D", None),
])
def test_an_address_names_what_it_sent_by_its_last_part(url, kept):
    assert url_file_name(url) == kept


def test_a_name_given_by_a_person_is_checked_not_changed():
    assert check_name("  Launch film (final).mp4 ") == "Launch film (final).mp4"
    assert check_name("x" * 255) == "x" * 255
    for bad, code in (("", "blank"), (" \t", "blank"), ("x" * 256, "too_long"), ("a/b", "invalid"),
                      ("a\\b", "invalid"), ("line\nbreak", "invalid"), ("nul\x00", "invalid")):
        with pytest.raises(InvalidRequest) as caught:
            check_name(bad)
        assert [(d["field"], d["code"]) for d in caught.value.details] == [("/name", code)], bad


@pytest.mark.parametrize(("size", "words"), [
    (0, "0 bytes"), (1023, "1023 bytes"), (2048, "2 KB"), (30_742_583, "29.3 MB"), (20 * 1024 * 1024, "20 MB"),
    (52_428_801, "50 MB"), (3 * 1024 ** 3, "3 GB"), (int(1.25 * 1024 ** 3), "1.2 GB"),
])
def test_sizes_are_said_in_words(size, words):
    assert file_size(size) == words


def refusal(data: bytes) -> MediaRefused:
    with pytest.raises(MediaRefused) as caught:
        admit(data)
    return caught.value


def test_a_refused_image_names_its_size_in_megabytes_and_its_pixels():
    heavy = refusal(b"\x89PNG\r\n\x1a\n" + b"\0" * (30_742_583 - 8))
    assert (heavy.reason, heavy.code) == ("the image is 29.3 MB, more than the 20 MB allowed", "too_large")
    just_over = refusal(b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_IMAGE_BYTES - 7))
    assert just_over.reason == "the image is larger than the 20 MB allowed"  # never "20 MB, more than 20 MB"
    assert refusal(huge_png(8000, 6000)).reason == ("the image is 8000×6000 pixels (48 million), more than the "
                                                    "40 million pixels allowed")
    # past the decoder's own guard (89 million pixels and more) the size is still named
    assert refusal(huge_png(50_000, 50_000)).reason == ("the image is 50000×50000 pixels, more than the 16384 "
                                                        "pixels on a side allowed")
    assert refusal(huge_png(12_000, 9_000)).reason.startswith("the image is 12000×9000 pixels (108 million)")
