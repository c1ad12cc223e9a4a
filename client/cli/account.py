"""Client commands around the account: login, whoami, stories, brand kits, brand extraction, jobs,
renders and webhooks. Video commands are in ``reelfarm.client.cli.videos``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from reelfarm.client import config
from reelfarm.client.cli.common import EXIT_CODES_HELP, Session, api_command, table, writable_target
from reelfarm.client.cli.progress import download, follow_job, follow_render, render_state
from reelfarm.client.errors import ReelfarmError, TaskFailed, WaitTimeout


def _epilog(*examples: str) -> str:
    return "\b\nExamples:\n" + "\n".join(f"  {e}" for e in examples) + "\n\n" + EXIT_CODES_HELP


@click.command("login", epilog=_epilog("reelfarm login --api-url https://reelfarm.example.com",
                                       "REELFARM_API_KEY=rf_live_... reelfarm login --api-url http://127.0.0.1:8000"))
@api_command
def login_command(session: Session) -> None:
    """Check an API key and save it with the URL for later commands (file mode 0600)."""
    if not session.api_key:
        session.api_key = click.prompt("API key", hide_input=True).strip()
    me = session.client.me()
    path = config.save(session.client.api_key, session.client.base_url)
    ws = me.workspace
    session.emit({"workspace": ws, "api_url": session.client.base_url, "saved_to": str(path)},
                 f"Logged in to workspace {ws['name']!r} ({ws['plan']}, {ws['credits']} credits) at "
                 f"{session.client.base_url}; saved to {path}")


@click.command("whoami", epilog=_epilog("reelfarm whoami", "reelfarm whoami --json | jq .workspace.credits"))
@api_command
def whoami_command(session: Session) -> None:
    """Show the key's workspace, plan, credits and rate limit."""
    me = session.client.me()
    ws, key = me.workspace, me.api_key
    session.emit(me, f"workspace  {ws['name']} ({ws['id']})\nplan       {ws['plan']}\ncredits    {ws['credits']}\n"
                     f"rate limit {me.rate_limit.get('policy', '')}\nkey        {key.get('prefix', '')}...\n"
                     f"api url    {session.client.base_url}")


@click.group("stories")
def stories_group() -> None:
    """Built-in stories (templates with typed fields) on the API."""


@stories_group.command("list", epilog=_epilog("reelfarm stories list"))
@api_command
def stories_list(session: Session) -> None:
    """List the stories: id, name, category, default duration."""
    stories = session.client.stories.list()
    session.emit(stories, table(["id", "name", "category", "seconds"],
                                [(s.id, s.name, s.category, f"{s.default_duration_sec:g}") for s in stories]))


@stories_group.command("show", epilog=_epilog("reelfarm stories show quote", "reelfarm stories show quote --json"))
@click.argument("story_id")
@api_command
def stories_show(session: Session, story_id: str) -> None:
    """Show a story and its fields (each one a --field of `reelfarm videos create`)."""
    try:
        story = session.client.stories.get(story_id)
    except KeyError:
        raise click.BadParameter(f"no story {story_id!r}; see `reelfarm stories list`", param_hint="STORY_ID")
    props = story.fields.get("properties", {})
    required = set(story.fields.get("required", []))
    rows = [(name, p.get("type"), "yes" if name in required else "", p.get("title", ""), json.dumps(p.get("default")))
            for name, p in props.items()]

    def draw() -> None:
        click.echo(f"{story.id}: {story.name} ({story.category}, {story.default_duration_sec:g} s)")
        click.echo(f"{story.description}\n")
        table(["field", "type", "required", "title", "default"], rows)()

    session.emit(story, draw)


@click.group("brand-kits")
def brand_kits_group() -> None:
    """The workspace's brand kits."""


@brand_kits_group.command("list", epilog=_epilog("reelfarm brand-kits list"))
@api_command
def brand_kits_list(session: Session) -> None:
    """List brand kits, default first."""
    kits = session.client.brand_kits.list()
    session.emit(kits, table(["id", "name", "default", "source", "primary"],
                             [(k.id, k.name, "*" if k.is_default else "", k.source_url,
                               k.tokens.get("colors", {}).get("primary")) for k in kits]))


@click.group("brand")
def brand_group() -> None:
    """Brand extraction from a website."""


@brand_group.command("extract", epilog=_epilog("reelfarm brand extract example.com --wait"))
@click.argument("url")
@click.option("--wait", is_flag=True, help="Wait for the job and print the new brand kit.")
@click.option("--timeout", type=float, default=300, show_default=True, help="Seconds to wait.")
@api_command
def brand_extract(session: Session, url: str, wait: bool, timeout: float) -> None:
    """Extract a brand kit from URL (a job; --wait follows it)."""
    job = session.client.brand.extract(url)
    if wait:
        job = follow_job(session, job, timeout)
        kit = session.client.brand_kits.get(job.result["brand_kit_id"]) if job.result else None
        session.emit(kit or job, f"brand kit {kit.id} {kit.name!r}" if kit else f"job {job.id} {job.status}")
        return
    session.emit(job, f"job {job.id} {job.status} (reelfarm jobs wait {job.id})")


