"""Scene patterns several stories share: hero, statement, list, person card and outro.

Each returns a layout function ``(frame, beat) -> layers`` for a ``SceneDraft``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reelfarm.studio.stories.base import StoryContext
from reelfarm.studio.stories.brand import token
from reelfarm.studio.stories.layout import (
    PICTURE_CROP_MAX,
    ROLES,
    Beat,
    Block,
    Box,
    Frame,
    button_block,
    fit_text,
    image_layer,
    logo_layers,
    orb,
    shape_layer,
    stack,
    text_block,
    title_blocks,
    top_reserve,
    video_layer,
)

Layout = Callable[[Frame, Beat], list[dict]]


def decor(frame: Frame, ctx: StoryContext, beat: Beat, variant: int = 0) -> list[dict]:
    """Two drifting tint circles placed off the text's corner: quiet motion and brand colour."""
    kit = ctx.kit
    light = kit.surface == "background"
    first, second = ("primary", "accent") if light else ("background", "background")
    w, h = frame.w, frame.h
    big = frame.pick(0.9, 0.95, 0.8, 0.85)
    corners = [((w - 0.12, 0.1), (0.16, h - 0.1)), ((0.14, 0.12), (w - 0.12, h - 0.14))][variant % 2]
    (bx, by), (sx, sy) = corners
    return [
        orb("orb_a", frame, kit, beat, cx=bx, cy=by, d=big, color=first, strength=10,
            dx=-0.03 if variant % 2 == 0 else 0.03, dy=0.02),
        orb("orb_b", frame, kit, beat, cx=sx, cy=sy, d=big * 0.45, color=second, strength=12 if light else 6,
            dx=0.02, dy=-0.02),
    ]


def body_region(frame: Frame, ctx: StoryContext) -> Box:
    """The content area less the band kept for the logo."""
    c = frame.content
    reserve = top_reserve(ctx.kit)
    return Box(c.x, c.y + reserve, c.w, c.h - reserve)


def hero(ctx: StoryContext, *, headline: str, headline_max: int, kicker: str = "", kicker_max: int = 40,
         sub: str = "", sub_max: int = 0, image: str | None = None, role: str = "headline",
         decor_variant: int = 0, logo: bool = True, clip: str | None = None) -> Layout:
    """A title scene: eyebrow, one dominant headline, a supporting line, an optional image or clip.

    With an image or a clip (which takes the image's place): side by side in 16:9 and 1:1, on top
    in 9:16 and 4:5, so the headline sits under the picture in the tall formats.
    """

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        layers = decor(frame, ctx, beat, decor_variant)
        if logo:
            layers += logo_layers(frame, ctx.kit, beat)
        region = body_region(frame, ctx)
        if clip:
            text_r, vis_r = _split(frame, region)
            layers.append(video_layer("clip", clip, frame, beat, vis_r, i=0))
        elif image:
            text_r, vis_r = _split(frame, region)
            layers.append(image_layer("image", image, frame, beat, vis_r, i=0, crop_max=PICTURE_CROP_MAX))
        else:
            text_r = _measure(frame, region)
        blocks = title_blocks(frame, ctx.kit, beat, width=text_r.w, max_h=text_r.h, headline=headline,
                              headline_max=headline_max, kicker=kicker, kicker_max=kicker_max, sub=sub,
                              sub_max=sub_max, role=role)
        return layers + stack(text_r, blocks, valign="middle")

    return layout


def _split(frame: Frame, region: Box) -> tuple[Box, Box]:
    if frame.wide:
        return region.split_x(0.55, 0.08)
    if frame.kind == "square":
        return region.split_x(0.56, 0.06)
    vis, text = region.split_y(frame.pick(None, 0.42, 0.36, 0.4), 0.05)
    return text, vis


def _measure(frame: Frame, region: Box) -> Box:
    """A comfortable line length: text in 16:9 does not run the full width."""
    if frame.wide:
        return Box(region.x, region.y, region.w * 0.74, region.h)
    return region


def statement(ctx: StoryContext, *, text: str, text_max: int, attribution: str = "", attribution_max: int = 0,
              kicker: str = "", kicker_max: int = 40, role: str = "title", words: bool = True,
              decor_variant: int = 1) -> Layout:
    """One big line, centred, revealed word by word; an optional attribution below."""

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, decor_variant) + logo_layers(frame, kit, beat)
        region = _measure_centered(frame, body_region(frame, ctx))
        blocks: list[Block] = []
        if kicker:
            blocks.append(text_block("kicker", kicker, frame, region.w, 0.09, role="kicker", max_len=kicker_max,
                                     color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 0)))
        reserve = (0.16 if attribution else 0.0) + (0.12 if kicker else 0.0)
        enter = beat.enter("word-by-word", 1) if words else beat.enter("slide", 1)
        blocks.append(text_block("statement", text, frame, region.w, region.h - reserve, role=role, max_len=text_max,
                                 color=kit.tone(kit.ink), align="center", enter=enter, gap=0.03,
                                 size=ROLES[role].size * 1.25 * frame.pick(1.0, 1.15, 0.95, 1.05), max_lines=5))
        if attribution:
            blocks.append(text_block("attribution", attribution, frame, region.w, 0.12, role="caption",
                                     max_len=attribution_max, color=kit.tone(kit.highlight), align="center",
                                     enter=beat.enter("fade", 4), gap=0.05))
        return layers + stack(region, blocks, valign="middle")

    return layout


