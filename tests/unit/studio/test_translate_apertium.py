"""The offline engine, for real: the apertium command and its English-Spanish pair on this machine.

These tests never skip. Without the command or the pair they fail and say what to install:
the Debian packages apertium and apertium-eng-spa (CI installs the same).
"""
from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate import ApertiumTranslator
from reelfarm.studio.translate.locales import direction_of, locale_name, match_tag, normalize_tag, script_of
from reelfarm.studio.translate.placeholders import protect, restore

INSTALL_HINT = "install the Debian packages apertium and apertium-eng-spa (apt-get install apertium apertium-eng-spa)"


@pytest.fixture(scope="module")
def engine() -> ApertiumTranslator:
    if shutil.which("apertium") is None:
        pytest.fail(f"the apertium command is missing: {INSTALL_HINT}")
    translator = ApertiumTranslator()
    if "es" not in translator.targets("en"):
        pytest.fail(f"Apertium has no English-Spanish pair in {translator.data_dir}/modes: {INSTALL_HINT}")
    return translator


# -- discovery --------------------------------------------------------------------------------

def test_discovers_the_installed_english_spanish_pair(engine: ApertiumTranslator) -> None:
    assert "es" in engine.targets("en")
    assert "es" in engine.targets("en-GB")
    assert "en" in engine.targets("es")
    assert engine.pairs()[("en", "es")] == "eng-spa"


def test_mode_names_map_to_bcp47(tmp_path: Path) -> None:
    modes = tmp_path / "modes"
    modes.mkdir()
    for name in ("eng-spa", "eng-cat", "cat-eng", "spa-eng_US", "cat-spa_valencia", "por-glg", "xyz-eng"):
        (modes / f"{name}.mode").write_text("cat\n")
    (modes / "README").write_text("not a mode\n")

    engine = ApertiumTranslator(data_dir=tmp_path)

    assert engine.pairs() == {("en", "es"): "eng-spa", ("en", "ca"): "eng-cat", ("ca", "en"): "cat-eng",
                              ("es", "en-US"): "spa-eng_US", ("pt", "gl"): "por-glg"}
    assert engine.targets("en") == {"es", "ca"}
    assert engine.targets("es") == {"en-US"}


# -- translation ------------------------------------------------------------------------------

def test_translates_english_to_spanish(engine: ApertiumTranslator) -> None:
    [out] = engine.translate(["Join our team in Berlin"], "en", "es")

    assert "equipo" in out and "Berlín" in out


def test_keeps_numbers_urls_and_codes(engine: ApertiumTranslator) -> None:
    text = "Use code SPRING40 at https://shop.example.com/sale?from=video for 40% off, 10,000 items from $129"

    [out] = engine.translate([text], "en", "es")

    for kept in ("SPRING40", "https://shop.example.com/sale?from=video", "40%", "10,000", "$129"):
        assert kept in out
    assert "Código" in out or "código" in out


def test_batches_texts_in_order_in_one_run(engine: ApertiumTranslator, tmp_path: Path) -> None:
    # A shim in front of the real command counts how often it is started.
    log = tmp_path / "runs"
    shim = tmp_path / "apertium"
    shim.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec {shutil.which("apertium")} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    texts = ["Join our team in Berlin", "Shop the sale", "Apply today", "Big news", "We're hiring",
             "Tom & Jerry <3 cheese"]

    out = ApertiumTranslator(command=str(shim)).translate(texts, "en", "es")

    assert log.read_text().count("run") == 1
    assert out == [engine.translate([t], "en", "es")[0] for t in texts]
    assert "Berlín" in out[0] and out[5].startswith("Tom & Jerry <3")
    assert out[4] == "Estamos contratando"


def test_leaves_text_without_words_and_keeps_edges(engine: ApertiumTranslator) -> None:
    out = engine.translate(["", "01", "★★★★★", "  Apply today\n", "Line one\nline two"], "en", "es")

    assert out[:3] == ["", "01", "★★★★★"]
    assert out[3].startswith("  ") and out[3].endswith("\n") and out[3].strip() != "Apply today"
    assert "\n" in out[4]


def test_regional_target_falls_back_to_the_language(engine: ApertiumTranslator) -> None:
    assert engine.translate(["Apply today"], "en-US", "es-MX") == engine.translate(["Apply today"], "en", "es")


def test_a_pair_it_lacks_is_unsupported(engine: ApertiumTranslator) -> None:
    with pytest.raises(UnsupportedLocale) as caught:
        engine.translate(["Apply today"], "en", "ja")
    assert (caught.value.source, caught.value.target) == ("en", "ja")


def test_a_missing_command_is_a_translation_error(engine: ApertiumTranslator) -> None:
    broken = ApertiumTranslator(command="/nonexistent/apertium")

    with pytest.raises(TranslationError, match="not installed"):
        broken.translate(["Apply today"], "en", "es")


def test_a_run_past_the_timeout_is_a_translation_error(engine: ApertiumTranslator) -> None:
    hasty = ApertiumTranslator(timeout=0.001)

    with pytest.raises(TranslationError, match="took longer"):
        hasty.translate(["Join our team in Berlin"] * 50, "en", "es")


# -- placeholders -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "masked", "kept"), [
    ("Use code SPRING40 at https://example.com/sale.", "Use code 90417000 at 90417001.",
     ["SPRING40", "https://example.com/sale"]),
    ("Visit aurora.example.com/p, or mail hi@example.com", "Visit 90417000, or mail 90417001",
     ["aurora.example.com/p", "hi@example.com"]),
    ("Use code SAVE today", "Use code 90417000 today", ["SAVE"]),
    ("Hello {name}, 18 °C (90417000)", "Hello 90417000, 90417001 °C (90417002)", ["{name}", "18", "90417000"]),
    ("Ends Sunday at midnight", "Ends Sunday at midnight", []),
])
def test_protect_masks_and_restore_puts_back(text: str, masked: str, kept: list[str]) -> None:
    assert protect(text) == (masked, kept)
    assert restore(masked, kept) == text


def test_restore_refuses_a_lost_or_doubled_mask() -> None:
    masked, kept = protect("Only 3 left")

    assert restore(masked.replace("90417000", ""), kept) is None
    assert restore(masked + " 90417000", kept) is None


# -- locale tags ------------------------------------------------------------------------------

def test_locale_tags() -> None:
    assert [normalize_tag(t) for t in ("pt-br", "ZH_hant", "EN", "es-419")] == ["pt-BR", "zh-Hant", "en", "es-419"]
    assert locale_name("pt-BR") == "Portuguese (Brazil)" and locale_name("de") == "German"
    assert [direction_of(t) for t in ("ar", "he-IL", "fa", "ur", "de")] == ["rtl", "rtl", "rtl", "rtl", "ltr"]
    assert [script_of(t) for t in ("ja", "ar", "he", "hi", "fr")] == ["cjk", "arabic", "hebrew", "devanagari", None]
    assert match_tag(["de", "pt-BR", "pt-PT"], "de-AT") == "de"
    assert match_tag(["de", "pt-BR", "pt-PT"], "pt") == "pt-PT"
    assert match_tag(["en-GB", "en-US"], "en") == "en-US"
    assert match_tag(["de"], "fr") is None
    with pytest.raises(ValueError):
        normalize_tag("not a tag")
