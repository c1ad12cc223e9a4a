"""Captions: cues read from SRT and WebVTT files, and written back as WebVTT.

``parse_captions(data)`` reads a captions file (UTF-8, with or without a byte order mark, any line
ending) and answers its cues in time order, or raises ``CaptionsInvalid`` naming the first line
that is wrong and why, in words for the person who wrote the file. What a cue keeps is what a video
draws: its start and end in seconds and its text as plain lines. Markup is read and dropped: WebVTT's
``<b>``, ``<i>``, ``<c.class>``, ``<v Speaker>``, inline timestamps and character references, SRT's
``<i>``, ``<font ...>`` and ``{\\an8}``-style tags. WebVTT's header, ``NOTE``, ``STYLE`` and
``REGION`` blocks, cue identifiers and cue settings are read and left out; SRT's cue numbers are
read (each must be a number) and not kept.

Limits a file must keep: at most ``MAX_CUES`` cues of at most ``MAX_CUE_CHARS`` characters each,
times under ``MAX_TIME_SEC``, each cue ending after it starts. Cues may overlap (both are shown).

``write_webvtt(cues)`` is the file a render publishes: a WebVTT document of the same cues, their
text escaped (``&``, ``<``, ``>``), which ``parse_captions`` reads back to the same cues.
``cues_between`` is the cues shown in a span of time (a chunk, an HLS segment), and ``Captions`` the
document's captions as the renderer holds them (``reelfarm.renderer.model.Doc.captions``).
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reelfarm.renderer.errors import RendererError

__all__ = [
    "CAPTION_POSITIONS",
    "CAPTION_SIZES",
    "CAPTION_STYLES",
    "MAX_CUES",
    "MAX_CUE_CHARS",
    "MAX_TIME_SEC",
    "Captions",
    "CaptionsInvalid",
    "Cue",
    "cues_between",
    "looks_like_captions",
    "parse_captions",
    "read_captions",
    "shown_cues",
    "write_webvtt",
]

MAX_CUES = 5000
MAX_CUE_CHARS = 500
MAX_TIME_SEC = 24 * 3600.0
CAPTION_STYLES = ("box", "inverse", "primary")
"""``box``: the brand's background colour on a box of its text colour (light words on a dark bar, for
most brands); ``inverse``: the text colour on a box of the background colour; ``primary``: the
background colour on a box of the primary colour."""
CAPTION_POSITIONS = ("bottom", "top")
CAPTION_SIZES = ("small", "medium", "large")

_VTT_TIME = re.compile(r"^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})$")
_SRT_TIME = re.compile(r"^(\d{1,3}):([0-5]?\d):([0-5]?\d)[,.](\d{1,3})$")
_VTT_SHAPE = "HH:MM:SS.mmm or MM:SS.mmm"
_ARROW = re.compile(r"\s+-->\s+")
_VTT_TAG = re.compile(r"<[^>]*>")
_SRT_TAG = re.compile(r"</?(?:i|b|u|s|font)(?:\s[^>]*)?>|\{\\[^}]*\}", re.IGNORECASE)


class CaptionsInvalid(RendererError):
    """A captions file that cannot be read: ``line`` (1-based) is where, ``reason`` says why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class Cue:
    """Words shown from ``start`` to ``end`` seconds (``start <= t < end``)."""

    start: float
    end: float
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class Captions:
    """A document's captions: its cues (in the document's order) and how they are drawn."""

    cues: tuple[Cue, ...]
    style: str = "box"
    position: str = "bottom"
    size: str = "medium"
    font: tuple[str, int] | None = None  # (family, weight) drawn instead of the brand's body font

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Captions:
        cues = tuple(Cue(float(c["start"]), float(c["end"]), str(c["text"])) for c in raw.get("cues", ()))
        font = raw.get("font")
        return cls(cues, raw.get("style", "box"), raw.get("position", "bottom"), raw.get("size", "medium"),
                   (str(font["family"]), int(font.get("weight", 400))) if font else None)


def cues_between(cues: Iterable[Cue], t0: float, t1: float) -> list[Cue]:
    """The cues shown at some time in ``[t0, t1)``."""
    return [c for c in cues if c.start < t1 and c.end > t0]


