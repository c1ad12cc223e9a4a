"""Event stories: an invitation and a webinar."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import Beat, Box, Frame, logo_layers, rule_block, stack, text_block
from reelfarm.studio.stories.scenes import body_region, decor, hero, outro, panel, person

INVITE_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "You're invited", 32, optional=True),
    event=f.text("Event name", "Design Systems Summit", 50),
    date=f.text("Date", "Thursday, May 14", 32),
    time=f.text("Time", "6:00 to 9:00 PM", 24, optional=True),
    location=f.text("Location", "The Glasshouse, Amsterdam", 50, optional=True),
    cta=f.text("Call to action", "RSVP now", 24, optional=True),
    url=f.text("Link text", "example.com/summit", 40, optional=True),
    image=f.image_url("Image"),
    theme=f.THEME,
)
_I = {n: f.max_len(INVITE_FIELDS, n) for n in ("kicker", "event", "date", "time", "location", "cta", "url")}


def _details(ctx: StoryContext):
    """Date, time and place on a brand card."""
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 1) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        w = region.w * frame.pick(0.66, 1.0, 1.0, 1.0)
        h = min(region.h, frame.pick(0.78, 1.0, 1.0, 0.82))
        card = Box(region.cx - w / 2, region.cy - h / 2, w, h)
        layers.append(panel(frame, ctx, beat, card))
        ink = kit.tone(kit.ink_on(kit.card))
        inner = card.inset(0.06)
        blocks = [text_block("date", v["date"], frame, inner.w, min(0.3, inner.h * 0.4), role="headline",
                             max_len=_I["date"], color=ink, align="center", enter=beat.enter("slide", 1), size=0.09)]
        if v["time"]:
            blocks.append(text_block("time", v["time"], frame, inner.w, min(0.12, inner.h * 0.16), role="lead",
                                     max_len=_I["time"], color=ink, align="center", enter=beat.enter("fade", 2),
                                     gap=0.03))
        if v["location"]:
            blocks.append(rule_block("rule", frame, kit, beat, align="center", i=3, gap=0.04, color=ink))
            blocks.append(text_block("location", v["location"], frame, inner.w, min(0.2, inner.h * 0.24), role="body",
                                     max_len=_I["location"], color=ink, align="center", enter=beat.enter("fade", 4),
                                     gap=0.04, size=0.048))
        return layers + stack(inner, blocks, valign="middle")

    return layout


def _invite(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    image = ctx.assets.image("image", v["image"])
    drafts = [
        SceneDraft("intro", 3, hero(ctx, kicker=v["kicker"], kicker_max=_I["kicker"], headline=v["event"],
                                    headline_max=_I["event"], image=image)),
        SceneDraft("details", 4, _details(ctx), transition=("slide", "up")),
    ]
    if v["cta"] or v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["event"], headline_max=_I["event"],
                                                     button=v["cta"], button_max=_I["cta"], url=v["url"],
                                                     url_max=_I["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


EVENT_INVITE = define_story(
    id="event_invite",
    name="Event invitation",
    category="events",
    description="Invite people to an event: the name, then date, time and place on a card, then how to RSVP.",
    default_duration_sec=10.0,
    fields=INVITE_FIELDS,
    scenes=_invite,
    title_field="event",
)

WEBINAR_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Live webinar", 24, optional=True),
    title=f.text("Title", "Scaling design systems without the chaos", 70),
    host_label=f.text("Host label", "Your host", 24, optional=True),
    speaker=f.text("Speaker", "Maya Okafor", 40),
    speaker_role=f.text("Speaker role", "Head of Design, Northwind", 50, optional=True),
    photo=f.image_url("Speaker photo"),
    when=f.text("Date and time", "June 3, 5 PM CET", 40),
    cta=f.text("Call to action", "Save your seat", 24, optional=True),
    url=f.text("Link text", "example.com/webinar", 40, optional=True),
    theme=f.THEME,
)
_W = {n: f.max_len(WEBINAR_FIELDS, n) for n in ("kicker", "title", "host_label", "speaker", "speaker_role", "when",
                                                "cta", "url")}


def _webinar(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    photo = ctx.assets.image("photo", v["photo"])
    dark = ctx.inverted()
    return [
        SceneDraft("intro", 3.5, hero(ctx, kicker=v["kicker"], kicker_max=_W["kicker"], headline=v["title"],
                                      headline_max=_W["title"])),
        SceneDraft("speaker", 3.5, person(dark, name=v["speaker"], name_max=_W["speaker"], role=v["speaker_role"],
                                          role_max=_W["speaker_role"], photo=photo, kicker=v["host_label"],
                                          kicker_max=_W["host_label"]),
                   transition=("slide", "left"), kit=dark.kit),
        SceneDraft("outro", 3, outro(ctx, kicker=v["when"], kicker_max=_W["when"], headline=v["title"],
                                     headline_max=_W["title"], button=v["cta"], button_max=_W["cta"], url=v["url"],
                                     url_max=_W["url"]),
                   transition=("crossfade", None)),
    ]


WEBINAR = define_story(
    id="webinar",
    name="Webinar promo",
    category="events",
    description="Promote a live session: the topic, the host with photo or initials, the date and sign-up.",
    default_duration_sec=10.0,
    fields=WEBINAR_FIELDS,
    scenes=_webinar,
    title_field="title",
)