def _measure_centered(frame: Frame, region: Box) -> Box:
    if frame.wide:
        w = region.w * 0.8
        return Box(region.cx - w / 2, region.y, w, region.h)
    return region


def item_list(ctx: StoryContext, *, title: str, title_max: int, items: list[str], item_max: int,
              numbered: bool = True, decor_variant: int = 0, first: int = 1) -> Layout:
    """A heading and up to five items with numbered (or dot) badges, entering in turn.

    16:9 sets the heading beside the list; the other formats stack it above. All items share
    one text size and one row height, so the list reads as a column.
    """

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, decor_variant) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        if frame.wide:
            head_r, list_r = region.split_x(0.38, 0.08)
            head = text_block("title", title, frame, head_r.w, head_r.h, role="title", max_len=title_max,
                              color=kit.tone(kit.ink), enter=beat.enter("slide", 0), size=0.085)
            return layers + stack(head_r, [head]) + stack(list_r, _rows(frame, ctx, beat, items, list_r, item_max,
                                                                        numbered, first))
        head = text_block("title", title, frame, region.w, frame.pick(0.2, 0.3, 0.2, 0.26), role="title",
                          max_len=title_max, color=kit.tone(kit.ink), enter=beat.enter("slide", 0))
        list_r = Box(region.x, region.y, region.w, region.h - head.h - 0.07)
        rows = _rows(frame, ctx, beat, items, list_r, item_max, numbered, first)
        if rows:
            rows[0] = Block(h=rows[0].h, make=rows[0].make, gap=0.07)
        return layers + stack(region, [head] + rows)

    return layout


_BADGE = 0.075
_BADGE_GAP = 0.035
_ROW_GAP = 0.035


def _rows(frame: Frame, ctx: StoryContext, beat: Beat, items: list[str], region: Box, item_max: int,
          numbered: bool, first: int) -> list[Block]:
    """One block per item, all at the size the longest item allows."""
    n = max(1, len(items))
    width = region.w - _BADGE - _BADGE_GAP
    max_h = min(frame.pick(0.2, 0.24, 0.16, 0.19), (region.h - _ROW_GAP * (n - 1)) / n)
    top = frame.pick(0.055, 0.05)
    size = min(fit_text(item, item_max, width, max_h, ROLES["body"], size=top, setter=frame.typesetter).size
               for item in items)
    texts = [text_block(f"item{i}", item, frame, width, max_h, role="body", max_len=item_max, size=size,
                        color=ctx.kit.tone(ctx.kit.ink), valign="middle", enter=beat.enter("fade", i + 1))
             for i, item in enumerate(items)]
    row_h = max([_BADGE] + [t.h for t in texts])
    return [_row(frame, ctx, beat, i, t, row_h, str(first + i) if numbered else "") for i, t in enumerate(texts)]


def _row(frame: Frame, ctx: StoryContext, beat: Beat, i: int, text: Block, row_h: float, number: str) -> Block:
    kit = ctx.kit
    fill = kit.button

    def make(box: Box) -> list[dict]:
        cy = box.y + row_h / 2
        d = _BADGE if number else _BADGE * 0.36
        disc = Box(box.x + (_BADGE - d) / 2, cy - d / 2, d, d)
        layers = [shape_layer(f"badge{i}", frame, disc, "ellipse", kit.tone(fill), enter=beat.enter("pop", i + 1))]
        if number:
            layers.append({"id": f"badge{i}_n", "type": "text", "text": number, **frame.place(disc),
                           "font": "$brand.fonts.heading", "size": 0.036, "color": kit.tone(kit.ink_on(fill)),
                           "align": "center", "valign": "middle", "enter": beat.enter("pop", i + 1)})
        text_box = Box(box.x + _BADGE + _BADGE_GAP, cy - text.h / 2, box.w - _BADGE - _BADGE_GAP, text.h)
        return layers + text.make(text_box)

    return Block(h=row_h, make=make, gap=_ROW_GAP if i else 0.0)


