"""The offline engine: Apertium's rule-based pairs, run as the ``apertium`` command.

Pairs are the Debian packages ``apertium-eng-spa``, ``apertium-eng-cat`` and so on; each installs
``<data_dir>/modes/<src>-<tgt>.mode``. Installed pairs are read from that directory on every
call, so a pair an operator adds shows up without a restart.

A batch goes through one ``apertium -f html`` run, one ``<p>`` block per text: block tags are
sentence boundaries Apertium keeps in place, so texts never run into each other and come back
in order (the count is checked). URLs, numbers and promo codes are masked first (see
`placeholders`) and restored after.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate.locales import language_of, match_tag, normalize_tag
from reelfarm.studio.translate.placeholders import protect, restore

__all__ = ["DEFAULT_DATA_DIR", "ISO_639_3", "ApertiumTranslator"]

DEFAULT_DATA_DIR = Path("/usr/share/apertium")
DEFAULT_TIMEOUT_SEC = 60.0
# ISO 639-3 codes of Apertium pairs -> BCP 47 language subtags.
ISO_639_3: dict[str, str] = {
    "eng": "en", "spa": "es", "cat": "ca", "glg": "gl", "por": "pt", "fra": "fr", "ita": "it", "epo": "eo",
    "oci": "oc", "arg": "an", "ast": "ast", "eus": "eu", "ron": "ro", "nob": "nb", "nno": "nn", "dan": "da",
    "swe": "sv", "isl": "is", "deu": "de", "nld": "nl", "afr": "af", "bel": "be", "rus": "ru", "ukr": "uk",
    "pol": "pl", "ces": "cs", "slk": "sk", "slv": "sl", "hbs": "sh", "bul": "bg", "mkd": "mk", "cym": "cy",
    "bre": "br", "gle": "ga", "mlt": "mt", "ind": "id", "msa": "ms", "kaz": "kk", "tat": "tt", "tur": "tr",
    "urd": "ur", "hin": "hi", "ara": "ar", "heb": "he", "sqi": "sq", "srd": "sc", "fin": "fi", "est": "et",
}
# Variant modes (``spa-eng_US``) become regional tags only when the suffix is a region.
_MODE = re.compile(r"^([a-z]{2,3})-([a-z]{2,3})(?:_([A-Za-z]+))?$")
_BLOCK = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_LETTER = re.compile(r"[^\W\d_]")
_SPACES = re.compile(r"[ \t]{2,}")


class ApertiumTranslator:
    """Translates with the locally installed Apertium pairs; needs no network."""

    name = "apertium"

    def __init__(self, command: str = "apertium", data_dir: Path | str = DEFAULT_DATA_DIR,
                 timeout: float = DEFAULT_TIMEOUT_SEC) -> None:
        self.command = command
        self.data_dir = Path(data_dir)
        self.timeout = timeout

    @classmethod
    def available(cls, command: str = "apertium") -> bool:
        """True when the ``apertium`` command is on the PATH."""
        return shutil.which(command) is not None

    def pairs(self) -> dict[tuple[str, str], str]:
        """Installed pairs as ``{(source_tag, target_tag): mode name}``."""
        found: dict[tuple[str, str], str] = {}
        for path in sorted((self.data_dir / "modes").glob("*.mode")):
            pair = _pair_of(path.stem)
            if pair is not None:
                found.setdefault(pair, path.stem)
        return found

    def targets(self, source: str) -> set[str]:
        language = language_of(source)
        return {tgt for (src, tgt) in self.pairs() if src == language}

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        mode = self._mode(source, target)
        out = list(texts)
        todo = [i for i, text in enumerate(texts) if _LETTER.search(text)]
        if not todo:
            return out
        masked = [protect(texts[i]) for i in todo]
        translated = self._run(mode, [m for m, _ in masked])
        for i, (text_masked, kept), result in zip(todo, masked, translated):
            restored = restore(result, kept)
            if restored is None:  # the engine moved a mask; let it see the real text instead
                restored = self._run(mode, [texts[i]])[0]
            out[i] = _respace(texts[i], restored)
        return out

    def _mode(self, source: str, target: str) -> str:
        pairs = self.pairs()
        language = language_of(source)
        tag = match_tag([tgt for (src, tgt) in pairs if src == language], target)
        if tag is None:
            raise UnsupportedLocale(normalize_tag(source), normalize_tag(target))
        return pairs[(language, tag)]

    def _run(self, mode: str, texts: list[str]) -> list[str]:
        document = "".join(f"<p>{html.escape(t, quote=False)}</p>" for t in texts)
        argv = [self.command, "-d", str(self.data_dir), "-u", "-f", "html", mode]
        try:
            done = subprocess.run(argv, input=document, capture_output=True, text=True, encoding="utf-8",
                                  timeout=self.timeout, check=False)
        except FileNotFoundError:
            raise TranslationError(f"the {self.command!r} command is not installed (Debian package apertium)") from None
        except subprocess.TimeoutExpired:
            raise TranslationError(f"apertium {mode} took longer than {self.timeout:g} s") from None
        if done.returncode != 0:
            raise TranslationError(f"apertium {mode} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        blocks = _BLOCK.findall(done.stdout)
        if len(blocks) != len(texts):
            raise TranslationError(f"apertium {mode} returned {len(blocks)} blocks for {len(texts)} texts")
        return [html.unescape(b) for b in blocks]


def _pair_of(mode: str) -> tuple[str, str] | None:
    match = _MODE.match(mode)
    if match is None:
        return None
    src, tgt, variant = match.groups()
    source, target = ISO_639_3.get(src, src if len(src) == 2 else ""), ISO_639_3.get(tgt, tgt if len(tgt) == 2 else "")
    if not source or not target:
        return None
    if variant is not None:
        if not re.fullmatch(r"[A-Z]{2}", variant):
            return None  # orthographic or dialect variants (cat_valencia, nob-nno_e) have no tag here
        target = f"{target}-{variant}"
    return source, target


def _respace(original: str, translated: str) -> str:
    # Apertium leaves a blank where it dropped an apostrophe or entity, and trims block edges.
    body = _SPACES.sub(" ", translated).strip()
    lead = original[:len(original) - len(original.lstrip())]
    trail = original[len(original.rstrip()):]
    return f"{lead}{body}{trail}"
