"""``reelfarm assets ...``: the workspace's media library on the API (images, sounds and videos a
VideoDoc names by key, a story's field by id): upload a file (with a byte-counting bar; a large one
by a presigned URL where the server offers it), add one from an address, list, show, delete."""
from __future__ import annotations

from pathlib import Path

import click

from reelfarm.client.cli.account import _epilog
from reelfarm.client.cli.common import Session, api_command, table
from reelfarm.client.cli.progress import upload
from reelfarm.client.models import Asset


@click.group("assets")
def assets_group() -> None:
    """The media library: images (PNG, JPEG, WebP, SVG), sounds (MP3, AAC/M4A, WAV, Ogg), videos
    (MP4, MOV, WebM) and captions (SRT, WebVTT).

    A VideoDoc names an asset by its key (`assets[].key`, `brand.logo.key`); a story's image or
    video field by its id (`videos create --field clip=ASSET_ID`, or `--field clip=@FILE`).
    """


def _size(asset: Asset) -> str:
    if asset.kind == "image":
        return f"{asset.width}x{asset.height}"
    if asset.kind == "video":
        rate = f" {asset.fps:g} fps" if asset.fps else ""
        sound = "" if asset.has_audio is None else (" with sound" if asset.has_audio else " silent")
        return f"{asset.width}x{asset.height} {asset.duration_sec:.1f} s{rate}{sound}"
    if asset.kind == "captions":
        return f"{asset.cues} cues to {asset.duration_sec:.1f} s"
    return f"{asset.duration_sec:.1f} s" if asset.duration_sec is not None else ""


def _asset_text(asset: Asset) -> str:
    return (f"asset {asset.id} {asset.kind} {asset.content_type} {asset.bytes} bytes {_size(asset)}\n"
            f"name {asset.name or '-'}\nkey {asset.key}\nurl {asset.url}")


@assets_group.command("upload", epilog=_epilog("reelfarm assets upload logo.png",
                                               "reelfarm assets upload intro.mp3 --json",
                                               "reelfarm assets upload demo.mp4"))
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@api_command
def assets_upload(session: Session, file: Path) -> None:
    """Upload an image, a sound or a video; prints the asset (the same bytes again: the one already stored)."""
    asset = upload(session, file)
    session.emit(asset, _asset_text(asset))


@assets_group.command("from-url", epilog=_epilog("reelfarm assets from-url https://example.com/team.png"))
@click.argument("url")
@api_command
def assets_from_url(session: Session, url: str) -> None:
    """Have the server fetch an image, a sound or a video from a public address and store it."""
    asset = session.client.assets.from_url(url)
    session.emit(asset, _asset_text(asset))


@assets_group.command("list", epilog=_epilog("reelfarm assets list", "reelfarm assets list --kind audio --json",
                                             "reelfarm assets list --name logo"))
@click.option("--kind", type=click.Choice(["image", "audio", "video"]), help="Only images, sounds or videos.")
@click.option("--name", help="Only those whose name holds this text (any case).")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many (newest first).")
@api_command
def assets_list(session: Session, kind: str | None, name: str | None, limit: int | None) -> None:
    """List the workspace's assets, newest first."""
    found: list[Asset] = []
    for asset in session.client.assets.list(kind=kind, name=name, page_size=min(limit, 100) if limit else 100):
        found.append(asset)
        if limit and len(found) >= limit:
            break
    session.emit(found, table(["id", "name", "kind", "type", "bytes", "size", "key"],
                              [(a.id, a.name or "-", a.kind, a.content_type, a.bytes, _size(a), a.key) for a in found]))


@assets_group.command("rename", epilog=_epilog('reelfarm assets rename ASSET_ID "Team photo.png"'))
@click.argument("asset_id")
@click.argument("name")
@api_command
def assets_rename(session: Session, asset_id: str, name: str) -> None:
    """Give an asset a new name (its label: the key and the file stay)."""
    asset = session.client.assets.rename(asset_id, name)
    session.emit(asset, _asset_text(asset))


@assets_group.command("get", epilog=_epilog("reelfarm assets get ASSET_ID"))
@click.argument("asset_id")
@api_command
def assets_get(session: Session, asset_id: str) -> None:
    """Show an asset, with fresh signed URLs."""
    asset = session.client.assets.get(asset_id)
    session.emit(asset, _asset_text(asset))


@assets_group.command("delete", epilog=_epilog("reelfarm assets delete ASSET_ID"))
@click.argument("asset_id")
@api_command
def assets_delete(session: Session, asset_id: str) -> None:
    """Delete an asset (refused, exit 3, while a version or a brand kit names it)."""
    session.client.assets.delete(asset_id)
    session.emit({"deleted": asset_id}, f"deleted {asset_id}")


COMMANDS = (assets_group,)