def read_captions(data: bytes) -> tuple[str, list[Cue]]:
    """The format (``vtt`` or ``srt``) and cues of a captions file. Raises CaptionsInvalid."""
    lines = _lines(data)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("WEBVTT") or lines[0].startswith("WEBVTT"):
        return "vtt", _vtt(lines)
    return "srt", _srt(lines)


def parse_captions(data: bytes) -> list[Cue]:
    """The cues of an SRT or WebVTT file, in time order. Raises CaptionsInvalid."""
    return read_captions(data)[1]


def looks_like_captions(data: bytes) -> bool:
    """Whether ``data`` begins as a WebVTT file or an SRT file does (a number line, then a timing
    line); its cues may still be wrong (``parse_captions`` says where)."""
    head = data[:512].lstrip(b"\xef\xbb\xbf")
    if head.startswith(b"WEBVTT"):
        return True
    found = re.match(rb"\s*\d+[ \t]*\r?\n[ \t]*\d{1,3}:\d{1,2}:\d{1,2}[,.]\d{1,3}\s+-->", head)
    return found is not None


def _lines(data: bytes) -> list[str]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    raw = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    lines = []
    for number, line in enumerate(raw, start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise CaptionsInvalid(number, "the line is not UTF-8 text; save the file as UTF-8") from None
        if "\x00" in lines[-1]:
            raise CaptionsInvalid(number, "the line holds a NUL character; a captions file is text")
    return lines


def _blocks(lines: Sequence[str], start: int = 0) -> Iterable[tuple[int, list[str]]]:
    """Runs of non-blank lines: (the 0-based index of the first, its lines)."""
    block: list[str] = []
    first = start
    for i in range(start, len(lines)):
        if lines[i].strip():
            if not block:
                first = i
            block.append(lines[i])
        elif block:
            yield first, block
            block = []
    if block:
        yield first, block


def _seconds(match: re.Match[str], hours_at: int = 1) -> float:
    hours = int(match.group(hours_at) or 0)
    minutes, seconds, millis = int(match.group(2)), int(match.group(3)), match.group(4)
    return (((hours * 60 + minutes) * 60 + seconds) * 1000 + int(millis.ljust(3, "0"))) / 1000.0


def _timing(line: str, number: int, pattern: re.Pattern[str], shape: str) -> tuple[float, float]:
    parts = _ARROW.split(line.strip(), maxsplit=1)
    if len(parts) != 2:
        raise CaptionsInvalid(number, f"{line.strip()!r} is not a cue timing ({shape} --> {shape})")
    start_text, rest = parts[0], parts[1].split()
    end_text = rest[0] if rest else ""
    start, end = pattern.match(start_text), pattern.match(end_text)
    for text, found in ((start_text, start), (end_text, end)):
        if found is None:
            raise CaptionsInvalid(number, f"{text!r} is not a time ({shape})")
    assert start is not None and end is not None
    a, b = _seconds(start), _seconds(end)
    if b <= a:
        raise CaptionsInvalid(number, f"the cue ends ({end_text}) before it starts ({start_text}) or as it starts")
    if b >= MAX_TIME_SEC:
        raise CaptionsInvalid(number, f"{end_text} is past the {MAX_TIME_SEC / 3600:g} hours a cue may reach")
    return a, b


def _cue(start: float, end: float, text_lines: list[str], number: int, tags: re.Pattern[str]) -> Cue:
    text = "\n".join(html.unescape(tags.sub("", line)).replace("\u00a0", " ").strip() for line in text_lines)
    text = text.replace("\u200e", "").replace("\u200f", "").strip("\n")
    if not text.strip():
        raise CaptionsInvalid(number, "the cue has no words to show")
    if len(text) > MAX_CUE_CHARS:
        raise CaptionsInvalid(number, f"the cue has {len(text)} characters, more than the {MAX_CUE_CHARS} allowed")
    return Cue(start, end, text)


def _done(cues: list[Cue], lines: Sequence[str]) -> list[Cue]:
    if not cues:
        last = max((i for i, line in enumerate(lines) if line.strip()), default=0)
        raise CaptionsInvalid(last + 1, "the file has no cues")
    return sorted(cues, key=lambda c: (c.start, c.end))


def _count(cues: list[Cue], number: int) -> None:
    if len(cues) >= MAX_CUES:
        raise CaptionsInvalid(number, f"the file has more than the {MAX_CUES} cues allowed")


def _vtt(lines: Sequence[str]) -> list[Cue]:
    head = lines[0]
    if not (head == "WEBVTT" or head.startswith(("WEBVTT ", "WEBVTT\t"))):
        raise CaptionsInvalid(1, "a WebVTT file begins with the line WEBVTT (alone, or followed by a space)")
    cues: list[Cue] = []
    header = 1
    while header < len(lines) and lines[header].strip():
        if "-->" in lines[header]:
            raise CaptionsInvalid(header + 1, "a blank line must separate the WEBVTT line from the first cue")
        header += 1
    for first, block in _blocks(lines, header):
        word = block[0].strip().split(maxsplit=1)[0] if block[0].strip() else ""
        if word in ("NOTE", "STYLE", "REGION") and "-->" not in block[0]:
            continue
        timing_at = 0 if "-->" in block[0] else 1
        if timing_at >= len(block) or "-->" not in block[timing_at]:
            if _VTT_TIME.match(word):  # a timing written wrong, not an identifier
                _timing(block[0], first + 1, _VTT_TIME, _VTT_SHAPE)
            raise CaptionsInvalid(first + 1 + min(timing_at, len(block) - 1),
                                  "expected a cue timing (00:00:01.000 --> 00:00:03.000) after the cue's identifier")
        number = first + 1 + timing_at
        start, end = _timing(block[timing_at], number, _VTT_TIME, _VTT_SHAPE)
        _count(cues, number)
        body = block[timing_at + 1:]
        for k, line in enumerate(body):
            if "-->" in line:
                raise CaptionsInvalid(number + 1 + k, "a cue's text may not hold '-->'; "
                                                      "is a blank line missing before this cue?")
        cues.append(_cue(start, end, body, number, _VTT_TAG))
    return _done(cues, lines)


def _srt(lines: Sequence[str]) -> list[Cue]:
    cues: list[Cue] = []
    for first, block in _blocks(lines):
        if not block[0].strip().isdigit():
            what = "is not a cue number" if "-->" not in block[0] else "is a timing where the cue's number belongs"
            raise CaptionsInvalid(first + 1, f"{block[0].strip()[:80]!r} {what} "
                                             "(an SRT cue is a number, a timing line, then its text)")
        if len(block) < 2:
            raise CaptionsInvalid(first + 2, "expected the cue's timing (00:00:01,000 --> 00:00:03,000) "
                                             "after its number")
        number = first + 2
        start, end = _timing(block[1], number, _SRT_TIME, "HH:MM:SS,mmm")
        _count(cues, number)
        body = block[2:]
        for k, line in enumerate(body):
            if _ARROW.search(line) and _SRT_TIME.match(line.strip().split()[0]):
                raise CaptionsInvalid(number + 1 + k, "a timing line inside a cue's text; "
                                                      "is a blank line and a number missing before it?")
        cues.append(_cue(start, end, body, number, _SRT_TAG))
    return _done(cues, lines)


def _stamp(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def shown_cues(captions: Captions, duration: float) -> list[Cue]:
    """The cues a video ``duration`` seconds long shows, in time order: those starting before its end,
    each ending by then."""
    kept = (Cue(c.start, min(c.end, duration), c.text) for c in captions.cues if c.start < duration and c.end > c.start)
    return sorted(kept, key=lambda c: (c.start, c.end))


def write_webvtt(cues: Iterable[Cue], header: Sequence[str] = ()) -> str:
    """A WebVTT document of ``cues`` (with ``header`` lines after ``WEBVTT``: an HLS stream's
    ``X-TIMESTAMP-MAP``), which ``parse_captions`` reads back as the same cues."""
    out = ["WEBVTT", *header, ""]
    for cue in cues:
        text = "\n".join(html.escape(line, quote=False) or " " for line in cue.text.split("\n"))
        out += [f"{_stamp(cue.start)} --> {_stamp(cue.end)}", text, ""]
    return "\n".join(out)