@click.group("jobs")
def jobs_group() -> None:
    """Asynchronous jobs (brand extraction, generation, translation, stills)."""


def _job_text(job: Any) -> str:
    text = f"job {job.id} {job.kind} {job.status} stage={job.stage} progress={job.progress:.0%}"
    if job.error:
        text += f"\nerror: {job.error}"
    if job.result:
        text += "\nresult: " + json.dumps(job.result, indent=2)
    return text


@jobs_group.command("show", epilog=_epilog("reelfarm jobs show JOB_ID --json"))
@click.argument("job_id")
@api_command
def jobs_show(session: Session, job_id: str) -> None:
    """Show a job's status, stage, progress and result."""
    job = session.client.jobs.get(job_id)
    session.emit(job, _job_text(job))


@jobs_group.command("wait", epilog=_epilog("reelfarm jobs wait JOB_ID --timeout 120"))
@click.argument("job_id")
@click.option("--timeout", type=float, default=600, show_default=True, help="Seconds to wait.")
@api_command
def jobs_wait(session: Session, job_id: str, timeout: float) -> None:
    """Wait for a job to finish, with a progress bar; exit 5 if it failed."""
    job = follow_job(session, session.client.jobs.get(job_id), timeout)
    session.emit(job, _job_text(job))


@click.group("renders")
def renders_group() -> None:
    """MP4 renders (start one with `reelfarm videos render`)."""


@renders_group.command("show", epilog=_epilog("reelfarm renders show RENDER_ID"))
@click.argument("render_id")
@api_command
def renders_show(session: Session, render_id: str) -> None:
    """Show a render's status, progress, place in the queue while it waits, URLs, and what it cost."""
    r = session.client.renders.get(render_id)
    session.emit(r, render_details(r))


def render_details(r: Any) -> str:
    """A render as ``renders show`` prints it: only the URLs it has; until its MP4 exists, what to run."""
    low = " (low priority)" if r.priority == "low" else ""
    lines = [f"render {r.id} {r.format} {r.resolution}p {r.fps} fps {r.status}{low} {r.progress:.0%}"]
    lines += [render_state(r)] if r.queue is not None else []
    lines += [f"{name}: {value}" for name, value in (("url", r.url), ("poster", r.poster_url),
                                                       ("stream", r.stream_url),
                                                       ("captions", getattr(r, "captions_url", None)),
                                                       ("error", r.error)) if value]
    if getattr(r, "cost", None) is not None:
        lines.append(cost_line(r.cost))
    if r.url is None and not r.done:
        lines.append(f"no MP4 yet: `reelfarm renders wait {r.id} --download FILE` waits for it and saves it")
    return "\n".join(lines)


def cost_line(cost: Any) -> str:
    """``cost: 12.4 CPU s, 0.8 GPU s, 13.0 s wall, 150 frames rendered, 30 reused, 2.1 MB stored, 310 MB peak memory``."""
    gpu = f", {cost.gpu_sec:.1f} GPU s" if cost.gpu_sec is not None else ""
    return (f"cost: {cost.cpu_sec:.1f} CPU s{gpu}, {cost.wall_sec:.1f} s wall, {cost.frames_rendered} frames rendered, "
            f"{cost.frames_reused} reused, {cost.storage_bytes / 1e6:.1f} MB stored, "
            f"{cost.peak_memory_bytes / 1e6:.0f} MB peak memory")


@renders_group.command("watch", epilog=_epilog("reelfarm renders watch RENDER_ID", "reelfarm renders watch RENDER_ID --open"))
@click.argument("render_id")
@click.option("--open", "open_it", is_flag=True, help="Open the stream in this machine's player or browser.")
@click.option("--timeout", type=float, default=900, show_default=True, help="Seconds to wait for the first chunk.")
@api_command
def renders_watch(session: Session, render_id: str, timeout: float, open_it: bool) -> None:
    """Print a render's stream URL (HLS) as soon as its first chunk is stored: the part already
    rendered plays while the rest renders. Exit 4 if none comes within --timeout, 5 if the render
    ends with nothing to watch."""
    import time

    deadline = time.monotonic() + timeout
    r = session.client.renders.get(render_id)
    while r.stream_url is None and not r.done and time.monotonic() < deadline:
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        r = session.client.renders.get(render_id)
    if r.stream_url is None and r.done:
        raise TaskFailed(f"render {r.id} {r.status} with nothing to watch", r)
    if r.stream_url is None:
        raise WaitTimeout(f"render {r.id} stored no chunk within {timeout:g} s", r)
    if open_it:
        click.launch(r.stream_url)
    session.emit(r, r.stream_url)


