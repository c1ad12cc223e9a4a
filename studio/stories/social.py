"""Social proof and inspiration: a customer testimonial and a quote card."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import (
    Beat,
    Block,
    Box,
    Frame,
    logo_layers,
    lower_third,
    stack,
    text_block,
    title_blocks,
    video_background,
)
from reelfarm.studio.stories.scenes import body_region, decor, outro, person

STAR_FONT = {"family": "Inter", "weight": 700}  # the brand font may lack the star glyph; Inter has it


def _quote_layout(ctx: StoryContext, *, quote: str, quote_max: int, stars: int = 0, attribution: str = "",
                  attribution_max: int = 0, decor_variant: int = 1, size: float = 0.066):
    """A large opening quote mark, optional stars, the quote revealed word by word, a byline."""

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, decor_variant) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        if frame.wide:
            region = Box(region.x + region.w * 0.08, region.y, region.w * 0.84, region.h)
        color = kit.tone(kit.highlight)
        blocks: list[Block] = [text_block("mark", "\u201c", frame, 0.2, 0.16, role="display", max_len=1, color=color,
                                          enter=beat.enter("pop", 0), size=0.24, line_height=0.6)]
        if stars:
            blocks.append(text_block("stars", "\u2605" * stars, frame, 0.6, 0.09, role="subhead", max_len=5, size=0.055,
                                     color=color, enter=beat.enter("fade", 1), gap=0.0, font=STAR_FONT,
                                     letter_spacing=0.1))
        reserve = sum(b.h + b.gap for b in blocks) + (0.14 if attribution else 0.0) + 0.05
        blocks.append(text_block("quote", quote, frame, region.w, region.h - reserve, role="lead", max_len=quote_max,
                                 color=kit.tone(kit.ink), enter=beat.enter("word-by-word", 2), gap=0.04,
                                 size=size * frame.pick(1.0, 1.15, 0.95, 1.05), max_lines=6))
        if attribution:
            blocks.append(text_block("byline", attribution, frame, region.w, 0.1, role="caption",
                                     max_len=attribution_max, color=kit.tone(kit.highlight),
                                     enter=beat.enter("fade", 5), gap=0.05))
        return layers + stack(region, blocks, valign="middle")

    return layout


TESTIMONIAL_FIELDS = f.fields_schema(
    quote=f.text("Quote", "We cut our onboarding time in half. Our new hires are productive in their first "
                 "week, and they tell us they actually enjoy it.", 180),
    name=f.text("Name", "Priya Raman", 40),
    role=f.text("Role and company", "People Lead, Brightside", 50, optional=True),
    rating=f.choice("Star rating", [0, 1, 2, 3, 4, 5], 5, description="0 hides the stars."),
    photo=f.image_url("Photo"),
    clip=f.video("Testimonial clip", description="the id of a video uploaded to the media library: the customer "
                 "speaking, with its sound, over the whole frame (cropped, centred) with a name card; it opens the "
                 "video in place of the photo scene, and holds its last frame if shorter than its scene"),
    cta=f.text("Call to action", "Read the story", 24, optional=True),
    url=f.text("Link text", "example.com/customers", 40, optional=True),
    theme=f.THEME,
)
_T = {n: f.max_len(TESTIMONIAL_FIELDS, n) for n in ("quote", "name", "role", "cta", "url")}


def _speaker(ctx: StoryContext):
    """The clip's scene: the footage is the background; the logo and a name card sit over it."""
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        return logo_layers(frame, kit, beat) + lower_third(
            "speaker", v["name"], v["role"], frame, kit, beat, region=body_region(frame, ctx), name_max=_T["name"],
            role_max=_T["role"], i=1)

    return layout


def _testimonial(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    clip = ctx.assets.video("clip", v["clip"])
    quote = SceneDraft("quote", 5, _quote_layout(ctx, quote=v["quote"], quote_max=_T["quote"], stars=int(v["rating"])))
    if clip:
        # The customer says it in person, with their sound: the clip plays once (no loop, a voice
        # must not start over), and the quote follows as the line to remember.
        drafts = [SceneDraft("speaker", 6, _speaker(ctx),
                             background=video_background(clip, ctx.kit, loop=False, volume=1.0, veil=None)),
                  SceneDraft(quote.id, 4, quote.layout, transition=("crossfade", None))]
    else:
        photo = ctx.assets.image("photo", v["photo"])
        dark = ctx.inverted()
        drafts = [quote, SceneDraft("person", 3, person(dark, name=v["name"], name_max=_T["name"], role=v["role"],
                                                        role_max=_T["role"], photo=photo),
                                    transition=("slide", "up"), kit=dark.kit)]
    if v["cta"] or v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["cta"] or v["name"], headline_max=_T["name"],
                                                     url=v["url"], url_max=_T["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


TESTIMONIAL = define_story(
    id="testimonial",
    name="Customer testimonial",
    category="social_proof",
    description="Let a customer speak: star rating and quote, then who said it with photo or initials, or the "
                "customer's own clip with a name card.",
    default_duration_sec=11.0,
    fields=TESTIMONIAL_FIELDS,
    scenes=_testimonial,
    title_field="name",
)

QUOTE_FIELDS = f.fields_schema(
    quote=f.text("Quote", "The details are not the details. They make the design.", 160),
    author=f.text("Author", "Charles Eames", 40),
    source=f.text("Source", "Designer", 60, optional=True),
    theme=f.choice("Theme", ["light", "dark"], "dark"),
)
_Q = {n: f.max_len(QUOTE_FIELDS, n) for n in ("quote", "author", "source")}


def _byline(ctx: StoryContext):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 0)
        region = frame.content
        blocks = []
        if kit.brand.get("logo"):
            blocks.append(Block(h=0.14, make=lambda box: logo_layers(frame, kit, beat, box=box, height=0.14,
                                                                      align="center")))
        blocks += title_blocks(frame, kit, beat, width=region.w, max_h=region.h - (0.2 if blocks else 0.0),
                               headline=v["author"], headline_max=_Q["author"], sub=v["source"], sub_max=_Q["source"],
                               align="center", role="title", i0=1)
        if len(blocks) > 1 and kit.brand.get("logo"):
            blocks[1] = Block(h=blocks[1].h, make=blocks[1].make, gap=0.06)
        return layers + stack(region, blocks, valign="middle")

    return layout


def _quote(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    return [
        SceneDraft("quote", 6, _quote_layout(ctx, quote=v["quote"], quote_max=_Q["quote"], decor_variant=0, size=0.09)),
        SceneDraft("byline", 3, _byline(ctx), transition=("crossfade", None)),
    ]


QUOTE = define_story(
    id="quote",
    name="Quote card",
    category="inspiration",
    description="One memorable line, revealed word by word, then its author.",
    default_duration_sec=9.0,
    fields=QUOTE_FIELDS,
    scenes=_quote,
    title_field="author",
)
