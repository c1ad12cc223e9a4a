"""Reading a written brief: the facts in it, pulled out with patterns and nothing else.

Every value here is a piece of the brief's own text (trimmed, never reworded), so whatever a
writer builds from ``Facts`` states only what the brief states. Pure code: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["NUMBER", "Facts", "display_url", "read_facts", "shorten"]

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?(?:\s?[-–]\s?\d{1,2}(?:st|nd|rd|th)?)?"
_DATE = re.compile(
    rf"\b(?:{_WEEKDAY},?\s+)?(?:{_MONTH}\s+{_DAY}(?:,?\s+\d{{4}})?|{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?)(?![\w])"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b",
    re.IGNORECASE)
_DAY_WORD = re.compile(rf"\b(?:(?:this|next)\s+)?(?:{_WEEKDAY}|weekend)\b|\b(?:today|tonight|tomorrow)\b", re.IGNORECASE)
_CLOCK = r"\d{1,2}(?::\d{2})?\s?(?:am|pm)|\d{1,2}:\d{2}|noon|midnight"
_ZONE = r"(?:\s?(?:CET|CEST|UTC|GMT|BST|EST|EDT|CST|PST|PDT|ET|PT))?"
_TIME = re.compile(
    rf"\b(?:\d{{1,2}}(?::\d{{2}})?\s?(?:[-–]|to)\s?(?:{_CLOCK})|{_CLOCK}(?:\s?(?:[-–]|to)\s?(?:{_CLOCK}))?){_ZONE}\b",
    re.IGNORECASE)
NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_VALUE = re.compile(r"[$€£]?\d+(?:[.,:]\d+)*(?:\s?%|[kKmMbBx]\b|\+)?")
_OFFER = re.compile(r"\b(up to\s+)?(\d{1,3}(?:\.\d+)?\s?%|[$€£]\s?\d+(?:[.,]\d{2})?)\s*(off|discount)\b"
                    r"|\b(?:save|take)\s+(up to\s+)?(\d{1,3}(?:\.\d+)?\s?%|[$€£]\s?\d+)"
                    r"|\b(half[ -]price|half off)\b", re.IGNORECASE)
_CODE = re.compile(r"(?i:\b(?:promo|discount|coupon)?\s*code|\bcoupon|\buse)\s*[:\-]?\s*[\"'“‘]?"
                   r"([A-Z0-9][A-Z0-9_-]{2,15})\b")
_ENDS = re.compile(r"\b(?:(?:offer|sale|deal)\s+)?(?:valid until|only until|ends?|ending|until|till|through|expires?)\b"
                   r"[^.!?\n;]*|\b(?:this weekend|today|tonight|\d+\s+(?:hours|days))\s+only\b", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>\"'”)]+|(?<![@\w.])(?:www\.)?[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,}"
                  r"(?:/[^\s<>\"'”)]*)?", re.IGNORECASE)
_PRICE = re.compile(r"[$€£]\s?\d+(?:[.,]\d{2})?|\b\d+(?:[.,]\d{2})?\s?(?:EUR|USD|GBP)\b")
_QUOTE = re.compile(r"[“\"]([^”\"]{8,})[”\"]")
_NAME = r"[A-Z][a-zA-Z'’.-]+(?:\s+[A-Z][a-zA-Z'’.-]+){1,3}"
_ROLE_AFTER = r"(?:,\s*([^,.;!?\n]{2,60}(?:,\s*[A-Z][^,.;!?\n]{1,40})?))?"
_SAYS = re.compile(rf"[”\"]\s*[,—–-]*\s*(?:(?:said|says|wrote|writes)\s+)?({_NAME}){_ROLE_AFTER}"
                   rf"|\b({_NAME}){_ROLE_AFTER}\s*(?:said|says|wrote|writes)\b")
_HOST = re.compile(rf"\b(?:hosted by|presented by|led by|with|speaker:?|host:?|guest:?|featuring)\s+({_NAME})"
                   rf"{_ROLE_AFTER}")
_RATING = re.compile(r"\b([0-5])(?:\.0)?\s*(?:/\s*5|stars?|out of 5)\b", re.IGNORECASE)
_EPISODE = re.compile(r"\b(?:episode|ep\.?)\s*#?\s*\d+\b", re.IGNORECASE)
_SHOW = re.compile(r"((?:The\s+)?[A-Z][\w'’&]*(?:\s+[A-Z][\w'’&]*){0,4})\s+(?:podcast|show)\b")
_PLATFORMS = ("Spotify", "Apple Podcasts", "YouTube", "Google Podcasts", "Overcast", "Pocket Casts", "Deezer")
_LOCATION_LABEL = re.compile(r"\b(?:location|venue|where|place)\s*:\s*([^.\n;]+)", re.IGNORECASE)
_LOCATION = re.compile(r"\b(?:at|in)\s+((?:the\s+)?[A-Z][\w'’&-]*(?:\s+(?:[A-Z][\w'’&-]*|of|de|la|on))*"
                       r"(?:(?:,\s*|\s+in\s+)[A-Z][\w'’&-]*(?:\s+[A-Z][\w'’&-]*)*)?)")
_WORK = re.compile(r"\b(?:fully\s+)?(?:remote|hybrid|on-?site|full[- ]time|part[- ]time|contract|freelance|"
                   r"internship)\b(?:\s+in\s+[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)?", re.IGNORECASE)
_ROLE = re.compile(r"\b(?:we(?:'|’)?re hiring|we are hiring|hiring|looking for|seeking|searching for|open role|"
                   r"join (?:us|our team) as)[:\s]+(?:an?\s+|our\s+(?:next\s+|new\s+|first\s+)?|the\s+)?"
                   r"([\w+#/&-]+(?:\s+[\w+#/&-]+){0,5}?)(?=\s+(?:to|in|at|for|who|with|based|on|remote|hybrid|"
                   r"and|from|\(|-)\b|[.,!?;:\n(]|$)", re.IGNORECASE)
_PRODUCT = re.compile(r"\b(?i:introducing|meet|say hello to|launching|announcing|unveiling|presenting)\s+"
                      r"(?i:the\s+(?:all-new\s+|new\s+)?|our\s+(?:new\s+)?|a\s+new\s+)?"
                      r"([A-Z0-9][\w'’+&-]*(?:\s+[A-Z0-9][\w'’+&-]*){0,3})")
_EVENT = re.compile(r"((?:[A-Z][\w'’&-]*\s+){0,4}(?:Summit|Conference|Meetup|Meet-up|Workshop|Party|Festival|Gala|"
                    r"Expo|Hackathon|Fair|Night|Forum|Camp|Dinner|Breakfast|Brunch|Mixer|Open House)"
                    r"(?:\s+\d{4})?)\b")
_BEFORE_AFTER = re.compile(r"\bbefore\s*:\s*([^\n]+?)\s*[.;\n]\s*after\s*:\s*([^\n]+?)\s*(?:[.;\n]|$)"
                           r"|\bfrom\s+([^.;,\n]{3,90}?)\s+to\s+([^.;,\n]{3,90})", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•·▪–]|\d{1,2}[.)]|[a-z][.)])\s+")
_SPLIT = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")
_FILLER = {"and", "or", "with", "the", "a", "an", "to", "of", "for", "in", "at", "on", "by", "our", "your", "&", "-"}
_CTAS = (
    "shop the sale", "shop now", "shop today", "buy now", "order now", "order today", "pre-order now",
    "pre-order today", "apply now", "apply today", "apply here", "register now", "register today", "register",
    "sign up now", "sign up today", "sign up", "book now", "book your seat", "book your spot", "save your seat",
    "save your spot", "reserve your seat", "reserve your spot", "get your tickets", "get tickets", "rsvp now",
    "rsvp today", "rsvp", "learn more", "find out more", "read more", "read the story", "get started",
    "start your free trial", "try it free", "try it now", "try it today", "download now", "listen now",
    "watch now", "subscribe", "join the waitlist", "join us", "join now", "join today", "get notified",
    "see how it works", "visit us", "claim your spot",
)
_CTA = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in sorted(_CTAS, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters; never mid-word unless one word is too long."""
    text = " ".join(text.split()).strip()
    if len(text) <= limit:
        return text
    words, out = text.split(" "), ""
    for word in words:
        if len(out) + len(word) + (1 if out else 0) > limit:
            break
        out = f"{out} {word}" if out else word
    while " " in out and out.rsplit(" ", 1)[1].lower().strip(",;:") in _FILLER:
        out = out.rsplit(" ", 1)[0]
    return (out or text[:limit]).rstrip(" ,;:-–—(")


