"""Media: a podcast episode teaser."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import (
    PICTURE_CROP_MAX,
    Beat,
    Box,
    Frame,
    image_layer,
    logo_layers,
    lower_third,
    shape_layer,
    stack,
    text_block,
    title_blocks,
)
from reelfarm.studio.stories.scenes import body_region, decor, initials, outro, statement

FIELDS = f.fields_schema(
    show=f.text("Show name", "The Long Game", 40),
    episode=f.text("Episode label", "Episode 42", 24, optional=True),
    episode_title=f.text("Episode title", "Why small teams ship faster", 80),
    guest=f.text("Guest", "Dana Whitfield", 40, optional=True),
    guest_role=f.text("Guest role", "CTO, Fieldwork", 50, optional=True),
    pull_quote=f.text("Pull quote", "Every meeting you cancel is a week of focus you give back to your team.", 140,
                      optional=True),
    cover=f.image_url("Cover art"),
    cta=f.text("Call to action", "Listen now", 24, optional=True),
    platforms=f.text("Where to listen", "Spotify, Apple Podcasts and YouTube", 60, optional=True),
    theme=f.choice("Theme", ["light", "dark"], "dark"),
)
M = {n: f.max_len(FIELDS, n) for n in ("show", "episode", "episode_title", "guest", "guest_role", "pull_quote",
                                       "cta", "platforms")}
BARS = (0.45, 0.8, 0.6, 1.0, 0.7, 0.9, 0.5)


def _cover_art(frame: Frame, ctx: StoryContext, beat: Beat, box: Box, cover: str | None) -> list[dict]:
    """The cover image, or a typographic cover: the show's monogram on a brand card."""
    if cover:
        return [image_layer("cover", cover, frame, beat, box, crop_max=PICTURE_CROP_MAX)]
    kit = ctx.kit
    fill = kit.card
    inner = box.inset(box.w * 0.09)
    return [shape_layer("cover", frame, box, "rounded_rect", kit.tone(fill), radius="$brand.radius",
                        enter=beat.enter("pop", 0))] + stack(inner, [
        text_block("monogram", initials(ctx.values["show"]), frame, inner.w, inner.h, role="display", max_len=2,
                   color=kit.tone(kit.ink_on(fill)), align="center", size=round(inner.w * 0.45, 3),
                   enter=beat.enter("fade", 1))])


def _equalizer(frame: Frame, ctx: StoryContext, beat: Beat, box: Box) -> list[dict]:
    """Bars that pulse like a level meter, each on its own rhythm."""
    n = len(BARS)
    gap = box.w / (n * 3)
    bar_w = (box.w - gap * (n - 1)) / n
    layers = []
    for i, level in enumerate(BARS):
        h = box.h * level
        bar = Box(box.x + i * (bar_w + gap), box.bottom - h, bar_w, h)
        period = 0.3 + 0.07 * (i % 3)
        keys, t, k = [], 0.0, 0
        while t <= beat.dur:
            keys.append({"t": round(t, 3), "v": (1.0 if k % 2 else 0.55) if i % 2 else (0.55 if k % 2 else 1.0),
                         "easing": "in-out-quad"})
            t += period
            k += 1
        layers.append(shape_layer(f"bar{i}", frame, bar, "rounded_rect", ctx.kit.tone(ctx.kit.highlight),
                                  radius=round(bar_w / 2, 4), keyframes={"scale": keys},
                                  enter=beat.enter("fade", 2)))
    return layers


def _cover(ctx: StoryContext, cover: str | None):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 0) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        if frame.wide:
            art_r, text_r = region.split_x(0.42, 0.08)
            art = art_r.square()
        else:
            art_r, text_r = region.split_y(frame.pick(None, 0.5, 0.48, 0.5), 0.05)
            art = art_r.square()
        layers += _cover_art(frame, ctx, beat, art, cover)
        align = "left" if frame.wide else "center"
        blocks = title_blocks(frame, kit, beat, width=text_r.w, max_h=text_r.h - 0.14, headline=v["show"],
                              headline_max=M["show"], kicker=v["episode"], kicker_max=M["episode"], align=align,
                              role="title", rule=False, i0=1)
        layers += stack(text_r, blocks, valign="middle" if frame.wide else "top")
        eq_w = 0.36
        eq_x = text_r.x if frame.wide else text_r.cx - eq_w / 2
        layers += _equalizer(frame, ctx, beat, Box(eq_x, text_r.bottom - 0.12, eq_w, 0.12))
        return layers

    return layout


def _episode(ctx: StoryContext):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 1) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        third_h = 0.3 if v["guest"] else 0.0
        top, bottom = Box(region.x, region.y, region.w, region.h - third_h - 0.05), region
        width = top.w * (0.8 if frame.wide else 1.0)
        layers += stack(Box(top.x, top.y, width, top.h), title_blocks(
            frame, kit, beat, width=width, max_h=top.h, headline=v["episode_title"], headline_max=M["episode_title"],
            kicker=v["episode"], kicker_max=M["episode"]), valign="middle")
        if v["guest"]:
            layers += lower_third("guest", v["guest"], v["guest_role"], frame, kit, beat, region=bottom,
                                  name_max=M["guest"], role_max=M["guest_role"], i=3)
        return layers

    return layout


def _scenes(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    cover = ctx.assets.image("cover", v["cover"])
    drafts = [
        SceneDraft("cover", 3, _cover(ctx, cover)),
        SceneDraft("episode", 3.5, _episode(ctx), transition=("slide", "left")),
    ]
    if v["pull_quote"]:
        light = ctx.inverted()
        drafts.append(SceneDraft("quote", 3.5, statement(light, text=f"\u201c{v['pull_quote']}\u201d",
                                                         text_max=M["pull_quote"] + 2, role="lead"),
                                 transition=("crossfade", None), kit=light.kit, optional=True))
    drafts.append(SceneDraft("outro", 2.5, outro(ctx, kicker=v["show"], kicker_max=M["show"],
                                                 headline=v["episode_title"], headline_max=M["episode_title"],
                                                 button=v["cta"], button_max=M["cta"], url=v["platforms"],
                                                 url_max=M["platforms"], url_is_link=False),
                             transition=("zoom", None)))
    return drafts


PODCAST_TEASER = define_story(
    id="podcast_teaser",
    name="Podcast teaser",
    category="media",
    description="Tease an episode: cover art with a pulsing level meter, title and guest, a pull quote, where to listen.",
    default_duration_sec=12.0,
    fields=FIELDS,
    scenes=_scenes,
    title_field="episode_title",
)
