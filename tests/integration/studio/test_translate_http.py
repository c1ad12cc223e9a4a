"""The HTTP translation engines against servers on 127.0.0.1, and the registry that picks engines.

Two loopback servers (http.server in a thread):

- `LibreServer` speaks the LibreTranslate API and translates with the real Apertium engine of this
  machine, so its answers are real translations (it needs the Debian packages apertium and
  apertium-eng-spa, like tests/unit/studio/test_translate_apertium.py).
- `FakeDeepL` stands in for DeepL's paid API; it does not translate (see its docstring).
"""
from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import pytest

from reelfarm.shared.config import Settings
from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate import (
    ApertiumTranslator,
    DeepLTranslator,
    LibreTranslateTranslator,
    Translator,
    Translators,
    make_translators,
)
from reelfarm.studio.translate.http import DEEPL_FREE_URL, DEEPL_PRO_URL

INSTALL_HINT = "install the Debian packages apertium and apertium-eng-spa (apt-get install apertium apertium-eng-spa)"

# Hand translations of the strings the studio tests send; FakeDeepL answers only from here.
CANNED: dict[str, dict[str, str]] = {
    "DE": {
        "Join our team in Berlin": "Komm in unser Team in Berlin",
        "Apply today": "Jetzt bewerben",
        "Everything in store, this weekend only": "Alles im Laden, nur an diesem Wochenende",
        "Flash sale": "Blitzverkauf",
        "40% OFF": "40 % RABATT",
        "Ends Sunday at midnight": "Endet Sonntag um Mitternacht",
        "Use code": "Mit dem Code",
        "Shop the sale": "Jetzt shoppen",
        "Senior Product Designer": "Senior-Produktdesigner",
        "We're hiring": "Wir stellen ein",
        "Remote in Europe, full time": "Remote in Europa, Vollzeit",
        "Why you'll love it here": "Warum es dir hier gefallen wird",
        "Four-day weeks every summer": "Viertagewoche jeden Sommer",
        "A learning budget that gets used": "Ein Weiterbildungsbudget, das auch genutzt wird",
        "Small team, real ownership": "Kleines Team, echte Verantwortung",
        "Unbelievable opportunities": "Unglaubliche Entwicklungsmöglichkeiten",
    },
    "AR": {
        "Join our team in Berlin": "انضم إلى فريقنا في برلين",
        "Apply today": "قدّم اليوم",
        "Everything in store, this weekend only": "كل ما في المتجر، في عطلة نهاية هذا الأسبوع فقط",
        "Flash sale": "تخفيضات خاطفة",
        "40% OFF": "خصم 40%",
        "Ends Sunday at midnight": "ينتهي يوم الأحد عند منتصف الليل",
        "Use code": "استخدم الرمز",
        "Shop the sale": "تسوّق التخفيضات",
        "Senior Product Designer": "مصمم منتجات أول",
        "We're hiring": "نحن نوظّف",
        "Remote in Europe, full time": "عن بُعد في أوروبا، دوام كامل",
        "Why you'll love it here": "لماذا ستحب العمل هنا",
        "Four-day weeks every summer": "أسبوع عمل من أربعة أيام كل صيف",
        "A learning budget that gets used": "ميزانية تعلّم تُستخدم فعلًا",
        "Small team, real ownership": "فريق صغير ومسؤولية حقيقية",
    },
    "JA": {
        "Join our team in Berlin": "ベルリンのチームに参加しよう",
        "Apply today": "今すぐ応募",
        "Everything in store, this weekend only": "今週末限り、店内全品",
        "Flash sale": "タイムセール",
        "40% OFF": "40%オフ",
        "Ends Sunday at midnight": "日曜日の深夜0時まで",
        "Use code": "クーポンコード",
        "Shop the sale": "セールを見る",
        "Senior Product Designer": "シニアプロダクトデザイナー",
        "We're hiring": "採用中",
        "Remote in Europe, full time": "ヨーロッパでリモート、正社員",
        "Why you'll love it here": "ここで働く魅力",
        "Four-day weeks every summer": "毎年夏は週4日勤務",
        "A learning budget that gets used": "しっかり使える学習予算",
        "Small team, real ownership": "少人数のチームで、本当の裁量を",
    },
    "PT-BR": {"Apply today": "Candidate-se hoje"},
    "PT-PT": {"Apply today": "Candidate-se hoje mesmo"},
}
DEEPL_TARGETS = ["AR", "DE", "EN-GB", "EN-US", "ES", "JA", "PT-BR", "PT-PT", "ZH-HANS"]
DEEPL_NAMES = {"AR": "Arabic", "DE": "German", "EN-GB": "English (British)", "EN-US": "English (American)",
               "ES": "Spanish", "JA": "Japanese", "PT-BR": "Portuguese (Brazilian)",
               "PT-PT": "Portuguese (European)", "ZH-HANS": "Chinese (simplified)"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.seen: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *_: object) -> None:
        pass

    def _record(self) -> tuple[str, dict[str, list[str]], Any]:
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw and "json" in (self.headers.get("Content-Type") or "") else raw.decode()
        self.server.seen.append({"method": self.command, "path": parts.path, "query": parse_qs(parts.query),
                                 "headers": dict(self.headers), "body": body})
        return parts.path, parse_qs(parts.query), body

    def _json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class FakeDeepL(_Server):
    """A stand-in for DeepL's paid API v2 on 127.0.0.1. It does not translate anything.

    ``POST /v2/translate`` answers each text from `CANNED`, a small table of hand translations
    of the strings these tests send, and refuses (400) any text not in the table, so no test
    can pass on made-up output. ``GET /v2/languages?type=target`` lists `DEEPL_TARGETS`. Like
    DeepL it wants ``Authorization: DeepL-Auth-Key <key>`` (403 otherwise), takes at most 50
    texts per request, and answers 456 when `quota_exceeded` is set.
    """

    def __init__(self, api_key: str = "fake-key:fx") -> None:
        super().__init__(_DeepLHandler)
        self.api_key = api_key
        self.quota_exceeded = False


