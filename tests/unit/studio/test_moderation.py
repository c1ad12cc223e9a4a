"""Moderation of briefs with the real alt-profanity-check model."""
from __future__ import annotations

import pytest

from reelfarm.studio.errors import BriefRejected
from reelfarm.studio.moderation import Moderator, split_sentences

CLEAN = [
    "Our spring sale is on: 40% off everything in store. Use code SPRING40 at checkout. Ends Sunday at midnight.",
    "We're hiring a Senior Backend Engineer in Berlin. Full-time, hybrid. Apply today at example.com/jobs",
    "Join us for the Design Systems Summit on Thursday, May 14 from 6 to 9 pm at The Glasshouse, Amsterdam.",
    "Revenue grew 38% this year. We shipped 2.4M orders. Customers rated us 4.9 on average.",
    "4 habits for deeper sleep\n- Keep the same wake-up time\n- Dim the lights an hour before bed",
    "Introducing Aurora Lamp. Light that follows the rhythm of your day. Only $129.",
    "Kill the competition with our killer deals this weekend.",
]


@pytest.fixture(scope="module")
def moderator() -> Moderator:
    return Moderator()


@pytest.mark.parametrize("text", CLEAN)
def test_clean_briefs_pass(moderator: Moderator, text: str) -> None:
    moderator.check(text)


@pytest.mark.parametrize(("text", "sentence"), [
    ("You are all worthless morons.", 1),
    ("Our sale starts Friday. Shut the fuck up and buy our shit. Ends Sunday.", 2),
    ("Join our team!\nWe need a designer.\nCandidates who apply are idiots and bastards.", 3),
])
def test_abusive_briefs_are_refused_naming_the_sentence(moderator: Moderator, text: str, sentence: int) -> None:
    with pytest.raises(BriefRejected) as caught:
        moderator.check(text)
    assert caught.value.reason == (
        f"the brief was refused by moderation: sentence {sentence} reads as abusive or profane language"
    )
    assert str(caught.value) == caught.value.reason
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("text", ["", "   "])
def test_blank_briefs_are_refused(moderator: Moderator, text: str) -> None:
    with pytest.raises(BriefRejected, match="empty"):
        moderator.check(text)


@pytest.mark.parametrize("text", ["12345 !!! 67%", "🎉🎉🎉 --- 2024"])
def test_briefs_without_letters_are_not_abusive(moderator: Moderator, text: str) -> None:
    moderator.check(text)


def test_the_threshold_is_configurable() -> None:
    mild = "This sale is damn good."  # the model scores it about 0.6
    Moderator().check(mild)
    with pytest.raises(BriefRejected, match="sentence 1"):
        Moderator(threshold=0.5).check(mild)


@pytest.mark.parametrize("threshold", [0, -0.1, 1.5])
def test_a_threshold_outside_zero_to_one_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError):
        Moderator(threshold=threshold)


def test_sentences_split_at_stops_and_lines() -> None:
    assert split_sentences("One. Two!\nThree? \n\n Four") == ["One.", "Two!", "Three?", "Four"]