def outro(ctx: StoryContext, *, headline: str, headline_max: int, button: str = "", button_max: int = 0,
          url: str = "", url_max: int = 0, kicker: str = "", kicker_max: int = 0, decor_variant: int = 1,
          url_is_link: bool = True) -> Layout:
    """The closing card: logo, a short line, the call to action and the address, centred."""

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, decor_variant)
        region = _measure_centered(frame, frame.content)
        head: list[Block] = []
        if kit.brand.get("logo"):
            head.append(Block(h=0.14, make=lambda box: logo_layers(frame, kit, beat, box=box, height=0.14,
                                                                    align="center")))
        after_logo = 0.08  # the logo's backing card reaches past its box
        if kicker:
            head.append(text_block("kicker", kicker, frame, region.w, 0.1, role="subhead", max_len=kicker_max,
                                   color=kit.tone(kit.highlight), align="center", enter=beat.enter("fade", 0),
                                   gap=after_logo if head else 0.0))
        tail: list[Block] = []
        if button:
            tail.append(button_block("button", button, frame, kit, beat, width=min(region.w, 0.9),
                                     max_len=button_max, align="center", i=2, gap=0.05))
        if url:
            tail.append(text_block("url", url, frame, region.w, 0.08 if url_is_link else 0.13, role="caption",
                                   max_len=url_max, color=kit.tone(kit.ink), align="center",
                                   enter=beat.enter("fade", 3), gap=0.035,
                                   worst_word=url_max if url_is_link else None))
        gap = 0.0 if not head else 0.04 if kicker else after_logo
        room = region.h - sum(b.h + b.gap for b in head + tail) - gap
        title = text_block("headline", headline, frame, region.w, min(0.5, room), role="title",
                           max_len=headline_max, color=kit.tone(kit.ink), align="center",
                           enter=beat.enter("slide", 1), gap=gap, size=0.09 * frame.pick(1.0, 1.15, 0.95, 1.05),
                           max_lines=3)
        return layers + stack(region, head + [title] + tail, valign="middle")

    return layout


def panel(frame: Frame, ctx: StoryContext, beat: Beat, box: Box, layer_id: str = "panel", i: int = 0) -> dict[str, Any]:
    """A rounded card in the brand's card colour, sliding up into place."""
    return shape_layer(layer_id, frame, box, "rounded_rect", token(ctx.kit.card), radius="$brand.radius",
                       enter=beat.enter("slide", i, distance=0.03))


def initials(name: str) -> str:
    """Up to two initials of a name, for an avatar without a photo."""
    letters = [w[0] for w in name.split() if w[:1].isalpha()]
    return "".join(letters[:1] + letters[1:][-1:]).upper() or "?"


def avatar(frame: Frame, ctx: StoryContext, beat: Beat, box: Box, name: str, photo: str | None, i: int = 0) -> list[dict]:
    """A round photo, or the name's initials on a brand disc when there is no photo."""
    kit = ctx.kit
    disc = box.square()
    if photo:
        layer = image_layer("avatar", photo, frame, beat, disc, i=i, radius=round(disc.w / 2, 4))
        layer["enter"] = beat.enter("pop", i)
        return [layer]
    fill = kit.button
    return [
        shape_layer("avatar", frame, disc, "ellipse", kit.tone(fill), enter=beat.enter("pop", i)),
        {"id": "initials", "type": "text", "text": initials(name), **frame.place(disc), "font": "$brand.fonts.heading",
         "size": round(disc.w * 0.36, 3), "color": kit.tone(kit.ink_on(fill)), "align": "center",
         "valign": "middle", "enter": beat.enter("pop", i)},
    ]


def person(ctx: StoryContext, *, name: str, name_max: int, role: str, role_max: int, photo: str | None,
           kicker: str = "", kicker_max: int = 0, decor_variant: int = 0) -> Layout:
    """A person: photo (or initials) beside their name and role in 16:9, centred above them elsewhere."""

    def layout(frame: Frame, beat: Beat) -> list[dict]:
        kit = ctx.kit
        layers = decor(frame, ctx, beat, decor_variant) + logo_layers(frame, kit, beat)
        region = body_region(frame, ctx)
        if frame.kind in ("wide", "square"):
            pic, text_r = region.split_x(0.36, frame.pick(0.08, 0.06, 0.05))
            layers += avatar(frame, ctx, beat, pic.inset(0.02), name, photo)
            blocks = title_blocks(frame, kit, beat, width=text_r.w, max_h=text_r.h, headline=name,
                                  headline_max=name_max, kicker=kicker, kicker_max=kicker_max, sub=role,
                                  sub_max=role_max, role="title", i0=1)
            return layers + stack(text_r, blocks)
        d = frame.pick(None, 0.52, None, 0.42)
        photo_block = Block(h=d, make=lambda box: avatar(frame, ctx, beat, Box(box.cx - d / 2, box.y, d, d), name,
                                                          photo))
        blocks = title_blocks(frame, kit, beat, width=region.w, max_h=region.h - d - 0.06, headline=name,
                              headline_max=name_max, kicker=kicker, kicker_max=kicker_max, sub=role,
                              sub_max=role_max, align="center", role="title", i0=1)
        blocks[0] = Block(h=blocks[0].h, make=blocks[0].make, gap=0.06)
        return layers + stack(region, [photo_block] + blocks)

    return layout