class _DeepLHandler(_Handler):
    server: FakeDeepL

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") != f"DeepL-Auth-Key {self.server.api_key}":
            self._json(403, {"message": "Authorization failure, check auth_key"})
            return False
        return True

    def do_GET(self) -> None:
        path, query, _ = self._record()
        if not self._authorized():
            return
        if path != "/v2/languages" or query.get("type") != ["target"]:
            return self._json(404, {"message": "Not found"})
        self._json(200, [{"language": code, "name": DEEPL_NAMES[code], "supports_formality": False}
                         for code in DEEPL_TARGETS])

    def do_POST(self) -> None:
        path, _, body = self._record()
        if not self._authorized():
            return
        if path != "/v2/translate":
            return self._json(404, {"message": "Not found"})
        if self.server.quota_exceeded:
            return self._json(456, {"message": "Quota exceeded"})
        texts, target = body.get("text"), body.get("target_lang")
        if not isinstance(texts, list) or not texts or len(texts) > 50 or target not in DEEPL_TARGETS:
            return self._json(400, {"message": "Value for 'text' or 'target_lang' not supported."})
        table = CANNED.get(target, {})
        missing = [t for t in texts if t not in table]
        if missing:
            return self._json(400, {"message": f"FakeDeepL has no canned translation for {missing[0]!r}"})
        self._json(200, {"translations": [{"detected_source_language": body.get("source_lang") or "EN",
                                           "text": table[t]} for t in texts]})


class LibreServer(_Server):
    """A LibreTranslate-compatible server whose translations come from the real Apertium engine."""

    def __init__(self, api_key: str | None = None) -> None:
        super().__init__(_LibreHandler)
        self.api_key = api_key
        self.engine = ApertiumTranslator()


