"""Progress bars for waits and downloads: rich on stderr, fed by the API's own progress figures.

A render's bar runs on ``Render.progress`` (frames done over frames total, from the farm), with its
place in the farm's queue beside it while chunks of it wait (``Render.queue``); a job's on
``Job.progress`` with its ``stage`` beside it; a download's (and an upload's) on bytes moved. With ``--json``
nothing is drawn and the same waits run silently.

Where stderr is no terminal (a pipe, a log) a bar would show nothing until the end, so a wait
prints a line each time its state changes (its status, stage, or whether it waits for the farm)
and a transfer a line as it starts and ends (``--progress lines``); ``--progress json`` prints the
same as JSON lines (``{"event": "state", ...}``, ``{"event": "transfer", ...}``).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from reelfarm.client.cli.common import Session
from reelfarm.client.errors import ReelfarmError
from reelfarm.client.models import Job, Render, RenderQueue


def _clock(at: datetime, now: datetime | None = None) -> str:
    """``at`` in local time: the time of day if it is today, else the date too."""
    local = at.astimezone()
    today = (now or datetime.now().astimezone()).astimezone().date()
    return f"{local:%H:%M:%S}" if local.date() == today else f"{local:%Y-%m-%d %H:%M:%S}"


def queue_position(queue: RenderQueue, now: datetime | None = None) -> str:
    """``1,234 frames ahead, starts ~12:03:04`` (local time; no estimate without recent farm throughput)."""
    text = f"{queue.frames_ahead:,} frames ahead"
    if queue.estimated_start_at is not None:
        text += f", starts ~{_clock(queue.estimated_start_at, now)}"
    return text


def render_state(render: Render, now: datetime | None = None) -> str:
    """A render's status, said as its place in the queue while some of it waits for the farm:
    ``waiting: 1,234 frames ahead, starts ~12:03:04`` (queued), ``running, 2 chunks waiting: ...``
    (partly dispatched), ``running, waiting for chunk 3 (its node stopped)`` while a chunk waits to
    be handed on, else the status; ``(progress may be behind)`` while the farm's store is out of reach."""
    stale = " (progress may be behind)" if render.progress_stale else ""
    if render.held_up is not None:
        return f"{render.status}, {render.held_up.message}{stale}"
    queue = render.queue
    if queue is None:
        return f"{render.status}{stale}"
    text = f"waiting: {queue_position(queue, now)}"
    if render.status != "queued":
        chunks = f"{queue.chunks_waiting:,} chunk{'' if queue.chunks_waiting == 1 else 's'}"
        text = f"{render.status}, {chunks} {text}"
    return text


def _progress(*, download: bool = False) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    columns: list[Any] = [TextColumn("{task.description}"), BarColumn()]
    columns += [DownloadColumn(), TransferSpeedColumn()] if download else [TaskProgressColumn(),
                                                                           TextColumn("{task.fields[extra]}")]
    return Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True))


def _state_key(state: Any) -> tuple[Any, ...]:
    """What a change of state is: status, stage, waiting for the farm or not, a chunk held up or not."""
    return (str(state.status), getattr(state, "stage", None), getattr(state, "queue", None) is not None,
            getattr(state, "held_up", None) is not None)


def _say(session: Session, event: dict[str, Any], text: str) -> None:
    """One progress line on stderr: ``text``, or ``event`` as JSON with ``--progress json``."""
    line = json.dumps(event, ensure_ascii=False) if session.progress_mode() == "json" else text
    click.echo(line, err=True)


def _follow(session: Session, label: str, wait: Callable[[Callable[[Any], None] | None], Any],
            extra: Callable[[Any], str]) -> Any:
    mode = session.progress_mode()
    if mode in ("lines", "json"):
        last: list[tuple[Any, ...]] = []

        def tell(state: Any) -> None:
            key = _state_key(state)
            if last and last[0] == key:
                return
            last[:] = [key]
            progress = min(1.0, float(state.progress))
            _say(session, {"event": "state", "what": label, "id": state.id, "status": str(state.status),
                           "stage": getattr(state, "stage", None), "progress": progress, "detail": extra(state)},
                 f"{label} {state.id}: {extra(state)} {progress:.0%}")

        return wait(tell)
    if mode != "bar":
        return wait(None)
    with _progress() as bars:
        task = bars.add_task(label, total=1.0, extra="")

        def update(state: Any) -> None:
            bars.update(task, completed=min(1.0, float(state.progress)), extra=extra(state))

        return wait(update)


def follow_render(session: Session, render: Render, timeout: float) -> Render:
    """Wait for a render with a bar; returns it succeeded (else ``TaskFailed`` / ``WaitTimeout``)."""
    label = f"render {render.format} {render.resolution}p"
    return _follow(session, label,
                   lambda update: session.client.renders.wait(render.id, timeout=timeout, on_progress=update),
                   render_state)


def follow_job(session: Session, job: Job, timeout: float) -> Job:
    return _follow(session, f"{job.kind} job",
                   lambda update: session.client.jobs.wait(job.id, timeout=timeout, on_progress=update),
                   lambda state: f"{state.status} {state.stage or ''}".strip())


def _transfer(session: Session, label: str, move: Callable[[], Any], size: Callable[[Any], int]) -> Any:
    """``move()`` told as a line when it starts and when it is done (``--progress lines``/``json``)."""
    _say(session, {"event": "transfer", "what": label, "status": "started"}, f"{label}: started")
    done = move()
    moved = size(done)
    _say(session, {"event": "transfer", "what": label, "status": "done", "bytes": moved},
         f"{label}: done, {moved:,} bytes")
    return done


def download(session: Session, url: str, path: Path, label: str | None = None) -> Path:
    """Stream a signed URL into ``path`` with a byte-counting bar; a file that cannot be written is
    an error naming it (exit 2), not a traceback."""
    try:
        if session.progress_mode() in ("lines", "json"):
            return _transfer(session, label or f"download {path.name}", lambda: session.client.download(url, path),
                             lambda saved: saved.stat().st_size)
        if not session.show_progress():
            return session.client.download(url, path)
        with _progress(download=True) as bars:
            task = bars.add_task(label or f"download {path.name}", total=None)

            def update(done: int, total: int | None) -> None:
                bars.update(task, completed=done, total=total)

            return session.client.download(url, path, update)
    except OSError as exc:
        raise ReelfarmError(f"cannot save {path}: {exc.strerror or exc}") from exc


def upload(session: Session, path: Path) -> Any:
    """Upload a file to the media library with a byte-counting bar; the Asset. A file that cannot
    be read is an error naming it (exit 2), not a traceback."""
    try:
        if session.progress_mode() in ("lines", "json"):
            return _transfer(session, f"upload {path.name}", lambda: session.client.assets.upload(path),
                             lambda asset: path.stat().st_size)
        if not session.show_progress():
            return session.client.assets.upload(path)
        with _progress(download=True) as bars:
            task = bars.add_task(f"upload {path.name}", total=None)

            def update(done: int, total: int | None) -> None:
                bars.update(task, completed=done, total=total)

            return session.client.assets.upload(path, on_progress=update)
    except OSError as exc:
        raise ReelfarmError(f"cannot read {path}: {exc.strerror or exc}") from exc
