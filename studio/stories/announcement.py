"""Announcement: news in three beats (headline, detail, call to action)."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.layout import video_background
from reelfarm.studio.stories.scenes import hero, outro, statement

FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Big news", 32, optional=True),
    headline=f.text("Headline", "We're opening our second studio", 60),
    body=f.text("Details", "Same team, same coffee, now in the heart of the old town with room for everyone.",
                160, optional=True),
    cta=f.text("Call to action", "Visit us this Saturday", 28, optional=True),
    url=f.text("Link text", "example.com/studio", 40, optional=True),
    image=f.image_url("Image"),
    background_video=f.video("Background video", description="the id of a video uploaded to the media library: "
                             "plays, looped and muted under a veil of the theme's colour, behind the opening and "
                             "closing scenes, filling every format (cropped, centred)"),
    theme=f.THEME,
)
M = {name: f.max_len(FIELDS, name) for name in ("kicker", "headline", "body", "cta", "url")}


def _scenes(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    image = ctx.assets.image("image", v["image"])
    clip = ctx.assets.video("background", v["background_video"])
    # The clip opens and closes the video; the details between keep their own picture or colour, so
    # each of the two starts the clip from its beginning without a jump inside a scene.
    backdrop = video_background(clip, ctx.kit) if clip else None
    drafts = [SceneDraft("intro", 3, hero(ctx, kicker=v["kicker"], kicker_max=M["kicker"], headline=v["headline"],
                                          headline_max=M["headline"]), background=backdrop)]
    if image:
        drafts.append(SceneDraft("details", 3.5, hero(ctx, headline=v["body"] or v["headline"], headline_max=M["body"],
                                                      role="subhead", image=image, decor_variant=1),
                                 transition=("slide", "left")))
    elif v["body"]:
        dark = ctx.inverted()
        drafts.append(SceneDraft("details", 3.5, statement(dark, text=v["body"], text_max=M["body"], role="lead"),
                                 transition=("slide", "left"), kit=dark.kit))
    drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["headline"], headline_max=M["headline"],
                                                 button=v["cta"], button_max=M["cta"], url=v["url"], url_max=M["url"]),
                             transition=("crossfade", None), background=backdrop))
    return drafts


ANNOUNCEMENT = define_story(
    id="announcement",
    name="Announcement",
    category="announcement",
    description="Share news in three beats: a bold headline, the detail, and what to do next.",
    default_duration_sec=10.0,
    fields=FIELDS,
    scenes=_scenes,
)