class _LibreHandler(_Handler):
    server: LibreServer

    def _authorized(self, key: Any) -> bool:
        if self.server.api_key is not None and key != self.server.api_key:
            self._json(403, {"error": "Invalid API key"})
            return False
        return True

    def do_GET(self) -> None:
        path, _, _ = self._record()
        if path != "/languages":
            return self._json(404, {"error": "Not Found"})
        pairs = self.server.engine.pairs()
        sources = sorted({src for src, _ in pairs})
        self._json(200, [{"code": src, "name": src, "targets": sorted(t for s, t in pairs if s == src)}
                         for src in sources])

    def do_POST(self) -> None:
        path, _, body = self._record()
        if path != "/translate":
            return self._json(404, {"error": "Not Found"})
        if not self._authorized(body.get("api_key")):
            return
        q, source, target = body.get("q"), body.get("source"), body.get("target")
        if q is None or not source or not target:
            return self._json(400, {"error": "Invalid request: missing q, source or target"})
        texts = q if isinstance(q, list) else [q]
        try:
            out = self.server.engine.translate(texts, source, target)
        except UnsupportedLocale:
            return self._json(400, {"error": f"{target} is not supported"})
        self._json(200, {"translatedText": out if isinstance(q, list) else out[0]})


@pytest.fixture(scope="module")
def apertium() -> None:
    if shutil.which("apertium") is None:
        pytest.fail(f"the apertium command is missing: {INSTALL_HINT}")
    if "es" not in ApertiumTranslator().targets("en"):
        pytest.fail(f"Apertium has no English-Spanish pair: {INSTALL_HINT}")


@pytest.fixture
def libre(apertium: None) -> Iterator[LibreServer]:
    with LibreServer(api_key="libre-key") as server:
        yield server


@pytest.fixture
def deepl() -> Iterator[FakeDeepL]:
    with FakeDeepL() as server:
        yield server


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def posts(server: _Server) -> list[dict[str, Any]]:
    return [r for r in server.seen if r["method"] == "POST"]


# -- LibreTranslate ---------------------------------------------------------------------------

def test_libretranslate_sends_one_request_per_batch_and_keeps_order(libre: LibreServer) -> None:
    engine = LibreTranslateTranslator(libre.url, "libre-key")
    texts = ["Join our team in Berlin", "Shop the sale", "Apply today"]

    out = engine.translate(texts, "en", "es")

    assert out == ApertiumTranslator().translate(texts, "en", "es")
    assert "Berlín" in out[0]
    [request] = posts(libre)
    assert request["path"] == "/translate"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["body"] == {"q": texts, "source": "en", "target": "es", "format": "text", "api_key": "libre-key"}


def test_libretranslate_lists_targets_once(libre: LibreServer) -> None:
    engine = LibreTranslateTranslator(libre.url, "libre-key")

    assert engine.targets("en") == {"es"}
    assert engine.targets("en-GB") == {"es"}
    assert engine.targets("fr") == set()
    assert [r["path"] for r in libre.seen] == ["/languages"]


def test_libretranslate_unsupported_pair_sends_nothing(libre: LibreServer) -> None:
    engine = LibreTranslateTranslator(libre.url, "libre-key")

    with pytest.raises(UnsupportedLocale) as caught:
        engine.translate(["Apply today"], "en", "de")

    assert (caught.value.source, caught.value.target) == ("en", "de")
    assert posts(libre) == []


def test_libretranslate_refused_key_is_a_translation_error(libre: LibreServer) -> None:
    engine = LibreTranslateTranslator(libre.url, "wrong-key")

    with pytest.raises(TranslationError, match="403: Invalid API key"):
        engine.translate(["Apply today"], "en", "es")


def test_libretranslate_unreachable_is_a_translation_error() -> None:
    engine = LibreTranslateTranslator(closed_port_url())

    with pytest.raises(TranslationError, match="libretranslate is unreachable"):
        engine.targets("en")


# -- DeepL ------------------------------------------------------------------------------------

