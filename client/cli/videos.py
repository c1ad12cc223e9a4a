"""``reelfarm videos ...``: create, read, edit and render videos on the API.

``reelfarm videos render VIDEO_ID`` renders on the server (credits, the farm); the top-level
``reelfarm render DOC.json`` of the server distribution renders a local VideoDoc file on this
machine. Where that command is installed, each one's help names the other; ``reelfarm-client``
alone does not have it, and its help does not name it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from reelfarm.client.cli.account import _epilog
from reelfarm.client.cli.common import Session, api_command, parse_pairs, table, writable_target
from reelfarm.client.cli.progress import download, follow_job, follow_render, queue_position, render_state, upload
from reelfarm.client.models import Render, RenderEstimate, Video

FORMATS = ("16:9", "9:16", "1:1", "4:5")
RESOLUTIONS = click.Choice(["720", "1080", "2160"])
FPS = click.Choice(["24", "30", "60"])
PRIORITIES = click.Choice(["normal", "low"])
EXPECTED_VERSION_HELP = ("Change the video only if its current version is still N (as `videos show` printed it); "
                         "otherwise nothing is saved and the error names the current version.")
FIELD_HELP = ("A story field (repeatable). An image or video field takes the id of an asset of the media library, "
              "or @FILE: the file is uploaded first and its id used; so do `soundtrack` and `captions` (an SRT or "
              "WebVTT file: `captions=@subs.srt`), or their JSON object (`captions={\"asset_id\": ID, "
              "\"style\": \"inverse\"}`).")
_COMMON_UPLOADS = ("soundtrack", "captions")  # fields every story has whose value is {"asset_id": ..., ...}
_AN_ASSET_ID = "00000000-0000-4000-8000-000000000000"


def _takes_upload(prop: dict[str, Any]) -> bool:
    """Whether a story field takes the id of an upload (image and video fields): its pattern accepts one."""
    pattern = prop.get("pattern")
    return isinstance(pattern, str) and re.search(pattern, _AN_ASSET_ID) is not None


def with_uploads(session: Session, values: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    """``values`` with each ``@FILE`` of a field that takes an upload replaced by the id of that
    file, uploaded to the media library first (with its progress bar; a large one by a presigned
    URL where the server offers it). Only such fields: ``@`` starts no image address or asset id,
    while a text field may well begin with one (a handle)."""
    props = (schema or {}).get("properties", {})
    found = dict(values)
    for key, value in values.items():
        common = key in _COMMON_UPLOADS and isinstance(value, str)
        if common and not value.startswith("@"):
            found[key] = {"asset_id": value}  # an asset id alone
            continue
        if not (isinstance(value, str) and value.startswith("@") and (common or _takes_upload(props.get(key, {})))):
            continue
        path = Path(value[1:]).expanduser()
        if not path.is_file():
            raise click.BadParameter(f"{key}: no file {str(path)!r} to upload", param_hint="--field")
        asset_id = upload(session, path).id
        found[key] = {"asset_id": asset_id} if common else asset_id
    return found


LOCAL_RENDER_NOTE = "`reelfarm render DOC.json` renders a local VideoDoc file on this machine instead."


def _has_local_render(ctx: click.Context) -> bool:
    """Whether this ``reelfarm`` has the local ``render`` command (the server distribution's)."""
    root = ctx.find_root().command
    return isinstance(root, click.Group) and root.get_command(ctx, "render") is not None


class _NamesLocalRender(click.Command):
    """A command whose help names ``reelfarm render`` only where this install has it."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        if _has_local_render(ctx):
            formatter.write_paragraph()
            formatter.write_text(LOCAL_RENDER_NOTE)


class _VideosGroup(_NamesLocalRender, click.Group):
    pass


@click.group("videos", cls=_VideosGroup)
def videos_group() -> None:
    """Videos on the API: create, list, edit, version, render (MP4 on the server), stills and variants."""


def _video_text(v: Video) -> str:
    version = v.current_version
    text = (f"video {v.id} {v.title!r}\nstatus {v.status}  story {v.story_id}  format {v.default_format}  "
            f"duration {v.duration_sec}s")
    if version is not None:
        text += f"\nversion {version.number} ({version.source})"
        text += "".join(f"\n  lint {w.get('field')}: {w.get('message')}" for w in version.lint)
    if v.job is not None:
        text += f"\njob {v.job.id} {v.job.status} {v.job.stage or ''}"
    return text


@videos_group.command("create", epilog=_epilog(
    "reelfarm videos create --story quote --field quote='Ship it' --format 9:16",
    "reelfarm videos create --story product_launch --field clip=@demo.mp4 --format 9:16",
    "reelfarm videos create --brief 'Our spring sale: 20% off all plans' --wait --json"))
@click.option("--story", "story_id", help="Story id (see `reelfarm stories list`); built at once.")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE", help=FIELD_HELP)
@click.option("--brief", help="What the video should say; written by the generator (a job).")
@click.option("--title", help="Title of the video.")
@click.option("--brand-kit", "brand_kit_id", help="Brand kit id (default: the workspace's default kit).")
@click.option("--url", help="Website to extract the brand from first.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Main aspect ratio (default 16:9).")
@click.option("--duration", type=float, help="Seconds (6 to 60).")
@click.option("--locale", help="BCP 47 language tag of the video.")
@click.option("--wait", is_flag=True, help="Wait until a generated video is ready.")
@click.option("--timeout", type=float, default=600, show_default=True, help="Seconds to wait.")
@api_command
def videos_create(session: Session, story_id: str | None, fields: tuple[str, ...], brief: str | None,
                  title: str | None, brand_kit_id: str | None, url: str | None, fmt: str | None,
                  duration: float | None, locale: str | None, wait: bool, timeout: float) -> None:
    """Create a video from a story (--story, --field) or from a brief (--brief)."""
    if fields and not story_id:
        raise click.UsageError("--field needs --story")
    if not (story_id or brief or url):
        raise click.UsageError("give --story ID (with --field KEY=VALUE ...) or --brief TEXT")
    values = None
    if fields:
        schema = session.client.stories.get(story_id).fields
        values = with_uploads(session, parse_pairs(fields, schema), schema)
    video = session.client.videos.create(story_id=story_id, fields=values, brief=brief, title=title,
                                         brand_kit_id=brand_kit_id, url=url, format=fmt, duration_sec=duration,
                                         locale=locale)
    if wait and video.status == "generating":
        if video.job is not None:
            follow_job(session, video.job, timeout)
        video = session.client.videos.wait(video.id, timeout=timeout)
    session.emit(video, _video_text(video))


@videos_group.command("list", epilog=_epilog("reelfarm videos list --limit 50", "reelfarm videos list --json"))
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True, help="How many, newest first.")
@click.option("--quiet", "-q", is_flag=True, help="Only the ids, one per line (for scripts).")
@api_command
def videos_list(session: Session, limit: int, quiet: bool) -> None:
    """List videos, newest first (pages followed as needed)."""
    videos = []
    for video in session.client.videos.list(page_size=min(limit, 100)):
        videos.append(video)
        if len(videos) >= limit:
            break
    if quiet and not session.as_json:
        click.echo("\n".join(v.id for v in videos))
        return
    session.emit(videos, table(["id", "title", "status", "format", "seconds", "version"],
                               [(v.id, v.title, v.status, v.default_format, v.duration_sec,
                                 v.current_version.number if v.current_version else "") for v in videos]))


@videos_group.command("show", epilog=_epilog("reelfarm videos show VIDEO_ID", "reelfarm videos show VIDEO_ID --json"))
@click.argument("video_id")
@api_command
def videos_show(session: Session, video_id: str) -> None:
    """Show a video and its current version (--json includes the full doc)."""
    video = session.client.videos.get(video_id)
    session.emit(video, _video_text(video))


@videos_group.command("patch", epilog=_epilog("reelfarm videos patch VIDEO_ID --field headline='New headline'",
                                              "reelfarm videos patch VIDEO_ID --doc edited.json --expected-version 4"))
@click.argument("video_id")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE", help="A story field to change (repeatable); "
              "an image or video field takes @FILE, uploaded first.")
@click.option("--doc", "doc_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A complete VideoDoc JSON file.")
@click.option("--title", help="Rename the video.")
@click.option("--note", help="Note for the version history.")
@click.option("--expected-version", type=click.IntRange(1), metavar="N", help=EXPECTED_VERSION_HELP)
@api_command
def videos_patch(session: Session, video_id: str, fields: tuple[str, ...], doc_path: Path | None,
                 title: str | None, note: str | None, expected_version: int | None) -> None:
    """Edit a video: each change of fields or doc is a new version (none when nothing changes).

    With --field the video is read first (for its story) and changed only if no other version is
    saved in between; otherwise the change is refused (exit 3, version_conflict) and nothing is saved.
    """
    if fields and doc_path:
        raise click.UsageError("give --field or --doc, not both")
    if not (fields or doc_path or title):
        raise click.UsageError("nothing to change: give --field, --doc or --title")
    values = None
    target: str | Video = video_id
    if fields:
        read = target = session.client.videos.get(video_id)
        schema = session.client.stories.get(read.story_id).fields if read.story_id else None
        values = with_uploads(session, parse_pairs(fields, schema), schema)
    doc = json.loads(doc_path.read_text("utf-8")) if doc_path else None
    video = session.client.videos.update(target, fields=values, doc=doc, title=title, note=note,
                                         expected_version=expected_version)
    session.emit(video, _video_text(video))


@videos_group.command("archive", epilog=_epilog("reelfarm videos archive VIDEO_ID"))
@click.argument("video_id")
@api_command
def videos_archive(session: Session, video_id: str) -> None:
    """Archive a video (it stays readable; it can no longer be edited or rendered)."""
    video = session.client.videos.archive(video_id)
    session.emit(video, f"video {video.id} {video.status}")


@videos_group.command("versions", epilog=_epilog("reelfarm videos versions VIDEO_ID"))
@click.argument("video_id")
@api_command
def videos_versions(session: Session, video_id: str) -> None:
    """List a video's versions, oldest first."""
    versions = session.client.videos.versions(video_id)
    session.emit(versions, table(["number", "source", "created", "note"],
                                 [(v.number, v.source, v.created_at, v.note) for v in versions]))


@videos_group.command("restore", epilog=_epilog("reelfarm videos restore VIDEO_ID 2",
                                                "reelfarm videos restore VIDEO_ID 2 --expected-version 5"))
@click.argument("video_id")
@click.argument("number", type=click.IntRange(1))
@click.option("--expected-version", type=click.IntRange(1), metavar="N", help=EXPECTED_VERSION_HELP)
@api_command
def videos_restore(session: Session, video_id: str, number: int, expected_version: int | None) -> None:
    """Make an old version current again (as a new version)."""
    video = session.client.videos.restore(video_id, number, expected_version=expected_version)
    session.emit(video, _video_text(video))


@videos_group.command("render", cls=_NamesLocalRender, epilog=_epilog(
    "reelfarm videos render VIDEO_ID --format 9:16 --resolution 1080 --download out.mp4",
    "reelfarm videos render VIDEO_ID --no-wait --json",
    "reelfarm videos render VIDEO_ID --priority low --no-wait",
    "reelfarm videos render VIDEO_ID --container gif --resolution 720 --download out.gif",
    "reelfarm videos render VIDEO_ID --container webm --transparent --download out.webm"))
@click.argument("video_id")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Aspect ratio (default: the video's).")
@click.option("--resolution", type=RESOLUTIONS, help="Short side in pixels (default 1080).")
@click.option("--fps", type=FPS, help="Frame rate (default: the video's).")
@click.option("--priority", type=PRIORITIES,
              help="normal (default), or low for batch work: it yields to the workspace's normal renders.")
@click.option("--container", type=click.Choice(("mp4", "gif", "webm")),
              help="The file: mp4 (default), gif (at most 720 px and 24 fps, no sound) or webm (VP9 and Opus).")
@click.option("--transparent", is_flag=True, default=False,
              help="With --container webm: no background where a scene has none (VP9 with alpha).")
@click.option("--pool", help="The node pool to draw it in (region=eu), one the workspace may use (default: its own).")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Follow the render with a progress bar (its place in the queue while it waits).")
@click.option("--download", "target", type=click.Path(dir_okay=False, path_type=Path), callback=writable_target,
              help="Save the file here (its folder must exist).")
@click.option("--timeout", type=float, default=900, show_default=True, help="Seconds to wait.")
@click.option("--estimate", is_flag=True, default=False,
              help="Only say what the render would cost (frames, CPU seconds, credits); render nothing.")
@api_command
def videos_render(session: Session, video_id: str, fmt: str | None, resolution: str | None, fps: str | None,
                  priority: str | None, container: str | None, transparent: bool, pool: str | None, wait: bool,
                  target: Path | None, timeout: float, estimate: bool) -> None:
    """Render VIDEO_ID to MP4 (or GIF, WebM) on the server (uses credits; a finished identical render is reused)."""
    fmt = fmt or session.client.videos.get(video_id).default_format
    if estimate:
        found = session.client.videos.estimate_render(video_id, format=fmt, resolution=resolution and int(resolution),
                                                      fps=fps and int(fps), container=container,
                                                      transparent=transparent)
        session.emit(found, estimate_text(found))
        return
    render = session.client.videos.render(video_id, format=fmt, resolution=resolution and int(resolution),
                                          fps=fps and int(fps), priority=priority, container=container,
                                          transparent=transparent, pool=pool)
    if wait or target is not None:
        render = follow_render(session, render, timeout)
    if target is not None and render.url:
        download(session, render.url, target)
    session.emit(render, render_text(render, target))


def estimate_text(estimate: RenderEstimate) -> str:
    """``estimate: 9.6 CPU s (8.1 s of tasks), 135 frames to render, 135 reused, 1 credit``, or the
    identical render that asking would answer, at 0."""
    if estimate.existing_render_id is not None:
        return f"estimate: 0 CPU s, 0 credits: render {estimate.existing_render_id} is the same (finished or running)"
    credits = f"{estimate.credits} credit{'s' if estimate.credits != 1 else ''}"
    return (f"estimate: {estimate.cpu_sec:.1f} CPU s ({estimate.wall_sec:.1f} s of tasks), "
            f"{estimate.frames_to_render} frames to render, {estimate.frames_reused} reused, {credits}")


def render_text(render: Render, target: Path | None = None) -> str:
    """``render ID STATUS: FILE-OR-URL``, with its priority if low and its place in the queue while it waits."""
    low = " (low priority)" if render.priority == "low" else ""
    text = f"render {render.id} {render.status}{low}: {target or render.url or ''}".rstrip().removesuffix(":")
    return text + (f"\n{render_state(render)}" if render.queue is not None else "")


@videos_group.command("stills", epilog=_epilog(
    "reelfarm videos stills VIDEO_ID --time 1.5 --time 3 --download stills/"))
@click.argument("video_id")
@click.option("--time", "times", type=float, multiple=True, required=True, help="Seconds into the video (1 to 20).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Aspect ratio (default: the video's).")
@click.option("--download", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="Save PNGs in this folder.")
@click.option("--timeout", type=float, default=300, show_default=True, help="Seconds to wait.")
@api_command
def videos_stills(session: Session, video_id: str, times: tuple[float, ...], fmt: str | None, folder: Path | None,
                  timeout: float) -> None:
    """Render PNG stills at the given times (waits for the job; signed URLs last 10 minutes)."""
    job = follow_job(session, session.client.videos.stills(video_id, times, format=fmt), timeout)
    stills: list[dict[str, Any]] = (job.result or {}).get("stills", [])
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        for still in stills:
            path = folder / f"{video_id}-{still['time']:g}s.png"
            download(session, still["url"], path)
            still["path"] = str(path)
    session.emit(stills, table(["time", "size", "file"], [(s["time"], f"{s['width']}x{s['height']}",
                                                           s.get("path", s["url"])) for s in stills]))


@videos_group.command("variants", epilog=_epilog(
    "reelfarm videos variants VIDEO_ID --format 16:9 --format 9:16 --resolution 720",
    "reelfarm videos variants VIDEO_ID --format 1:1 --locale es --json",
    "reelfarm videos variants VIDEO_ID --format 16:9 --format 9:16 --format 1:1 --priority low"))
@click.argument("video_id")
@click.option("--format", "formats", type=click.Choice(FORMATS), multiple=True, required=True,
              help="A format to render (repeatable).")
@click.option("--locale", "locales", multiple=True, help="A language for a translated copy (repeatable).")
@click.option("--resolution", type=RESOLUTIONS, help="Short side in pixels (default 1080).")
@click.option("--priority", type=PRIORITIES,
              help="normal (default), or low for a large set: its renders yield to the workspace's normal ones.")
@click.option("--wait", is_flag=True, help="Wait for every render.")
@click.option("--timeout", type=float, default=900, show_default=True, help="Seconds to wait for each.")
@api_command
def videos_variants(session: Session, video_id: str, formats: tuple[str, ...], locales: tuple[str, ...],
                    resolution: str | None, priority: str | None, wait: bool, timeout: float) -> None:
    """Render several formats at once; each --locale also starts a translated copy."""
    variants = session.client.videos.variants(video_id, formats, locales=locales or None,
                                              resolution=resolution and int(resolution), priority=priority)
    renders = [follow_render(session, r, timeout) for r in variants.renders] if wait else variants.renders

    def draw() -> None:
        table(["render", "format", "priority", "status", "waiting", "url"],
              [(r.id, r.format, r.priority, r.status, r.queue and queue_position(r.queue), r.url)
               for r in renders])()
        for copy in variants.translations:
            click.echo(f"translated copy {copy.id} ({copy.locale}) {copy.status}")

    session.emit({"renders": renders, "translations": variants.translations}, draw)


COMMANDS = (videos_group,)
