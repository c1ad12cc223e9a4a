"""The fonts the renderer ships, from pip-installed open-licensed font packages.

Never the system's fonts: every machine draws the same glyphs. Variable fonts are instanced at the
weight asked for; each (family, weight) is registered under its own name (`Inter#700`) so the
paragraph engine never has to guess between instances. Scripts the chosen family lacks fall back,
character by character, through `FALLBACK_FAMILIES`.
"""
from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path

import skia

from reelfarm.renderer.errors import FontError

# family -> python module carrying its files (module.ROOT / "files")
FAMILY_MODULES: dict[str, str] = {
    "Inter": "fontpkg_inter",
    "Montserrat": "fontpkg_montserrat",
    "Playfair Display": "fontpkg_playfair_display",
    "Poppins": "fontpkg_poppins",
    "Roboto": "fontpkg_roboto",
    "Open Sans": "fontpkg_open_sans",
    "Lato": "fontpkg_lato",
    "DM Sans": "fontpkg_dm_sans",
    "Oswald": "fontpkg_oswald",
    "Merriweather": "fontpkg_merriweather",
    "Noto Sans": "fontpkg_noto_sans",
    "Noto Serif": "fontpkg_noto_serif",
    "Noto Sans Arabic": "fontpkg_noto_sans_arabic",
    "Heebo": "fontpkg_heebo",
    "Noto Sans Devanagari": "fontpkg_noto_sans_devanagari",
    "Noto Sans CJK": "cvttf_NotoSansCJK_Regular",
}
# Per-script fallbacks, tried in order for any character the chosen family lacks.
FALLBACK_FAMILIES = ("Noto Sans", "Noto Sans Arabic", "Heebo", "Noto Sans Devanagari", "Noto Sans CJK")
DEFAULT_FAMILY = "Inter"
_WGHT = int.from_bytes(b"wght", "big")


def available_families() -> list[str]:
    """Families a document may name."""
    return list(FAMILY_MODULES)


# Font files are loaded by a font manager that knows no system fonts: Skia's default one is
# fontconfig's, which reads the machine's configuration (and warns about it on stderr) though a
# document can only name the packaged families.
_FILES = skia.FontMgr.New_Custom_Empty()


class FontBook:
    """Loads font files once per process and hands out a paragraph `FontCollection`."""

    def __init__(self) -> None:
        self._provider = skia.textlayout.TypefaceFontProvider()
        self._collection = skia.textlayout.FontCollection()
        self._collection.setDefaultFontManager(self._provider)
        self._files: dict[str, list[skia.Typeface]] = {}
        self._registered: set[str] = set()
        self._families: dict[tuple[str, int], tuple[str, ...]] = {}
        self._keep: list[object] = []  # skia keeps raw pointers to variation coordinates
        self._lock = threading.Lock()

    @property
    def collection(self) -> skia.textlayout.FontCollection:
        return self._collection

    def families_for(self, family: str, weight: int) -> list[str]:
        """Registered names to try, in order, for `family` at `weight`, fallbacks included."""
        known = self._families.get((family, weight))
        if known is not None:  # every text laid out asks: registered once, then looked up
            return list(known)
        chosen = family if family in FAMILY_MODULES else DEFAULT_FAMILY
        names: list[str] = []
        for fam in (chosen, *FALLBACK_FAMILIES):
            if fam == chosen and names:
                continue
            names.append(self._register(fam, weight))
        if len(self._families) < 4096:  # names a document may give are few; unknown ones too
            self._families[(family, weight)] = tuple(names)
        return names

    def typeface(self, family: str, weight: int) -> skia.Typeface:
        """A single typeface instance (for measuring without paragraphs)."""
        return self._instance(family if family in FAMILY_MODULES else DEFAULT_FAMILY, weight)

    def _register(self, family: str, weight: int) -> str:
        name = f"{family}#{weight}"
        with self._lock:
            if name not in self._registered:
                self._provider.registerTypeface(self._instance(family, weight), name)
                self._registered.add(name)
        return name

    def _instance(self, family: str, weight: int) -> skia.Typeface:
        faces = self._load(family)
        variable = [f for f in faces if any(a.tag == _WGHT for a in f.getVariationDesignParameters())]
        if variable:
            return self._clone_at(variable[0], weight)
        return min(faces, key=lambda f: abs(f.fontStyle().weight() - weight))

    def _clone_at(self, face: skia.Typeface, weight: int) -> skia.Typeface:
        axis = next(a for a in face.getVariationDesignParameters() if a.tag == _WGHT)
        value = float(min(max(weight, axis.min), axis.max))
        vp = skia.FontArguments.VariationPosition
        coords = vp.Coordinates([vp.Coordinate(_WGHT, value)])
        position = vp(coords)
        args = skia.FontArguments()
        args.setVariationDesignPosition(position)
        self._keep.extend((coords, position, args))
        return face.makeClone(args)

    def _load(self, family: str) -> list[skia.Typeface]:
        if family not in self._files:
            paths = font_files(family)
            faces = [_FILES.makeFromFile(str(p)) for p in paths]
            faces = [f for f in faces if f is not None]
            if not faces:
                raise FontError(f"font family {family!r} has no loadable files")
            self._files[family] = faces
        return self._files[family]


def font_files(family: str) -> list[Path]:
    """Upright font files of `family` from its package."""
    try:
        module = importlib.import_module(FAMILY_MODULES[family])
    except (KeyError, ImportError) as exc:
        raise FontError(f"font family {family!r} is not installed: {exc}") from exc
    if module.__file__ is None:  # a namespace package: no directory of its own to look in
        raise FontError(f"font family {family!r}: package {module.__name__!r} has no files")
    root = Path(module.__file__).resolve().parent
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".ttf", ".otf"))
    upright = [p for p in files if "italic" not in p.name.lower()]
    return upright or files


_BOOK: FontBook | None = None
_BOOK_LOCK = threading.Lock()


def _unlock_after_fork() -> None:
    """Fresh locks in a forked child (another thread of the parent may have held them then)."""
    global _BOOK_LOCK
    _BOOK_LOCK = threading.Lock()
    if _BOOK is not None:
        _BOOK._lock = threading.Lock()


os.register_at_fork(after_in_child=_unlock_after_fork)


def font_book() -> FontBook:
    """The process-wide FontBook (font files are parsed once per process)."""
    global _BOOK
    with _BOOK_LOCK:
        if _BOOK is None:
            _BOOK = FontBook()
        return _BOOK