def test_deepl_request_shape(deepl: FakeDeepL) -> None:
    engine = DeepLTranslator("fake-key:fx", base_url=deepl.url)

    out = engine.translate(["Join our team in Berlin", "Apply today"], "en", "de")

    assert out == ["Komm in unser Team in Berlin", "Jetzt bewerben"]
    languages, translate = deepl.seen
    assert (languages["method"], languages["path"], languages["query"]) == ("GET", "/v2/languages", {"type": ["target"]})
    assert translate["path"] == "/v2/translate"
    assert translate["headers"]["Authorization"] == "DeepL-Auth-Key fake-key:fx"
    assert translate["body"] == {"text": ["Join our team in Berlin", "Apply today"], "source_lang": "EN",
                                 "target_lang": "DE"}


def test_deepl_targets_are_bcp47_and_cached(deepl: FakeDeepL) -> None:
    engine = DeepLTranslator("fake-key:fx", base_url=deepl.url)

    assert engine.targets("en") == {"ar", "de", "es", "ja", "pt-BR", "pt-PT", "zh-Hans"}
    assert "en-US" in engine.targets("de")
    assert engine.targets("ko") == set()
    assert len(deepl.seen) == 1


@pytest.mark.parametrize(("asked", "sent"), [("de-AT", "DE"), ("pt-br", "PT-BR"), ("pt", "PT-PT")])
def test_deepl_resolves_regional_tags(deepl: FakeDeepL, asked: str, sent: str) -> None:
    engine = DeepLTranslator("fake-key:fx", base_url=deepl.url)
    text = "Apply today" if sent != "DE" else "Join our team in Berlin"

    engine.translate([text], "en-US", asked)

    assert posts(deepl)[0]["body"]["target_lang"] == sent
    assert posts(deepl)[0]["body"]["source_lang"] == "EN"


def test_deepl_splits_batches_of_fifty(deepl: FakeDeepL, monkeypatch: pytest.MonkeyPatch) -> None:
    table = {f"Item {n}": f"Artikel {n}" for n in range(120)}
    monkeypatch.setitem(CANNED, "DE", {**CANNED["DE"], **table})
    engine = DeepLTranslator("fake-key:fx", base_url=deepl.url)

    out = engine.translate(list(table), "en", "de")

    assert out == list(table.values())
    assert [len(r["body"]["text"]) for r in posts(deepl)] == [50, 50, 20]


@pytest.mark.parametrize(("key", "quota", "message"), [
    ("wrong-key:fx", False, "deepl answered 403: Authorization failure"),
    ("fake-key:fx", True, "deepl answered 456: Quota exceeded"),
])
def test_deepl_errors_are_translation_errors(deepl: FakeDeepL, key: str, quota: bool, message: str) -> None:
    deepl.quota_exceeded = quota
    engine = DeepLTranslator(key, base_url=deepl.url)

    with pytest.raises(TranslationError, match=message):
        engine.translate(["Apply today"], "en", "de")


def test_deepl_unsupported_target(deepl: FakeDeepL) -> None:
    engine = DeepLTranslator("fake-key:fx", base_url=deepl.url)

    with pytest.raises(UnsupportedLocale):
        engine.translate(["Apply today"], "en", "ko")
    assert posts(deepl) == []


def test_deepl_default_host_follows_the_key() -> None:
    assert DeepLTranslator("abc:fx").base_url == DEEPL_FREE_URL == "https://api-free.deepl.com"
    assert DeepLTranslator("abc").base_url == DEEPL_PRO_URL == "https://api.deepl.com"
    assert DeepLTranslator("abc", base_url="http://127.0.0.1:9/").base_url == "http://127.0.0.1:9"


# -- contract: every engine ---------------------------------------------------------------------

@pytest.fixture(params=["apertium", "libretranslate", "deepl"])
def engine_and_target(request: pytest.FixtureRequest, apertium: None) -> Iterator[tuple[Translator, str]]:
    if request.param == "apertium":
        yield ApertiumTranslator(), "es"
    elif request.param == "libretranslate":
        with LibreServer() as server:
            yield LibreTranslateTranslator(server.url), "es"
    else:
        with FakeDeepL() as server:
            yield DeepLTranslator("fake-key:fx", base_url=server.url), "de"