def display_url(url: str) -> str:
    """The link text for ``url``: no scheme, no ``www.``, no trailing slash or punctuation."""
    text = re.sub(r"^https?://", "", url.strip(), flags=re.IGNORECASE)
    text = re.sub(r"^www\.", "", text, flags=re.IGNORECASE)
    return text.rstrip(".,;:!?)/")


def _fit_url(url: str, limit: int = 40) -> str:
    text = display_url(url)
    return text if len(text) <= limit else text.split("/", 1)[0][:limit]


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return " ".join(match.group(0).split()).strip(" ,") if match else None


@dataclass(frozen=True)
class Facts:
    """What a brief says, piece by piece; ``None`` or empty where it says nothing."""

    text: str
    sentences: tuple[str, ...]
    bullets: tuple[str, ...]
    headline: str
    headline_sentence: str | None = None
    title: str | None = None
    url: str | None = None
    cta: str | None = None
    offer: str | None = None
    code: str | None = None
    ends: str | None = None
    date: str | None = None
    time: str | None = None
    location: str | None = None
    price: str | None = None
    quote: str | None = None
    quote_author: str | None = None
    quote_role: str | None = None
    speaker: str | None = None
    speaker_role: str | None = None
    rating: int | None = None
    episode: str | None = None
    show: str | None = None
    platforms: str | None = None
    role: str | None = None
    work: str | None = None
    product: str | None = None
    event: str | None = None
    before_after: tuple[str, str] | None = None
    values: tuple[str, ...] = field(default_factory=tuple)
    brand_name: str | None = None

    @property
    def points(self) -> list[str]:
        """The sentences after the headline, less those that only say where to click."""
        return [s for s in self.sentences if s != self.headline_sentence and not _only_cta(s)]

    def numeric_sentences(self) -> list[str]:
        return [s for s in self.sentences if NUMBER.search(s) and not _only_cta(s)]


