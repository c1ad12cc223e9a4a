"""The `Translator` protocol every translation engine implements."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Translator"]


@runtime_checkable
class Translator(Protocol):
    """A machine-translation engine.

    Tags are BCP 47 in the normal form of `reelfarm.studio.translate.locales.normalize_tag`.
    """

    name: str

    def targets(self, source: str) -> set[str]:
        """Tags this engine can translate `source` into (empty when it cannot read `source`).

        Raises:
            TranslationError: the engine could not be asked (unreachable, refused).
        """
        ...

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        """`texts` translated, same length and order.

        Raises:
            UnsupportedLocale: the engine lacks the pair.
            TranslationError: the engine failed.
        """
        ...