def test_contract_every_engine(engine_and_target: tuple[Translator, str]) -> None:
    engine, target = engine_and_target
    texts = ["Join our team in Berlin", "Apply today", "Join our team in Berlin"]

    assert isinstance(engine, Translator)
    assert target in engine.targets("en")
    out = engine.translate(texts, "en", target)
    assert len(out) == 3 and out[0] == out[2] and out[0] != texts[0] and out[1] != texts[1]
    with pytest.raises(UnsupportedLocale):
        engine.translate(texts, "en", "tlh")


# -- the registry -------------------------------------------------------------------------------

def test_registry_publishes_locales_sorted_by_code(libre: LibreServer, deepl: FakeDeepL) -> None:
    translators = Translators([ApertiumTranslator(), LibreTranslateTranslator(libre.url, "libre-key"),
                               DeepLTranslator("fake-key:fx", base_url=deepl.url)])

    locales = translators.locales("en")

    assert [l["code"] for l in locales] == ["ar", "de", "es", "ja", "pt-BR", "pt-PT", "zh-Hans"]
    by_code = {l["code"]: l for l in locales}
    assert by_code["es"] == {"code": "es", "name": "Spanish", "direction": "ltr",
                             "engines": ["apertium", "libretranslate", "deepl"]}
    assert by_code["ar"] == {"code": "ar", "name": "Arabic", "direction": "rtl", "engines": ["deepl"]}
    assert by_code["pt-BR"]["name"] == "Portuguese (Brazil)"


def test_registry_prefers_the_offline_engine(libre: LibreServer, deepl: FakeDeepL) -> None:
    translators = Translators([ApertiumTranslator(), LibreTranslateTranslator(libre.url, "libre-key"),
                               DeepLTranslator("fake-key:fx", base_url=deepl.url)])

    spanish = translators.translate(["Join our team in Berlin"], "en", "es-MX")
    german = translators.translate(["Join our team in Berlin"], "en", "de")

    assert "Berlín" in spanish[0]
    assert german == ["Komm in unser Team in Berlin"]
    assert posts(libre) == []
    assert [r["body"]["target_lang"] for r in posts(deepl)] == ["DE"]
    assert translators.supports("en", "pt-br") and translators.supports("en-US", "es")
    assert not translators.supports("en", "ko") and not translators.supports("en", "en-GB")
    with pytest.raises(UnsupportedLocale):
        translators.translate(["Apply today"], "en", "ko")


def test_registry_falls_back_when_an_engine_fails(libre: LibreServer, deepl: FakeDeepL) -> None:
    deepl.quota_exceeded = True
    translators = Translators([DeepLTranslator("fake-key:fx", base_url=deepl.url),
                               LibreTranslateTranslator(libre.url, "libre-key")])

    out = translators.translate(["Join our team in Berlin"], "en", "es")

    assert "Berlín" in out[0]
    assert len(posts(deepl)) == 1 and len(posts(libre)) == 1


def test_registry_skips_an_engine_it_cannot_reach(apertium: None) -> None:
    translators = Translators([ApertiumTranslator(), LibreTranslateTranslator(closed_port_url())])

    assert [l["code"] for l in translators.locales("en")] == ["es"]
    with pytest.raises(TranslationError):
        Translators([LibreTranslateTranslator(closed_port_url())]).translate(["x"], "en", "es")


def test_make_translators_follows_settings(tmp_path: Path, apertium: None) -> None:
    base: dict[str, Any] = {"data_dir": tmp_path, "database_url": "sqlite://", "storage_url": f"file://{tmp_path}",
                            "secret_key": "s" * 40}

    assert make_translators(Settings(**base, apertium=False)).engines == []
    every = make_translators(Settings(**base, libretranslate_url="http://127.0.0.1:5000", deepl_api_key="k:fx"))
    assert [e.name for e in every.engines] == ["apertium", "libretranslate", "deepl"]
    assert every.engines[2].base_url == DEEPL_FREE_URL  # type: ignore[attr-defined]