def _only_cta(sentence: str) -> bool:
    rest = _URL.sub(" ", _CTA.sub(" ", sentence))
    words = [w for w in re.findall(r"[\w%$€£']+", rest) if w.lower() not in _FILLER | {"here", "now", "today", "us"}]
    return len(words) == 0


def _sentences(text: str) -> tuple[list[str], list[str]]:
    """(sentences, bulleted lines) in order; bullet markers dropped."""
    sentences: list[str] = []
    bullets: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if _BULLET.match(line):
            item = _BULLET.sub("", line).strip().rstrip(".")
            if item:
                bullets.append(item)
                sentences.append(item)
            continue
        normalized = re.sub(r"\b([ap])\.m\.", r"\1m", line, flags=re.IGNORECASE)
        for part in _SPLIT.split(normalized):
            part = part.strip()
            if re.search(r"\w", part):
                sentences.append(part)
    return sentences, bullets


def _offer(text: str) -> str | None:
    match = _OFFER.search(text)
    if not match:
        return None
    if match.group(6):
        return match.group(6).capitalize()
    upto, amount = (match.group(1), match.group(2)) if match.group(2) else (match.group(4), match.group(5))
    amount = amount.replace(" ", "")
    return f"Up to {amount}" if upto else f"{amount} OFF"


def _code(text: str) -> str | None:
    for match in _CODE.finditer(text):
        token = match.group(1)
        if re.search(r"[A-Z]", token) and (re.search(r"\d", token) or len(token) >= 4):
            return token
    return None


def _cta(text: str) -> str | None:
    matches = list(_CTA.finditer(text))
    if not matches:
        return None
    words = matches[-1].group(0)
    return words[0].upper() + words[1:].lower() if words.lower() != "rsvp" else "RSVP"


def _ends(text: str) -> str | None:
    phrase = _first(_ENDS, text)
    if not phrase:
        return None
    phrase = phrase.rstrip(" ,")
    return phrase[0].upper() + phrase[1:]


