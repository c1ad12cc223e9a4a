"""Numbers: a stats highlight and a milestone celebration."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.brand import token
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import Beat, Block, Box, Frame, logo_layers, shape_layer, stack, text_block
from reelfarm.studio.stories.scenes import body_region, decor, hero, outro, statement

STATS_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "2024 in numbers", 32, optional=True),
    headline=f.text("Headline", "A record year, thanks to you", 50),
    stats=f.record_list("Stats", [
        {"value": "2.4M", "label": "orders shipped"},
        {"value": "98%", "label": "on-time delivery"},
        {"value": "4.9", "label": "average rating"},
    ], max_items=3, properties={
        "value": {"type": "string", "title": "Value", "minLength": 1, "maxLength": 10},
        "label": {"type": "string", "title": "Label", "minLength": 1, "maxLength": 40},
    }),
    source=f.text("Source note", "Company data, January to December 2024", 80, optional=True),
    url=f.text("Link text", "", 40, optional=True),
    theme=f.THEME,
)
_S = {n: f.max_len(STATS_FIELDS, n) for n in ("kicker", "headline", "source", "url")}
_VALUE = f.item_max_len(STATS_FIELDS, "stats", "value")
_LABEL = f.item_max_len(STATS_FIELDS, "stats", "label")


def _stat_block(frame: Frame, ctx: StoryContext, beat: Beat, i: int, stat: dict, width: float, max_h: float) -> Block:
    kit = ctx.kit
    value = text_block(f"value{i}", stat["value"], frame, width, max_h * 0.62, role="display", max_len=_VALUE,
                       color=kit.tone(kit.highlight), align="center", size=frame.pick(0.13, 0.13, 0.1, 0.11),
                       enter=beat.enter("pop", i + 1), worst_word=_VALUE)
    label = text_block(f"label{i}", stat["label"], frame, width, max_h * 0.38 - 0.01, role="caption", max_len=_LABEL,
                       color=kit.tone(kit.ink), align="center", enter=beat.enter("fade", i + 2), size=0.04)

    def make(box: Box) -> list[dict]:
        return stack(box, [value, Block(h=label.h, make=label.make, gap=0.01)], valign="top")

    return Block(h=value.h + label.h + 0.01, make=make)


def _stats(ctx: StoryContext):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 1) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        if v["source"]:
            src = text_block("source", v["source"], frame, region.w, 0.1, role="caption", max_len=_S["source"],
                             color=kit.tone(kit.ink), align="center", size=0.034, enter=beat.enter("fade", 5))
            layers += stack(Box(region.x, region.bottom - src.h, region.w, src.h), [src])
            region = Box(region.x, region.y, region.w, region.h - src.h - 0.04)
        stats = v["stats"]
        n = len(stats)
        cells = region.cols(n, 0.06) if frame.wide else region.rows(n, 0.05)
        cell_h = cells[0].h if not frame.wide else min(region.h, 0.5)
        for i, (cell, stat) in enumerate(zip(cells, stats)):
            block = _stat_block(frame, ctx, beat, i, stat, cell.w, cell_h)
            layers += stack(cell, [block], valign="middle")
            if i:
                layers.append(_divider(frame, ctx, beat, cell, i))
        return layers

    return layout


def _divider(frame: Frame, ctx: StoryContext, beat: Beat, cell: Box, i: int) -> dict:
    """A hairline between stats: vertical in 16:9, horizontal elsewhere."""
    kit = ctx.kit
    if frame.wide:
        box = Box(cell.x - 0.032, cell.cy - 0.15, 0.004, 0.3)
    else:
        box = Box(cell.cx - 0.15, cell.y - 0.027, 0.3, 0.004)
    return shape_layer(f"divider{i}", frame, box, "rect", token(kit.ink, 25),
                       enter=beat.enter("wipe", i, direction="down" if frame.wide else "right"))


def _stats_story(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    drafts = [
        SceneDraft("intro", 2.5, hero(ctx, kicker=v["kicker"], kicker_max=_S["kicker"], headline=v["headline"],
                                      headline_max=_S["headline"])),
        SceneDraft("stats", 5, _stats(ctx), transition=("slide", "up")),
    ]
    if v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["headline"], headline_max=_S["headline"],
                                                     url=v["url"], url_max=_S["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


STATS_HIGHLIGHT = define_story(
    id="stats_highlight",
    name="Stats highlight",
    category="data",
    description="Up to three key numbers with labels, counted in one after another, with a source note.",
    default_duration_sec=9.0,
    fields=STATS_FIELDS,
    scenes=_stats_story,
)

MILESTONE_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Milestone", 24, optional=True),
    number=f.text("Number", "10,000", 10),
    label=f.text("Label", "happy customers", 40),
    message=f.text("Message", "Thank you for being part of our story. Here's to the next ten thousand.", 120,
                   optional=True),
    cta=f.text("Call to action", "Join the community", 24, optional=True),
    url=f.text("Link text", "", 40, optional=True),
    theme=f.THEME,
)
_M = {n: f.max_len(MILESTONE_FIELDS, n) for n in ("kicker", "number", "label", "message", "cta", "url")}


def _number(ctx: StoryContext):
    v = ctx.values

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, 0) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        blocks: list[Block] = []
        if v["kicker"]:
            blocks.append(text_block("kicker", v["kicker"], frame, region.w, 0.09, role="kicker", max_len=_M["kicker"],
                                     color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 0)))
        blocks.append(text_block("number", v["number"], frame, region.w, 0.34, role="display", max_len=_M["number"],
                                 color=kit.tone(kit.highlight), align="center", size=frame.pick(0.26, 0.22, 0.2, 0.21),
                                 enter=beat.enter("pop", 1), worst_word=_M["number"], gap=0.02))
        blocks.append(text_block("label", v["label"], frame, region.w, 0.2, role="title", max_len=_M["label"],
                                 color=kit.tone(kit.ink), align="center", enter=beat.enter("slide", 2), gap=0.02))
        return layers + stack(region, blocks, valign="middle")

    return layout


def _milestone(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    drafts = [SceneDraft("number", 3.5, _number(ctx))]
    if v["message"]:
        dark = ctx.inverted()
        drafts.append(SceneDraft("message", 3.5, statement(dark, text=v["message"], text_max=_M["message"],
                                                           role="lead"),
                                 transition=("zoom", None), kit=dark.kit))
    if v["cta"] or v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=f"{v['number']} {v['label']}",
                                                     headline_max=_M["number"] + 1 + _M["label"], button=v["cta"],
                                                     button_max=_M["cta"], url=v["url"], url_max=_M["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


MILESTONE = define_story(
    id="milestone",
    name="Milestone",
    category="community",
    description="Celebrate a number with your community: the figure, a thank-you, what comes next.",
    default_duration_sec=10.0,
    fields=MILESTONE_FIELDS,
    scenes=_milestone,
    title_field="label",
)
