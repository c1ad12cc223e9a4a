"""Recruiting: a job opening."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.scenes import hero, item_list, outro

FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "We're hiring", 24, optional=True),
    role=f.text("Role", "Senior Product Designer", 50),
    details=f.text("Details", "Remote in Europe, full time", 50, optional=True),
    perks_title=f.text("Perks heading", "Why you'll love it here", 32),
    perks=f.text_list("Perks", ["Four-day weeks every summer", "A learning budget that gets used",
                                "Small team, real ownership"], max_items=4, item_max_length=48),
    cta=f.text("Call to action", "Apply today", 24, optional=True),
    url=f.text("Link text", "example.com/careers", 40, optional=True),
    image=f.image_url("Team photo"),
    theme=f.THEME,
)
M = {n: f.max_len(FIELDS, n) for n in ("kicker", "role", "details", "perks_title", "perks", "cta", "url")}


def _scenes(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    image = ctx.assets.image("image", v["image"])
    dark = ctx.inverted()
    return [
        SceneDraft("role", 3.5, hero(ctx, kicker=v["kicker"], kicker_max=M["kicker"], headline=v["role"],
                                     headline_max=M["role"], sub=v["details"], sub_max=M["details"], image=image)),
        SceneDraft("perks", 4, item_list(dark, title=v["perks_title"], title_max=M["perks_title"], items=v["perks"],
                                         item_max=M["perks"], numbered=False, decor_variant=1),
                   transition=("slide", "left"), kit=dark.kit),
        SceneDraft("outro", 2.5, outro(ctx, kicker=v["kicker"], kicker_max=M["kicker"], headline=v["role"],
                                       headline_max=M["role"], button=v["cta"], button_max=M["cta"], url=v["url"],
                                       url_max=M["url"]),
                   transition=("crossfade", None)),
    ]


HIRING = define_story(
    id="hiring",
    name="We're hiring",
    category="recruiting",
    description="Announce an opening: the role and where, why people love working with you, how to apply.",
    default_duration_sec=10.0,
    fields=FIELDS,
    scenes=_scenes,
    title_field="role",
)