def _location(text: str) -> str | None:
    label = _LOCATION_LABEL.search(text)
    if label:
        return label.group(1).strip()
    for match in _LOCATION.finditer(text):
        place = match.group(1).strip()
        if not re.match(rf"(?:{_MONTH}|{_WEEKDAY})\b", place, re.IGNORECASE):
            return place
    return None


def _role(text: str) -> str | None:
    match = _ROLE.search(text)
    if not match:
        return None
    role = match.group(1).strip()
    return role[0].upper() + role[1:]


def _person(pattern: re.Pattern[str], text: str) -> tuple[str | None, str | None]:
    match = pattern.search(text)
    if not match:
        return None, None
    groups = [g for g in match.groups()]
    pairs = [(groups[i], groups[i + 1]) for i in range(0, len(groups), 2)]
    for name, role in pairs:
        if name:
            return name.strip(), (role.strip() if role else None)
    return None, None


def read_facts(text: str, title: str | None = None, url: str | None = None, brand_name: str | None = None) -> Facts:
    """Every fact of the brief ``text`` that a story field can carry.

    Args:
        text: the brief as the client wrote it.
        title: the client's title; it becomes the headline when given.
        url: the client's link; otherwise the first URL in ``text``.
        brand_name: the brand kit's name, for fields that name the company.
    """
    sentences, bullets = _sentences(text)
    lead = _lead(sentences) if not title else None
    headline = " ".join((title or lead or text).split()).rstrip(".")
    found_url = url or _first(_URL, text)
    quote = _QUOTE.search(text)
    author, author_role = _person(_SAYS, text)
    speaker, speaker_role = _person(_HOST, text)
    rating = _RATING.search(text)
    before_after = _BEFORE_AFTER.search(text)
    platforms = [p for p in _PLATFORMS if re.search(rf"\b{re.escape(p)}\b", text, re.IGNORECASE)]
    work = [" ".join(m.group(0).split()) for m in _WORK.finditer(text)]
    return Facts(
        text=text, sentences=tuple(sentences), bullets=tuple(bullets), headline=headline, headline_sentence=lead, title=title,
        url=_fit_url(found_url) if found_url else None, cta=_cta(text), offer=_offer(text), code=_code(text),
        ends=_ends(text), date=_first(_DATE, text) or _first(_DAY_WORD, text), time=_first(_TIME, text),
        location=_location(text), price=_first(_PRICE, text), quote=quote.group(1).strip(" ,") if quote else None,
        quote_author=author, quote_role=author_role, speaker=speaker, speaker_role=speaker_role,
        rating=int(rating.group(1)) if rating else None, episode=_first(_EPISODE, text),
        show=_group(_SHOW, text),
        platforms=", ".join(platforms) or None, role=_role(text), work=", ".join(dict.fromkeys(work)) or None,
        product=_group(_PRODUCT, text), event=_group(_EVENT, text),
        before_after=_pair(before_after), values=tuple(m.group(0) for m in _VALUE.finditer(text)),
        brand_name=brand_name,
    )


def _lead(sentences: list[str]) -> str | None:
    """The sentence to lead with: the first, unless it is a bare exclamation ("Last chance!") before another."""
    if len(sentences) > 1 and len(sentences[0].split()) < 3:
        return sentences[1]
    return sentences[0] if sentences else None


def _group(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1).strip() if match else None


def _pair(match: re.Match[str] | None) -> tuple[str, str] | None:
    if not match:
        return None
    before, after = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return before.strip(), after.strip()


# --- fitting facts to a story's shape -------------------------------------------------------------


def split_items(points: list[str], limit: int, count: int) -> list[str]:
    """Up to ``count`` list items of at most ``limit`` characters.

    A point too long for one item is split at its clause breaks and the clauses put back
    together as far as they fit, so no words are lost unless a single clause is too long.
    """
    items: list[str] = []
    for point in points:
        point = point.strip().rstrip(".")
        if len(point) <= limit:
            items.append(point)
            continue
        current = ""
        for part in re.split(r"(?<=[;,:])\s+|\s+(?=[-–—]\s)", point):
            joined = f"{current} {part}" if current else part
            if len(joined.rstrip(",;:")) <= limit:
                current = joined
                continue
            if current:
                items.append(current.rstrip(",;: "))
            current = part
        if current:
            items.append(shorten(current.rstrip(",;: ").lstrip("-–— "), limit))
    return [i[:1].upper() + i[1:] for i in items if i][:count]


