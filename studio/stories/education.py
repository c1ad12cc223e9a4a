"""Education: a numbered tips list."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import Beat, Frame, logo_layers, rule_block, stack, text_block
from reelfarm.studio.stories.scenes import body_region, decor, hero, item_list, outro

FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Quick tips", 24, optional=True),
    title=f.text("Title", "4 habits for deeper sleep", 50),
    tips=f.text_list("Tips", [
        "Keep the same wake-up time, weekends included",
        "Dim the lights an hour before bed",
        "Keep your bedroom cool, around 18 °C",
        "Save caffeine for the morning",
    ], max_items=5, item_max_length=90),
    outro=f.text("Closing line", "Save this for tonight", 40, optional=True),
    url=f.text("Link text", "", 40, optional=True),
    theme=f.THEME,
)
M = {n: f.max_len(FIELDS, n) for n in ("kicker", "title", "tips", "outro", "url")}
MIN_TIP_SEC = 1.8  # below this per scene, the tips share list scenes
PAGE = 3  # tips per list scene


def _tip(ctx: StoryContext, i: int, tip: str):
    """One tip: a big index number beside (16:9) or above the tip, with an accent rule."""

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, i % 2) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        number = text_block("number", f"{i + 1:02d}", frame, region.w, 0.3, role="display", max_len=2,
                            color=kit.tone(kit.highlight), size=frame.pick(0.26, 0.24, 0.2, 0.22),
                            enter=beat.enter("pop", 0))
        if frame.wide:
            num_r, text_r = region.split_x(0.28, 0.04)
            layers += stack(num_r, [number])
        else:
            text_r = region
        size = 0.085 * frame.pick(1.0, 1.15, 0.95, 1.05)
        blocks = [] if frame.wide else [number]
        blocks.append(rule_block("rule", frame, kit, beat, i=1, gap=0.0 if frame.wide else 0.03))
        room = text_r.h - sum(b.h + b.gap for b in blocks) - 0.04
        blocks.append(text_block("tip", tip, frame, text_r.w, min(room, 0.75), role="lead", max_len=M["tips"],
                                 color=kit.tone(kit.ink), size=size, max_lines=5, enter=beat.enter("slide", 2),
                                 gap=0.04))
        return layers + stack(text_r, blocks)

    return layout


def _scenes(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    tips = v["tips"]
    drafts = [SceneDraft("intro", 2.5, hero(ctx, kicker=v["kicker"], kicker_max=M["kicker"], headline=v["title"],
                                            headline_max=M["title"]), optional=True)]
    if ctx.duration / (len(tips) + 1) >= MIN_TIP_SEC:
        drafts += [SceneDraft(f"tip{i + 1}", 2.5, _tip(ctx, i, tip), transition=("slide", "left"))
                   for i, tip in enumerate(tips)]
    else:
        pages = [tips[k:k + PAGE] for k in range(0, len(tips), PAGE)]
        drafts = [SceneDraft(f"tips{p + 1}", 3, item_list(ctx, title=v["title"], title_max=M["title"], items=page,
                                                          item_max=M["tips"], first=p * PAGE + 1),
                             transition=("slide", "left")) for p, page in enumerate(pages)]
    if v["outro"] or v["url"]:
        drafts.append(SceneDraft("outro", 2, outro(ctx, headline=v["outro"] or v["title"], headline_max=M["title"],
                                                   url=v["url"], url_max=M["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


TIPS_LIST = define_story(
    id="tips_list",
    name="Tips list",
    category="education",
    description="Teach in steps: a title, then each tip with a big index number, then a closing line.",
    default_duration_sec=15.0,
    fields=FIELDS,
    scenes=_scenes,
    title_field="title",
)
