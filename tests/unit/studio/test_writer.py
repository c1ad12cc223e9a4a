"""The built-in writer: briefs to stories, facts kept, nothing invented, no text overflow."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelfarm.shared.config import Settings
from reelfarm.studio.errors import WriterError
from reelfarm.studio.llm import LLMWriter, make_writer
from reelfarm.studio.stories import NEUTRAL_BRAND, get_story, validate_fields
from reelfarm.studio.writer import Brief, BuiltinWriter, Script, compose

FORMATS = ("16:9", "9:16", "1:1", "4:5")
FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")
# Layers that count or number things on screen (3-2-1, tip 01): not facts of the brief.
ORNAMENTS = re.compile(r"count\.n\d+|tip\d+\.number")

CASES = {
    "sale": ("flash_sale",
             ("Our spring sale is on: 40% off everything in store. Use code SPRING40 at checkout. "
             "The sale ends Sunday at midnight. Shop now at shop.example.com/sale"),
             ["40%", "SPRING40", "Sunday at midnight", "shop.example.com/sale", "Shop now"]),
    "hiring": ("hiring",
               ("We're hiring a Senior Backend Engineer in Berlin. Full-time, hybrid, with a salary of €70k to €90k. "
               "You will own our payments platform. 30 days of paid leave. Apply today at example.com/jobs"),
               ["Senior Backend Engineer", "Berlin", "€70k", "€90k", "30 days", "example.com/jobs", "Apply today"]),
    "event": ("event_invite",
              ("Join us for the Design Systems Summit on Thursday, May 14 from 6 to 9 pm at The Glasshouse, Amsterdam. "
              "Talks, drinks and good company. RSVP at example.com/summit"),
              ["Design Systems Summit", "Thursday, May 14", "6 to 9 pm", "The Glasshouse, Amsterdam",
               "example.com/summit"]),
    "launch": ("product_launch",
               ("Introducing Aurora Lamp. Light that follows the rhythm of your day. Warm to daylight in one touch. "
               "Twelve hours on a single charge. Only $129. Pre-order now at aurora.example.com"),
               ["Aurora Lamp", "$129", "aurora.example.com", "Twelve hours on a single charge", "Pre-order now"]),
    "stats": ("stats_highlight",
              ("Our 2024 in numbers. Revenue grew 38% this year. We shipped 2.4M orders. "
              "Customers rated us 4.9 on average."),
              ["2024", "38%", "2.4M", "4.9"]),
    "webinar": ("webinar",
                ("Live webinar: Scaling design systems without the chaos, hosted by Maya Okafor, Head of Design at "
                "Northwind. June 3 at 5 pm CET. Save your seat at example.com/webinar"),
                ["Scaling design systems without the chaos", "Maya Okafor", "June 3", "5 pm CET",
                 "example.com/webinar"]),
    "tips": ("tips_list",
             ("4 habits for deeper sleep\n- Keep the same wake-up time\n- Dim the lights an hour before bed\n"
             "- Keep your bedroom cool\n- Save caffeine for the morning"),
             ["4 habits for deeper sleep", "Dim the lights an hour before bed", "Save caffeine for the morning"]),
    "milestone": ("milestone", "We just passed 10,000 customers! Thank you for being part of our story.",
                  ["10,000", "customers"]),
    "podcast": ("podcast_teaser",
                ('New episode of The Long Game podcast: Episode 42, "Why small teams ship faster" with Dana Whitfield, '
                "CTO at Fieldwork. Listen on Spotify and Apple Podcasts."),
                ["The Long Game", "Episode 42", "Why small teams ship faster", "Dana Whitfield", "Spotify"]),
    "testimonial": ("testimonial",
                    '"We cut our onboarding time in half," says Priya Raman, People Lead at Brightside. 5 stars.',
                    ["We cut our onboarding time in half", "Priya Raman", "People Lead at Brightside"]),
    "announcement": ("announcement",
                     "We are opening our second studio in the old town. Same team, same coffee. Visit us this Saturday.",
                     ["second studio", "this Saturday"]),
}
LONG_BRIEF = (
    "Introducing the Atlas Planner, the calm way to plan a busy week for teams of every size and shape. "
    + " ".join(f"Point {n}: it keeps every deadline, note and meeting of the whole team together in one place, "
               f"so nobody has to chase updates across five different apps ever again." for n in range(1, 9))
    + " Learn more at atlas.example.com/planner-for-teams-of-every-size"
)


def texts_of(doc: dict) -> Iterator[tuple[str, str]]:
    """(layer id, text) of every text layer, group children included."""
    def walk(layers: list[dict]) -> Iterator[tuple[str, str]]:
        for layer in layers:
            if layer.get("type") == "text":
                yield layer["id"], layer["text"]
            yield from walk(layer.get("children", []))

    for scene in doc["scenes"]:
        yield from walk(scene["layers"])


def doc_text(doc: dict) -> str:
    """What the video says; a star rating reads as its number of stars."""
    shown = "\n".join(text for layer_id, text in texts_of(doc) if not ORNAMENTS.fullmatch(layer_id))
    return re.sub(r"★+", lambda m: f"{len(m.group(0))} stars", shown)


@pytest.fixture(scope="module")
def writer() -> BuiltinWriter:
    return BuiltinWriter()


@pytest.fixture(scope="module")
def built(writer: BuiltinWriter) -> dict[str, tuple[Script, dict, list[dict]]]:
    out = {}
    for name, (_, text, _) in CASES.items():
        script = writer.write(Brief(text=text))
        doc, warnings = compose(script, NEUTRAL_BRAND, "16:9", script.duration_sec, None)
        out[name] = (script, doc, warnings)
    return out


@pytest.mark.parametrize("name", CASES)
def test_each_brief_gets_the_story_that_fits(built: dict, name: str) -> None:
    script = built[name][0]
    assert script.story_id == CASES[name][0]
    assert script.writer == "builtin"
    assert validate_fields(get_story(script.story_id), script.fields) == []
    assert set(script.fields) == set(get_story(script.story_id).fields["properties"])


@pytest.mark.parametrize("name", CASES)
def test_the_facts_of_the_brief_reach_the_video(built: dict, name: str) -> None:
    _, text, facts = CASES[name]
    shown = doc_text(built[name][1]).lower()
    for fact in facts:
        assert fact.lower() in shown, fact
    for figure in FIGURE.findall(text):
        assert figure in shown, f"{figure} of the brief is not in the video"


@pytest.mark.parametrize("name", CASES)
def test_no_figure_or_default_fact_is_invented(built: dict, name: str) -> None:
    story_id, text, _ = CASES[name]
    shown = doc_text(built[name][1])
    assert set(FIGURE.findall(shown)) <= set(FIGURE.findall(text))
    if "example.com" not in text:
        assert "example.com" not in shown
    for prop in get_story(story_id).fields["properties"].values():
        default = prop.get("default")
        values = default if isinstance(default, list) else [default]
        for value in values:
            if isinstance(value, str) and len(value) >= 15 and value.lower() not in text.lower():
                assert value not in shown, f"the story's default {value!r} leaked into the video"


def test_a_testimonial_shows_stars_only_when_the_brief_rates(writer: BuiltinWriter) -> None:
    rated = writer.write(Brief(text=CASES["testimonial"][1]))
    unrated = writer.write(Brief(text='"Setup took ten minutes," says Ana Lopes, CTO at Fieldwork.'))
    assert rated.fields["rating"] == 5
    assert unrated.story_id == "testimonial"
    assert unrated.fields["rating"] == 0


@pytest.mark.parametrize("name", CASES)
def test_no_text_overflows_in_any_format(writer: BuiltinWriter, name: str) -> None:
    script = writer.write(Brief(text=CASES[name][1]))
    for fmt in FORMATS:
        doc, warnings = compose(script, NEUTRAL_BRAND, fmt, script.duration_sec, "en")
        assert doc["format"] == fmt
        assert doc["locale"] == "en"
        assert [w for w in warnings if w["code"] == "text_overflow"] == []


def test_the_same_brief_gives_the_same_script_and_video(writer: BuiltinWriter) -> None:
    for _, text, _ in CASES.values():
        brief = Brief(text=text, format="9:16", duration_sec=12)
        first, second = writer.write(brief), BuiltinWriter().write(brief)
        assert first == second
        assert compose(first, NEUTRAL_BRAND, "9:16", 12, None) == compose(second, NEUTRAL_BRAND, "9:16", 12, None)


def test_a_long_brief_still_fits(writer: BuiltinWriter) -> None:
    script = writer.write(Brief(text=LONG_BRIEF, title="The Atlas Planner is here for every team"))
    story = get_story(script.story_id)
    assert validate_fields(story, script.fields) == []
    for fmt in FORMATS:
        doc, warnings = compose(script, NEUTRAL_BRAND, fmt, None, None)
        assert [w for w in warnings if w["code"] == "text_overflow"] == []
        assert set(FIGURE.findall(doc_text(doc))) <= set(FIGURE.findall(LONG_BRIEF))


def test_the_title_url_and_duration_of_the_brief_are_used(writer: BuiltinWriter) -> None:
    brief = Brief(text="Our studio moves to the old town next month.", title="We are moving",
                  url="https://www.example.org/moving/", duration_sec=90)
    script = writer.write(brief)
    assert script.story_id == "announcement"
    assert script.title == "We are moving"
    assert script.fields["headline"] == "We are moving"
    assert script.fields["url"] == "example.org/moving"
    assert script.duration_sec == 60.0
    doc, _ = compose(script, NEUTRAL_BRAND, "1:1", script.duration_sec, None)
    assert doc["duration"] == 60.0


def test_an_empty_brief_is_a_writer_error(writer: BuiltinWriter) -> None:
    with pytest.raises(WriterError):
        writer.write(Brief(text="  "))


def _settings(tmp_path: Path, **llm: str) -> Settings:
    return Settings(data_dir=tmp_path, database_url="sqlite://", storage_url=f"file://{tmp_path}",
                    secret_key="x" * 32, **llm)


def test_make_writer_picks_the_llm_only_when_configured(tmp_path: Path) -> None:
    assert isinstance(make_writer(_settings(tmp_path)), BuiltinWriter)
    writer = make_writer(_settings(tmp_path, llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_api_key="k"))
    assert isinstance(writer, LLMWriter)
    assert writer.url == "http://127.0.0.1:9/v1/chat/completions"
    assert isinstance(writer.fallback, BuiltinWriter)


def test_lint_pointers_reach_text_inside_groups() -> None:
    from reelfarm.studio.writer import _layer_text

    doc = {"scenes": [{"layers": [{"type": "text", "text": "top"},
                                  {"type": "group", "children": [{"type": "group", "children": [
                                      {"type": "text", "text": "deep"}]}]}]}]}
    assert _layer_text(doc, "/scenes/0/layers/0/text") == "top"
    assert _layer_text(doc, "/scenes/0/layers/1/children/0/children/0/text") == "deep"
    assert _layer_text(doc, "/scenes/0/layers/7/text") == ""
    assert _layer_text(doc, "/scenes/0/layers/1/type") == ""