_LABEL_STOP = re.compile(r"\b(?:in|on|at|by|since|this|last|over|across|and|thanks|from|for)\b|[,;:!?(]")


def stat_of(sentence: str) -> dict[str, str] | None:
    """``{"value", "label"}`` for the first figure of ``sentence`` that is not a year, with the words around it."""
    for match in _VALUE.finditer(sentence):
        value = match.group(0)
        if len(value) > 10 or re.fullmatch(r"(?:19|20)\d\d", value):
            continue
        before = sentence[: match.start()].strip(" ,:-–")
        rest = sentence[match.end():].strip(" ,:-–.!")
        after = _LABEL_STOP.split(rest, maxsplit=1)[0].strip(" .!-–")
        if re.search(r"[A-Za-z]{2}", after):
            label = rest if len(rest) <= 40 else after
        else:
            label = f"{before} {rest}".strip() if len(f"{before} {rest}") <= 40 else before
        label = shorten(re.sub(r"^(?:of|to|more|new)\s+", "", label, flags=re.IGNORECASE).strip(" ,"), 40)
        if re.search(r"[A-Za-z]", label):
            return {"value": value, "label": label[:1].upper() + label[1:]}
    return None


def milestone_of(facts: Facts) -> tuple[str, str, str] | None:
    """(number, label, sentence): the first figure followed by what it counts."""
    for sentence in facts.numeric_sentences():
        for match in _VALUE.finditer(sentence):
            value = match.group(0)
            words = _LABEL_STOP.split(sentence[match.end():], maxsplit=1)[0].strip(" .")
            if len(value) <= 10 and re.match(r"[A-Za-z]", words or ""):
                return value, shorten(words, 40), sentence
    return None


_KEYWORDS: dict[str, tuple[str, ...]] = {
    "flash_sale": ("sale", "discount", "% off", "promo", "coupon", "code", "deal", "deals", "clearance",
                   "black friday", "cyber monday", "half price", "save", "shop"),
    "countdown": ("countdown", "count down", "coming soon", "launching in", "goes live", "go live", "drops",
                  "starts in", "days to go", "last chance", "almost here", "doors open", "hours left",
                  "days left", "deadline", "ends tonight", "final hours", "don't miss"),
    "hiring": ("hiring", "join our team", "job", "jobs", "role", "position", "opening", "apply", "careers",
               "career", "vacancy", "recruiting", "candidates", "salary"),
    "event_invite": ("event", "conference", "meetup", "meet-up", "summit", "workshop", "party", "festival",
                     "gala", "join us", "invite", "invited", "rsvp", "venue", "tickets", "expo", "hackathon"),
    "webinar": ("webinar", "live session", "livestream", "live stream", "online session", "virtual",
                "masterclass", "ama", "hosted by", "speaker", "zoom", "online"),
    "product_launch": ("launch", "launching", "introducing", "new product", "meet the", "now available",
                       "available now", "unveil", "pre-order", "preorder", "release", "announcing", "say hello"),
    "feature_spotlight": ("new feature", "feature", "now you can", "update", "integration", "improved",
                          "redesigned"),
    "before_after": ("before", "after", "transformation", "makeover", "used to"),
    "stats_highlight": ("stats", "statistics", "numbers", "by the numbers", "growth", "grew", "increase",
                        "percent", "results", "year in review", "data", "metrics", "record", "report", "quarter"),
    "milestone": ("milestone", "anniversary", "reached", "hit", "celebrate", "celebrating", "thank you",
                  "customers", "users", "followers", "members", "subscribers", "downloads", "passed"),
    "tips_list": ("tips", "how to", "steps", "step", "ways to", "guide", "habits", "checklist", "hacks",
                  "tricks", "ideas"),
    "quote": ("quote", "said", "once said", "words", "wisdom"),
    "testimonial": ("testimonial", "review", "customer story", "client", "rated", "stars", "feedback", "says"),
    "podcast_teaser": ("podcast", "episode", "listen", "guest", "spotify", "apple podcasts"),
}
_PATTERNS = {sid: [re.compile(rf"(?<!\w){re.escape(k)}(?!\w)", re.IGNORECASE) for k in kws] for sid, kws in _KEYWORDS.items()}
# Ties go to the earlier story: the more specific shapes first, the catch-all last.
_ORDER = ("before_after", "testimonial", "quote", "podcast_teaser", "webinar", "event_invite", "hiring",
          "flash_sale", "countdown", "product_launch", "feature_spotlight", "stats_highlight", "milestone",
          "tips_list", "announcement")