@renders_group.command("wait", epilog=_epilog("reelfarm renders wait RENDER_ID --download out.mp4"))
@click.argument("render_id")
@click.option("--timeout", type=float, default=900, show_default=True, help="Seconds to wait.")
@click.option("--download", "target", type=click.Path(dir_okay=False, path_type=Path), callback=writable_target,
              help="Save the MP4 here (its folder must exist).")
@api_command
def renders_wait(session: Session, render_id: str, timeout: float, target: Path | None) -> None:
    """Wait for a render with a progress bar, then optionally download it."""
    r = follow_render(session, session.client.renders.get(render_id), timeout)
    if target is not None and r.url:
        download(session, r.url, target)
    session.emit(r, f"render {r.id} {r.status}: {target or r.url}")


@renders_group.command("download", epilog=_epilog("reelfarm renders download RENDER_ID",
                                                  "reelfarm renders download RENDER_ID -o launch-9x16.mp4"))
@click.argument("render_id")
@click.option("--output", "-o", "target", type=click.Path(dir_okay=False, path_type=Path), callback=writable_target,
              help="Where to save the MP4 (default: RENDER_ID.mp4 here; its folder must exist).")
@api_command
def renders_download(session: Session, render_id: str, target: Path | None) -> None:
    """Save a finished render's MP4 (its URL signed afresh). A render not finished yet is exit 2
    (`renders wait --download` waits for it first); a failed or canceled one exit 5."""
    r = session.client.renders.get(render_id)
    if r.url is None and r.status in ("failed", "canceled"):
        raise TaskFailed(f"render {r.id} {r.status}: it has no MP4" + (f" ({r.error})" if r.error else ""), r)
    if r.url is None:
        raise ReelfarmError(f"render {r.id} is {r.status}, with no MP4 yet: `reelfarm renders wait {r.id} "
                            "--download FILE` waits for it and saves it")
    path = target or Path(f"{r.id}.mp4")
    if target is None:  # the default, checked as --output is
        writable_target(click.get_current_context(), click.get_current_context().command.params[0], path)
    path = download(session, r.url, path)
    session.emit({**r.raw, "path": str(path)}, f"render {r.id} saved to {path}")


@click.group("webhooks")
def webhooks_group() -> None:
    """Webhook endpoints (events signed per Standard Webhooks)."""


@webhooks_group.command("create", epilog=_epilog(
    "reelfarm webhooks create https://hooks.example.com/rf --event render.completed --event video.generated"))
@click.argument("url")
@click.option("--event", "events", multiple=True, help="Event kind to receive (repeatable; default every kind).")
@click.option("--description", help="A note for yourself.")
@api_command
def webhooks_create(session: Session, url: str, events: tuple[str, ...], description: str | None) -> None:
    """Register an endpoint; prints its signing secret once."""
    hook = session.client.webhooks.create(url, events=events or None, description=description)
    session.emit(hook, f"webhook {hook.id} -> {hook.url}\nsecret (shown once): {hook.secret}")


@webhooks_group.command("list", epilog=_epilog("reelfarm webhooks list"))
@api_command
def webhooks_list(session: Session) -> None:
    """List webhook endpoints."""
    hooks = session.client.webhooks.list()
    session.emit(hooks, table(["id", "url", "enabled", "events"],
                              [(h.id, h.url, h.enabled, ",".join(h.events) or "*") for h in hooks]))


@webhooks_group.command("deliveries", epilog=_epilog("reelfarm webhooks deliveries WEBHOOK_ID"))
@click.argument("webhook_id")
@api_command
def webhooks_deliveries(session: Session, webhook_id: str) -> None:
    """List delivery attempts of an endpoint."""
    rows = session.client.webhooks.deliveries(webhook_id)
    session.emit(rows, table(["event", "type", "attempt", "state", "status"],
                             [(d["event_id"], d["event_type"], d["attempt"], d["state"], d["status_code"])
                              for d in rows]))


@webhooks_group.command("test", epilog=_epilog("reelfarm webhooks test WEBHOOK_ID"))
@click.argument("webhook_id")
@api_command
def webhooks_test(session: Session, webhook_id: str) -> None:
    """Send a `webhook.test` event to an endpoint."""
    answer = session.client.webhooks.test(webhook_id)
    session.emit(answer, "test event queued")


@webhooks_group.command("delete", epilog=_epilog("reelfarm webhooks delete WEBHOOK_ID"))
@click.argument("webhook_id")
@api_command
def webhooks_delete(session: Session, webhook_id: str) -> None:
    """Delete an endpoint."""
    session.client.webhooks.delete(webhook_id)
    session.emit({"deleted": webhook_id}, f"deleted {webhook_id}")


COMMANDS = (login_command, whoami_command, stories_group, brand_kits_group, brand_group, jobs_group, renders_group,
            webhooks_group)
