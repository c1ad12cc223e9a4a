"""Captions files: SRT and WebVTT read to cues (markup dropped, every kind of mistake named by its
line), written back as WebVTT that reads to the same cues; overlapping cues shown together."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reelfarm.renderer.caption_layout import stretches
from reelfarm.renderer.captions import (
    MAX_CUE_CHARS,
    CaptionsInvalid,
    Cue,
    looks_like_captions,
    parse_captions,
    read_captions,
    write_webvtt,
)

SRT = (b"\xef\xbb\xbf1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>Hello</i> &amp; <font color=\"red\">world</font>\r\n\r\n"
       b"2\r\n00:00:03,000 --> 00:00:04,250 X1:10 X2:20\r\n{\\an8}Two\r\nlines\r\n")
VTT = (b"WEBVTT - launch film\nKind: captions\n\nNOTE written by hand\nover two lines\n\nSTYLE\n::cue { color: red }\n\n"
       b"intro\n00:01.000 --> 00:02.000 align:start line:0\n<v Ana>Hi</v> &lt;3 <00:01.500><b>there</b>\n\n"
       b"01:00:00.000 --> 01:00:01.000\n<c.loud>late</c>\n")


def test_srt_is_read_with_its_markup_dropped() -> None:
    assert read_captions(SRT) == ("srt", [Cue(1.0, 2.5, "Hello & world"), Cue(3.0, 4.25, "Two\nlines")])


def test_webvtt_is_read_skipping_its_header_notes_styles_identifiers_and_settings() -> None:
    assert read_captions(VTT) == ("vtt", [Cue(1.0, 2.0, "Hi <3 there"), Cue(3600.0, 3601.0, "late")])


def test_cues_come_out_in_time_order() -> None:
    data = b"1\n00:00:05,000 --> 00:00:06,000\nb\n\n2\n00:00:01,000 --> 00:00:02,000\na\n"
    assert [c.text for c in parse_captions(data)] == ["a", "b"]


@pytest.mark.parametrize(("data", "line", "words"), [
    (b"1\n00:00:01,000 -> 00:00:02,000\nx\n", 2, "is not a cue timing"),
    (b"1\n00:00:01,000 --> 00:00:02\nx\n", 2, "'00:00:02' is not a time"),
    (b"1\n00:00:02,000 --> 00:00:01,000\nx\n", 2, "ends (00:00:01,000) before it starts"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nx\n\nhello\n00:00:03,000 --> 00:00:04,000\ny\n", 5, "is not a cue number"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nx\n00:00:03,000 --> 00:00:04,000\ny\n", 4, "timing line inside"),
    (b"1\n00:00:01,000 --> 00:00:02,000\n<i></i>\n", 2, "no words"),
    (b"1\n", 2, "expected the cue's timing"),
    (b"WEBVTT\n\n00:01.000 --> 00:00.500\nx\n", 3, "before it starts"),
    (b"WEBVTT\n\n00:01.000 --> 00:02.000\nx\n00:03.000 --> 00:04.000\ny\n", 5, "may not hold '-->'"),
    (b"WEBVTT\n\nidentifier\nnot a timing\n", 4, "expected a cue timing"),
    (b"WEBVTT\n00:01.000 --> 00:02.000\nx\n", 2, "blank line must separate"),
    (b"WEBVTTX\n\n00:01.000 --> 00:02.000\nx\n", 1, "begins with the line WEBVTT"),
    (b"WEBVTT\n\n1:2.000 --> 00:03.000\nx\n", 3, "'1:2.000' is not a time"),
    (b"WEBVTT\n\nNOTE only a note\n", 3, "no cues"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:03,000 --> 00:00:04,000\n\xff\xfe bad\n", 7, "not UTF-8"),
    (b"1\n00:00:01,000 --> 00:00:02,000\n" + b"w" * (MAX_CUE_CHARS + 1) + b"\n", 2, "more than the 500"),
])
def test_a_wrong_file_is_refused_naming_its_line(data: bytes, line: int, words: str) -> None:
    with pytest.raises(CaptionsInvalid) as caught:
        parse_captions(data)
    assert caught.value.line == line
    assert words in caught.value.reason
    assert str(caught.value).startswith(f"line {line}: ")


def test_files_are_told_from_other_text_by_their_first_lines() -> None:
    assert looks_like_captions(SRT) and looks_like_captions(VTT)
    assert not looks_like_captions(b"hello\nworld\n")
    assert not looks_like_captions(b"ID3\x03\x00")


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"),
                              exclude_characters="\u00a0\u200e\u200f"), min_size=1, max_size=40) \
    .map(str.strip).filter(lambda t: t and "-->" not in t)


@given(st.lists(st.tuples(st.integers(0, 3_600_000), st.integers(1, 60_000), _text), min_size=1, max_size=20))
def test_webvtt_written_reads_back_as_the_same_cues(items: list[tuple[int, int, str]]) -> None:
    cues = sorted((Cue(a / 1000, (a + d) / 1000, text) for a, d, text in items), key=lambda c: (c.start, c.end))
    assert read_captions(write_webvtt(cues).encode()) == ("vtt", cues)


def test_overlapping_cues_are_shown_together_and_stretches_split_at_every_edge() -> None:
    cues = (Cue(0.5, 2.0, "one"), Cue(1.5, 3.0, "two"), Cue(3.0, 3.5, "three"))
    assert stretches(cues, 0.0, 6.0) == [(0.5, 1.5, "one"), (1.5, 2.0, "one\ntwo"), (2.0, 3.0, "two"),
                                         (3.0, 3.5, "three")]
    assert stretches(cues, 1.0, 2.5) == [(1.0, 1.5, "one"), (1.5, 2.0, "one\ntwo"), (2.0, 2.5, "two")], \
        "cut to a scene's span"
    assert stretches((Cue(0, 1, "a"), Cue(1, 2, "a")), 0, 3) == [(0, 2, "a")], "the same words go on as one"