def _keyword_score(story_id: str, facts: Facts) -> float:
    score = 0.0
    for pattern in _PATTERNS.get(story_id, []):
        if pattern.search(facts.text):
            score += 1.0
        if facts.title and pattern.search(facts.title):
            score += 1.0
    return score


def _feature_score(story_id: str, f: Facts) -> float:
    n_figures = sum(1 for v in f.values if len(v) <= 10 and not re.fullmatch(r"(?:19|20)\d\d", v))
    return {
        "flash_sale": 2.0 * bool(f.offer) + bool(f.code) + 0.5 * bool(f.ends),
        "countdown": 0.5 * bool(f.ends or f.date or f.time),
        "hiring": 2.0 * bool(f.role) + 0.5 * bool(f.work),
        "event_invite": 0.5 * (bool(f.date) + bool(f.location) + bool(f.time)) + bool(f.event),
        "webinar": bool(f.speaker) + 0.5 * bool(f.date or f.time),
        "product_launch": bool(f.product) + 0.5 * bool(f.price),
        "before_after": 2.0 * bool(f.before_after),
        "stats_highlight": min(2.0, 0.5 * max(0, n_figures - 1)),
        "tips_list": 1.5 * (len(f.bullets) >= 2),
        "quote": 1.0 * bool(f.quote and f.quote_author),
        "testimonial": bool(f.rating) + 0.5 * bool(f.quote and f.quote_author),
        "podcast_teaser": bool(f.episode) + 0.5 * bool(f.platforms),
        "announcement": 0.5,
    }.get(story_id, 0.0)


def _feasible(story_id: str, f: Facts) -> bool:
    """Whether the brief holds every fact that story cannot show without (a field with no empty value)."""
    checks = {
        "flash_sale": lambda: bool(f.offer),
        "countdown": lambda: bool(f.ends or f.date or f.time) and not f.code
        and (not f.offer or f.offer.split()[-1].lower() in f.headline.lower()),
        "hiring": lambda: bool(f.role),
        "event_invite": lambda: bool(f.date),
        "webinar": lambda: bool(f.date or f.time) and bool(f.speaker or f.brand_name),
        "product_launch": lambda: bool(f.product or (f.title and len(f.title) <= 32)),
        "feature_spotlight": lambda: bool(f.product or (f.title and len(f.title) <= 40)),
        "before_after": lambda: bool(f.before_after),
        "stats_highlight": lambda: any(stat_of(s) for s in f.numeric_sentences()),
        "milestone": lambda: milestone_of(f) is not None,
        "tips_list": lambda: len(f.bullets) >= 2 or len(f.points) >= 2,
        "quote": lambda: bool(f.quote and f.quote_author),
        "testimonial": lambda: bool(f.quote and f.quote_author),
        "podcast_teaser": lambda: bool(f.show or f.brand_name or f.title),
    }
    return checks.get(story_id, lambda: True)()


def classify(facts: Facts) -> str:
    """The id of the story that best carries ``facts``: keyword and fact scores, among stories it can fill."""
    scores = {sid: _keyword_score(sid, facts) + _feature_score(sid, facts) for sid in _ORDER}
    feasible = [sid for sid in _ORDER if _feasible(sid, facts)]
    best = max(feasible, key=lambda sid: (scores[sid], -_ORDER.index(sid)))
    return best if scores[best] >= 1.0 else "announcement"
