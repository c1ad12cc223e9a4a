"""Promotion stories: a flash sale and a launch countdown."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, custom_color, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import Beat, Box, Frame, button_block, logo_layers, shape_layer, stack, text_block
from reelfarm.studio.stories.scenes import body_region, decor, outro

SALE_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Flash sale", 24, optional=True),
    discount=f.text("Discount", "40% OFF", 12),
    headline=f.text("Headline", "Everything in store, this weekend only", 60),
    code=f.text("Promo code", "SPRING40", 16, optional=True),
    ends=f.text("Ends", "Ends Sunday at midnight", 40, optional=True),
    cta=f.text("Call to action", "Shop the sale", 24, optional=True),
    url=f.text("Link text", "example.com/sale", 40, optional=True),
    badge_color=f.color("Badge colour", description="The discount badge's fill; empty for the brand's accent colour."),
    theme=f.choice("Theme", ["light", "dark"], "dark"),
)
_F = {n: f.max_len(SALE_FIELDS, n) for n in ("kicker", "discount", "headline", "code", "ends", "cta", "url")}


def _badge(ctx: StoryContext):
    v = ctx.values
    custom = custom_color(v["badge_color"])
    fill = custom or "$brand.colors.accent"
    ink = ctx.kit.readable_on(custom or ctx.kit.hex("accent"))

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 0) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        kicker_h = 0.1 if v["kicker"] else 0.0
        d = min(region.w, region.h - kicker_h - 0.04, frame.pick(0.66, 0.8, 0.6, 0.68))
        total = kicker_h + 0.04 + d if kicker_h else d
        top = region.y + (region.h - total) / 2
        if v["kicker"]:
            layers += stack(Box(region.x, top, region.w, kicker_h), [
                text_block("kicker", v["kicker"], frame, region.w, kicker_h, role="subhead", max_len=_F["kicker"],
                           color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 0), uppercase=True)])
        disc = Box(region.cx - d / 2, top + total - d, d, d)
        ring = disc.inset(-0.035)
        layers.append(shape_layer("ring", frame, ring, "ellipse", kit.tint("background" if kit.surface != "background"
                                                                             else "primary", 12),
                                  keyframes=_pulse(beat), enter=beat.enter("fade", 0)))
        layers.append(shape_layer("badge", frame, disc, "ellipse", fill, enter=beat.enter("pop", 1)))
        inner = disc.square(d * 0.68)
        layers += stack(inner, [text_block("discount", v["discount"], frame, inner.w, inner.h, role="display",
                                           max_len=_F["discount"], color=ink, align="center", size=0.15,
                                           enter=beat.enter("pop", 2), worst_word=_F["discount"])])
        return layers

    return layout


def _pulse(beat: Beat) -> dict:
    """A slow breathing scale: the ring behind the badge."""
    keys, t, up = [], 0.0, True
    while t <= beat.dur + 1e-9:
        keys.append({"t": round(t, 3), "v": 1.0 if up else 1.06, "easing": "in-out-quad"})
        t += 0.8
        up = not up
    return {"scale": keys}


def _details(ctx: StoryContext):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 1) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        width = region.w * (0.8 if frame.wide else 1.0)
        region = Box(region.cx - width / 2, region.y, width, region.h)
        blocks = [text_block("headline", v["headline"], frame, width, region.h - 0.45, role="headline",
                             max_len=_F["headline"], color=kit.tone(kit.ink), align="center",
                             enter=beat.enter("slide", 0))]
        if v["ends"]:
            blocks.append(text_block("ends", v["ends"], frame, width, 0.1, role="caption", max_len=_F["ends"],
                                     color=kit.tone(kit.ink), align="center", enter=beat.enter("fade", 1), gap=0.04))
        if v["code"]:
            blocks.append(text_block("code_label", "Use code", frame, width, 0.08, role="kicker", max_len=12,
                                     color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 2),
                                     gap=0.07))
            blocks.append(button_block("code", v["code"], frame, kit, beat, width=min(width, 0.8), max_len=_F["code"],
                                       align="center", i=3, gap=0.02, fill=kit.ink, worst_word=_F["code"]))
        return layers + stack(region, blocks, valign="middle")

    return layout


def _sale(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    drafts = [
        SceneDraft("badge", 3, _badge(ctx)),
        SceneDraft("details", 3.5, _details(ctx), transition=("slide", "up")),
    ]
    if v["cta"] or v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, kicker=v["discount"], kicker_max=_F["discount"],
                                                     headline=v["headline"], headline_max=_F["headline"],
                                                     button=v["cta"], button_max=_F["cta"], url=v["url"],
                                                     url_max=_F["url"]),
                                 transition=("zoom", None), optional=True))
    return drafts


FLASH_SALE = define_story(
    id="flash_sale",
    name="Flash sale",
    category="promotion",
    description="A loud, short sale: the discount on a badge, what is on sale and until when, the code.",
    default_duration_sec=9.0,
    fields=SALE_FIELDS,
    scenes=_sale,
)

COUNTDOWN_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Launching in", 24, optional=True),
    count_from=f.choice("Count from", [3, 5], 3),
    headline=f.text("Reveal", "The Spring Collection", 50),
    date=f.text("Date", "Live March 21 at 9:00", 40, optional=True),
    cta=f.text("Call to action", "Get notified", 24, optional=True),
    url=f.text("Link text", "example.com/spring", 40, optional=True),
    theme=f.choice("Theme", ["light", "dark"], "dark"),
)
_C = {n: f.max_len(COUNTDOWN_FIELDS, n) for n in ("kicker", "headline", "date", "cta", "url")}


def _count(ctx: StoryContext):
    v = ctx.values
    n = int(v["count_from"])

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 0) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        d = min(region.w, region.h * 0.7, frame.pick(0.62, 0.78, 0.6, 0.66))
        disc = Box(region.cx - d / 2, region.cy - d / 2 + 0.05, d, d)
        if v["kicker"]:
            layers += stack(Box(region.x, disc.y - 0.15, region.w, 0.1), [
                text_block("kicker", v["kicker"], frame, region.w, 0.1, role="subhead", max_len=_C["kicker"],
                           color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 0),
                           uppercase=True)], valign="bottom")
        step = round(beat.dur / n, 3)
        layers.append(shape_layer("ring", frame, disc, "ellipse", None, stroke={"color": kit.tone(kit.highlight),
                                  "width": 0.008}, keyframes=_beats(n, step), enter=beat.enter("fade", 0)))
        for k in range(n):
            end = beat.dur if k == n - 1 else round((k + 1) * step, 3)
            layers.append({"id": f"n{n - k}", "type": "text", "text": str(n - k), **frame.place(disc.square(d * 0.8)),
                           "font": "$brand.fonts.heading", "size": round(d * 0.55, 3), "color": kit.tone(kit.ink),
                           "align": "center", "valign": "middle", "start": round(k * step, 3), "end": end,
                           "enter": {"preset": "pop", "duration": round(min(0.35, step * 0.4), 3)}})
        return layers

    return layout


def _beats(n: int, step: float) -> dict:
    """The ring kicks at every number and settles: one beat per second of the count."""
    keys = []
    for k in range(n):
        t = round(k * step, 3)
        keys.append({"t": t, "v": 0.9, "easing": "step" if k else "linear"})
        keys.append({"t": round(t + min(0.3, step * 0.4), 3), "v": 1.0, "easing": "out-back"})
    return {"scale": keys}


def _countdown(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    weight = 3 if int(v["count_from"]) == 3 else 4.5
    return [
        SceneDraft("count", weight, _count(ctx)),
        SceneDraft("reveal", 4, outro(ctx, kicker=v["date"], kicker_max=_C["date"], headline=v["headline"],
                                      headline_max=_C["headline"], button=v["cta"], button_max=_C["cta"],
                                      url=v["url"], url_max=_C["url"], decor_variant=0),
                   transition=("zoom", None)),
    ]


COUNTDOWN = define_story(
    id="countdown",
    name="Countdown",
    category="promotion",
    description="Build anticipation: a count from three (or five) with a pulsing ring, then the reveal.",
    default_duration_sec=8.0,
    fields=COUNTDOWN_FIELDS,
    scenes=_countdown,
)
