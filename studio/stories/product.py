"""Product stories: a launch, a feature spotlight and a before/after."""

from __future__ import annotations

from reelfarm.studio.stories import fields as f
from reelfarm.studio.stories.base import StoryContext, define_story
from reelfarm.studio.stories.compose import SceneDraft
from reelfarm.studio.stories.scenes import hero, item_list, outro, statement

LAUNCH_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "Introducing", 24, optional=True),
    product=f.text("Product name", "Aurora Lamp", 32),
    tagline=f.text("Tagline", "Light that follows the rhythm of your day", 80, optional=True),
    features_title=f.text("Features heading", "Why you'll love it", 32),
    features=f.text_list("Features", ["Warm to daylight in one touch", "Twelve hours on a single charge",
                                      "Recycled aluminium body"], max_items=4, item_max_length=48),
    price=f.text("Price", "$129", 16, optional=True),
    cta=f.text("Call to action", "Pre-order now", 24, optional=True),
    url=f.text("Link text", "aurora.example.com", 40, optional=True),
    image=f.image_url("Product image"),
    clip=f.video("Product clip", description="the id of a video uploaded to the media library: plays, looped "
                 "and muted, beside the tagline (under it in 9:16 and 4:5), in the image's place"),
    theme=f.THEME,
)
_L = {n: f.max_len(LAUNCH_FIELDS, n) for n in ("kicker", "product", "tagline", "features_title", "features",
                                               "price", "cta", "url")}


def _launch(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    clip = ctx.assets.video("clip", v["clip"])
    image = None if clip else ctx.assets.image("image", v["image"])  # one picture for the showcase
    dark = ctx.inverted()
    drafts = [SceneDraft("intro", 3, hero(dark, kicker=v["kicker"], kicker_max=_L["kicker"], headline=v["product"],
                                          headline_max=_L["product"]), kit=dark.kit)]
    if clip or image:
        drafts.append(SceneDraft("showcase", 3, hero(ctx, headline=v["tagline"] or v["product"], headline_max=_L["tagline"],
                                                     role="title", image=image, clip=clip, decor_variant=1),
                                 transition=("zoom", None)))
    elif v["tagline"]:
        drafts.append(SceneDraft("showcase", 3, statement(ctx, text=v["tagline"], text_max=_L["tagline"]),
                                 transition=("zoom", None)))
    drafts.append(SceneDraft("features", 4, item_list(ctx, title=v["features_title"], title_max=_L["features_title"],
                                                      items=v["features"], item_max=_L["features"], numbered=False),
                             transition=("slide", "left")))
    drafts.append(SceneDraft("outro", 3, outro(ctx, kicker=v["price"], kicker_max=_L["price"], headline=v["product"],
                                               headline_max=_L["product"], button=v["cta"], button_max=_L["cta"],
                                               url=v["url"], url_max=_L["url"]),
                             transition=("crossfade", None)))
    return drafts


PRODUCT_LAUNCH = define_story(
    id="product_launch",
    name="Product launch",
    category="product",
    description="Unveil a product: name reveal, hero shot, clip or tagline, key features, price and call to action.",
    default_duration_sec=14.0,
    fields=LAUNCH_FIELDS,
    scenes=_launch,
    title_field="product",
)

SPOTLIGHT_FIELDS = f.fields_schema(
    kicker=f.text("Eyebrow", "New feature", 24, optional=True),
    feature=f.text("Feature name", "Smart scheduling", 40),
    description=f.text("Description", "Drop in your tasks and get a realistic plan for the week, rebuilt "
                       "every time something changes.", 110, optional=True),
    benefit=f.text("Benefit", "Teams save five hours every week", 60, optional=True),
    cta=f.text("Call to action", "Try it free", 24, optional=True),
    url=f.text("Link text", "example.com/scheduling", 40, optional=True),
    image=f.image_url("Screenshot or photo"),
    theme=f.THEME,
)
_S = {n: f.max_len(SPOTLIGHT_FIELDS, n) for n in ("kicker", "feature", "description", "benefit", "cta", "url")}


def _spotlight(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    image = ctx.assets.image("image", v["image"])
    drafts = [SceneDraft("feature", 4, hero(ctx, kicker=v["kicker"], kicker_max=_S["kicker"], headline=v["feature"],
                                            headline_max=_S["feature"], sub=v["description"],
                                            sub_max=_S["description"], image=image))]
    if v["benefit"]:
        dark = ctx.inverted()
        drafts.append(SceneDraft("benefit", 3, statement(dark, text=v["benefit"], text_max=_S["benefit"]),
                                 transition=("wipe", "left"), kit=dark.kit))
    drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["feature"], headline_max=_S["feature"],
                                                 button=v["cta"], button_max=_S["cta"], url=v["url"],
                                                 url_max=_S["url"]),
                             transition=("crossfade", None)))
    return drafts


FEATURE_SPOTLIGHT = define_story(
    id="feature_spotlight",
    name="Feature spotlight",
    category="product",
    description="Put one feature in the spotlight: what it is, the benefit in one line, where to try it.",
    default_duration_sec=10.0,
    fields=SPOTLIGHT_FIELDS,
    scenes=_spotlight,
    title_field="feature",
)

BEFORE_AFTER_FIELDS = f.fields_schema(
    title=f.text("Title", "From cluttered to calm", 50),
    before_label=f.text("Before label", "Before", 16),
    before_text=f.text("Before", "Notes in five apps and deadlines in your head", 90),
    after_label=f.text("After label", "After", 16),
    after_text=f.text("After", "One calm board that plans your week for you", 90),
    before_image=f.image_url("Before image"),
    after_image=f.image_url("After image"),
    cta=f.text("Call to action", "See how it works", 24, optional=True),
    url=f.text("Link text", "example.com", 40, optional=True),
    theme=f.THEME,
)
_B = {n: f.max_len(BEFORE_AFTER_FIELDS, n) for n in ("title", "before_label", "before_text", "after_label",
                                                     "after_text", "cta", "url")}


def _before_after(ctx: StoryContext) -> list[SceneDraft]:
    v = ctx.values
    before = ctx.assets.image("before", v["before_image"])
    after = ctx.assets.image("after", v["after_image"])
    dark = ctx.inverted()
    drafts = [
        SceneDraft("intro", 2.5, hero(ctx, headline=v["title"], headline_max=_B["title"])),
        SceneDraft("before", 3, hero(ctx, kicker=v["before_label"], kicker_max=_B["before_label"],
                                     headline=v["before_text"], headline_max=_B["before_text"], role="title",
                                     image=before, decor_variant=1),
                   transition=("slide", "left")),
        SceneDraft("after", 3, hero(dark, kicker=v["after_label"], kicker_max=_B["after_label"],
                                    headline=v["after_text"], headline_max=_B["after_text"], role="title",
                                    image=after, decor_variant=0),
                   transition=("wipe", "right"), kit=dark.kit),
    ]
    if v["cta"] or v["url"]:
        drafts.append(SceneDraft("outro", 2.5, outro(ctx, headline=v["title"], headline_max=_B["title"],
                                                     button=v["cta"], button_max=_B["cta"], url=v["url"],
                                                     url_max=_B["url"]),
                                 transition=("crossfade", None), optional=True))
    return drafts


BEFORE_AFTER = define_story(
    id="before_after",
    name="Before and after",
    category="product",
    description="Show the change you make: the before, a wipe, the after, then the call to action.",
    default_duration_sec=11.0,
    fields=BEFORE_AFTER_FIELDS,
    scenes=_before_after,
    title_field="title",
)
