"""Local creative commands: build a story, lint a document, render stills and MP4s.

They need no server: `reelfarm story`, `reelfarm lint`, `reelfarm render`, `reelfarm still`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reelfarm.renderer.errors import RendererError, SpecInvalid
from reelfarm.renderer.spec import (
    CONTAINERS,
    DEFAULT_FORMAT,
    ENCODER_KINDS,
    FORMATS,
    MAX_FPS,
    MAX_RESOLUTION,
    MIN_RESOLUTION,
    RASTER_KINDS,
    RenderSpec,
    container_problems,
)

if TYPE_CHECKING:  # the document model and assets load in the commands that read a document
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.model import Doc


def _load_doc(path: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from exc


def _assets_for(doc_path: str, assets_dir: str | None) -> LocalAssets:
    from reelfarm.renderer.assets import LocalAssets

    return LocalAssets(assets_dir or Path(doc_path).resolve().parent)


def _check(doc: dict[str, Any]) -> Doc:
    from reelfarm.renderer.linter import lint  # drawing and encoding load only in the commands that use them

    report = lint(doc, check_layout=False)
    if report.errors:
        for p in report.errors:
            click.echo(f"error {p.pointer or '/'} [{p.code}] {p.message}", err=True)
        raise click.ClickException(f"the document has {len(report.errors)} error(s); nothing rendered")
    assert report.doc is not None  # no errors: the schema held and the doc was built
    return report.doc


@click.command("lint")
@click.argument("doc_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--assets", "assets_dir", type=click.Path(file_okay=False), help="Root of asset keys.")
def lint_command(doc_path: str, as_json: bool, assets_dir: str | None) -> None:
    """Lint a VideoDoc: errors stop a render, warnings are advice. Exit 1 on errors."""
    from reelfarm.renderer.linter import lint

    report = lint(_load_doc(doc_path), assets=_assets_for(doc_path, assets_dir))
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        for kind, items in (("error", report.errors), ("warning", report.warnings)):
            for p in items:
                click.echo(f"{kind} {p.pointer or '/'} [{p.code}] {p.message}")
        click.echo(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    sys.exit(1 if report.errors else 0)


def _spec(doc: Doc, fmt: str | None, resolution: int, fps: int | None) -> RenderSpec:
    try:
        return RenderSpec.for_doc(doc, fmt, resolution, fps)
    except SpecInvalid as exc:
        raise click.UsageError(str(exc)) from exc


# What the command line accepts beyond the API's published choices is the renderer's own rule:
# any size and rate it can render (previews, tests), checked once by RenderSpec.
_RESOLUTION = click.IntRange(MIN_RESOLUTION, MAX_RESOLUTION)
_FPS = click.IntRange(1, MAX_FPS)
_RASTER = click.option("--raster", type=click.Choice(RASTER_KINDS), default="auto", show_default=True,
                       envvar="REELFARM_RASTER", show_envvar=True,
                       help="Rasterizer: GL on an NVIDIA GPU (auto), Skia on the CPU, or GL on any EGL (gl).")


_ENCODER = click.option("--encoder", type=click.Choice(ENCODER_KINDS), default="auto", show_default=True,
                        envvar="REELFARM_ENCODER", show_envvar=True,
                        help="Encoder: NVENC where a session opens (auto), x264, or NVENC only (refused where "
                             "it cannot be had).")


@click.command("render", epilog="\b\nA video stored on a reelfarm server: reelfarm videos render VIDEO_ID")
@click.argument("doc_path", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="File to write.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Aspect ratio (default: the doc's).")
@click.option("--resolution", type=_RESOLUTION, default=1080, show_default=True,
              help="Short side in pixels (the API offers 720, 1080, 2160).")
@click.option("--fps", type=_FPS, help="Frame rate (default: the doc's; the API offers 24, 30, 60).")
@click.option("--container", type=click.Choice(CONTAINERS), default="mp4", show_default=True,
              help="mp4, gif (one palette, no sound) or webm (VP9 and Opus).")
@click.option("--transparent", is_flag=True, help="With --container webm: nothing behind scenes without a background.")
@click.option("--workers", type=int, default=None, help="Processes (default: one per core).")
@click.option("--assets", "assets_dir", type=click.Path(file_okay=False), help="Root of asset keys.")
@click.option("--poster", type=click.Path(dir_okay=False), help="Also write a JPEG poster here.")
@_RASTER
@_ENCODER
def render_command(doc_path: str, output: str, fmt: str | None, resolution: int, fps: int | None,
                   container: str, transparent: bool, workers: int | None, assets_dir: str | None,
                   poster: str | None, raster: str, encoder: str) -> None:
    """Render a VideoDoc to an H.264 MP4 (or a GIF, a WebM) with a progress bar."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from reelfarm.renderer.backends import choose_encoder
    from reelfarm.renderer.render import render_video
    from reelfarm.renderer.stills import write_poster

    problems = container_problems(container, transparent)
    if problems:
        raise click.UsageError("; ".join(p.message for p in problems))
    try:
        family = choose_encoder("x264" if container != "mp4" else encoder)  # once, before drawing
    except RendererError as exc:
        raise click.ClickException(str(exc)) from exc
    doc = _check(_load_doc(doc_path))
    spec = _spec(doc, fmt, resolution, fps)
    assets = _assets_for(doc_path, assets_dir)
    with Progress(TextColumn("rendering"), BarColumn(), TextColumn("{task.completed}/{task.total} frames"),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task("render", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
        try:
            stats = render_video(doc, output, spec, workers=workers, assets=assets, progress=update,
                                 raster=raster, encoder=family, container=container, transparent=transparent)
        except RendererError as exc:
            raise click.ClickException(str(exc)) from exc
    if poster:
        write_poster(doc, poster, spec, assets, raster=raster)
    click.echo(f"wrote {output}: {stats.width}x{stats.height} {stats.fps} fps, {stats.frames} frames, "
               f"{stats.bytes / 1e6:.1f} MB in {stats.seconds:.2f} s = {stats.frames_per_second:.1f} frames/s "
               f"({family.family if container != 'webm' else 'vp9'})")


@click.command("still")
@click.argument("doc_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--time", "t", type=float, default=0.0, show_default=True, help="Seconds into the video.")
@click.option("--format", "fmt", type=click.Choice(FORMATS))
@click.option("--resolution", type=_RESOLUTION, default=1080, show_default=True, help="Short side in pixels.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="PNG to write.")
@click.option("--assets", "assets_dir", type=click.Path(file_okay=False))
@_RASTER
def still_command(doc_path: str, t: float, fmt: str | None, resolution: int, output: str,
                  assets_dir: str | None, raster: str) -> None:
    """Render one frame to a PNG."""
    from reelfarm.renderer.stills import render_still_png

    doc = _check(_load_doc(doc_path))
    if not 0 <= t <= doc.duration:
        raise click.BadParameter(f"must be within 0..{doc.duration:g}", param_hint="--time")
    try:
        png = render_still_png(doc, t, _spec(doc, fmt, resolution, None), _assets_for(doc_path, assets_dir),
                                        raster)
    except RendererError as exc:
        raise click.ClickException(str(exc)) from exc
    Path(output).write_bytes(png)
    click.echo(f"wrote {output}")


@click.command("story")
@click.argument("story_id", required=False)
@click.option("--list", "list_", is_flag=True, help="List the built-in stories, one per line.")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE", help="A field value (repeatable).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=DEFAULT_FORMAT, show_default=True)
@click.option("--duration", type=float, help="Seconds (default: the story's).")
@click.option("--brand", "brand_path", type=click.Path(exists=True, dir_okay=False), help="Brand tokens JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Where to write the VideoDoc.")
def story_command(story_id: str | None, list_: bool, fields: tuple[str, ...], fmt: str, duration: float | None,
                  brand_path: str | None, output: str | None) -> None:
    """List stories, or build one into a VideoDoc JSON file."""
    from reelfarm.studio.stories import get_story, list_stories

    if list_ or not story_id:
        for story in list_stories():
            click.echo(f"{story.id}\t{story.category}\t{story.default_duration_sec:g}s\t{story.name}")
        return
    try:
        story = get_story(story_id)
    except KeyError as exc:
        raise click.ClickException(f"no story {story_id!r}; see `reelfarm story --list`") from exc
    values = _parse_fields(fields, story.fields)
    from reelfarm.renderer.tokens import NEUTRAL_BRAND

    brand = json.loads(Path(brand_path).read_text("utf-8")) if brand_path else NEUTRAL_BRAND
    try:
        doc = story.build(values, brand, fmt, duration)
    except Exception as exc:  # the story's own validation error carries the details
        details = getattr(exc, "details", None) or getattr(exc, "problems", None)
        for d in details or []:
            click.echo(f"error {d}", err=True)
        raise click.ClickException(str(exc)) from exc
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if output:
        Path(output).write_text(text + "\n", "utf-8")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


def _parse_fields(pairs: tuple[str, ...], schema: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    props = schema.get("properties", {})
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--field")
        kind = props.get(key, {}).get("type")
        if kind in ("integer", "number", "boolean", "array", "object"):
            try:
                values[key] = json.loads(raw)
            except ValueError as exc:
                if kind == "array":
                    values[key] = [item.strip() for item in raw.split("|")]
                    continue
                raise click.BadParameter(f"{key}: {raw!r} is not a valid {kind}", param_hint="--field") from exc
        else:
            values[key] = raw
    return values


COMMANDS = (lint_command, render_command, still_command, story_command)
