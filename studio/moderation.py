"""Moderation of written briefs before any writer sees them.

The judge is ``alt-profanity-check``: a linear SVM trained on labelled abusive and clean text,
maintained outside this project. We score each sentence (so the refusal can say which one) and
the whole brief (abuse spread thin over many sentences still adds up).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence

from reelfarm.studio.errors import BriefRejected

__all__ = ["DEFAULT_THRESHOLD", "Moderator", "split_sentences"]

DEFAULT_THRESHOLD = 0.8

Scorer = Callable[[Sequence[str]], Sequence[float]]

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")
_LETTER = re.compile(r"[^\W\d_]")

_lock = threading.Lock()
_loaded: list[Scorer] = []


def split_sentences(text: str) -> list[str]:
    """The sentences and lines of ``text``, stripped, empty ones left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _profanity_scorer() -> Scorer:
    """``profanity_check.predict_prob``, imported (which unpickles the model) once per process."""
    with _lock:
        if not _loaded:
            from profanity_check import predict_prob

            _loaded.append(lambda texts: [float(p) for p in predict_prob(list(texts))])
        return _loaded[0]


class Moderator:
    """Refuses briefs that read as abusive or profane (and blank ones).

    Args:
        threshold: the model probability (0 to 1) at or above which text is refused.
    """

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold

    def check(self, text: str) -> None:
        """Return quietly when ``text`` may be used; raise otherwise.

        Raises:
            BriefRejected: the brief is blank, or a sentence or the whole brief scores at
                or above the threshold; ``reason`` names the 1-based sentence when one does.
        """
        if not isinstance(text, str) or not text.strip():
            raise BriefRejected("the brief is empty")
        sentences = split_sentences(text)
        scores = _profanity_scorer()(sentences + [text])
        for number, score in enumerate(scores[:-1], start=1):
            if score >= self.threshold:
                raise BriefRejected(
                    f"the brief was refused by moderation: sentence {number} reads as abusive or profane language"
                )
        if scores[-1] >= self.threshold:
            raise BriefRejected("the brief was refused by moderation: it reads as abusive or profane language")
