"""What every client command shares: connection options, ``--json``, output and exit codes.

Exit codes: 0 done; 2 a usage error (click's own, or no API key); 3 the API answered with an error
or could not be reached; 4 a wait ran past ``--timeout``; 5 the render or job ended failed or
canceled. With ``--json`` the answer (or the error envelope) is printed as JSON on stdout, and
progress bars are not drawn; without it, text and tables, and bars on stderr.

``--progress`` says how a wait, an upload or a download reports on stderr: ``bar`` (rich), ``lines``
(a line per change of state, for a log or a pipe), ``json`` (the same as JSON lines), ``none``;
``auto`` (the default) draws a bar on a terminal, prints lines when stderr is piped, and nothing
with ``--json``.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from reelfarm.client.errors import APIConnectionError, APIError, ReelfarmError, TaskFailed, WaitTimeout

F = TypeVar("F", bound=Callable[..., Any])
EXIT_USAGE, EXIT_API, EXIT_TIMEOUT, EXIT_FAILED = 2, 3, 4, 5
DEFAULT_CONNECT_TIMEOUT = 3.0
PROGRESS_MODES = ("auto", "bar", "lines", "json", "none")
EXIT_CODES_HELP = "Exit codes: 0 ok, 2 usage, 3 API error or unreachable, 4 timed out, 5 render/job failed."


@dataclass
class Session:
    """One command's connection and output settings."""

    api_key: str | None
    api_url: str | None
    as_json: bool
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    progress: str = "auto"
    _client: Any = field(default=None, repr=False)

    @property
    def client(self) -> Any:
        if self._client is None:
            import httpx

            from reelfarm.client.retry import Retry
            from reelfarm.client.sync import DEFAULT_TIMEOUT, Client

            # A server that refuses or does not answer is given connect_timeout in all (refusals retried
            # within it, a server restarting say); every other retry is the SDK's.
            timeout = httpx.Timeout(DEFAULT_TIMEOUT, connect=self.connect_timeout)
            self._client = Client(api_key=self.api_key, base_url=self.api_url, timeout=timeout,
                                  retry=Retry(connect_window=self.connect_timeout))
        return self._client

    def emit(self, data: Any, text: str | Callable[[], None]) -> None:
        """``data`` as JSON with ``--json``; otherwise ``text`` (or what the callable prints)."""
        if self.as_json:
            click.echo(json.dumps(to_json(data), indent=2, ensure_ascii=False))
        elif callable(text):
            text()
        else:
            click.echo(text)

    def progress_mode(self) -> str:
        """``bar``, ``lines``, ``json`` or ``none``: what ``--progress`` asked, ``auto`` decided here."""
        if self.progress != "auto":
            return self.progress
        if self.as_json:
            return "none"
        return "bar" if sys.stderr.isatty() else "lines"

    def show_progress(self) -> bool:
        return self.progress_mode() == "bar"


def writable_target(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A ``--download`` file checked before anything is asked of the API (a render is not paid for
    only to find nowhere to save it): its folder must exist and take new files."""
    if value is None:
        return None
    folder = value.parent
    if not folder.is_dir():
        raise click.BadParameter(f"{value}: the folder {folder} does not exist; create it first, or choose "
                                 "another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{value}: cannot write in the folder {folder}")
    return value


def to_json(value: Any) -> Any:
    """Models as the API sent them, recursively."""
    if hasattr(value, "raw"):
        return value.raw
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def api_command(func: F) -> F:
    """Adds ``--api-key``, ``--api-url`` and ``--json``; hands the command a ``Session``; maps errors."""

    @click.option("--json", "as_json", is_flag=True, help="Print the API's JSON (for scripts).")
    @click.option("--progress", type=click.Choice(PROGRESS_MODES), default="auto", show_default=True,
                  envvar="REELFARM_PROGRESS", help="How waits and transfers report on stderr: a bar, a line per "
                  "change of state, JSON lines, or nothing (auto: a bar on a terminal, lines when piped, "
                  "nothing with --json).")
    @click.option("--connect-timeout", envvar="REELFARM_CONNECT_TIMEOUT", type=click.FloatRange(min=0.1),
                  default=DEFAULT_CONNECT_TIMEOUT, show_default=True, metavar="SECONDS",
                  help="How long to keep trying to reach the server before exit 3.")
    @click.option("--api-url", envvar="REELFARM_API_URL", metavar="URL",
                  help="Server root (default: REELFARM_API_URL, the login file, http://127.0.0.1:8000).")
    @click.option("--api-key", envvar="REELFARM_API_KEY", metavar="KEY",
                  help="API key (default: REELFARM_API_KEY, then the key saved by `reelfarm login`).")
    @functools.wraps(func)
    def wrapper(api_key: str | None, api_url: str | None, as_json: bool, connect_timeout: float, progress: str,
                **kwargs: Any) -> Any:
        session = Session(api_key, api_url, as_json, connect_timeout, progress)
        try:
            return func(session, **kwargs)
        except APIConnectionError as exc:  # before APIError, its base: no answer to describe
            fail(session, EXIT_API, {"code": "connection_failed", "message": str(exc), "url": exc.url},
                 f"error: {exc}")
        except APIError as exc:
            fail(session, EXIT_API, exc.to_dict(), _describe(exc))
        except WaitTimeout as exc:
            fail(session, EXIT_TIMEOUT, {"code": "timeout", "message": str(exc), "last": to_json(exc.last)},
                 f"timed out: {exc}")
        except TaskFailed as exc:
            fail(session, EXIT_FAILED, {"code": "failed", "message": str(exc), "result": to_json(exc.result)},
                 f"failed: {exc}")
        except ReelfarmError as exc:
            fail(session, EXIT_USAGE, {"code": "usage", "message": str(exc)}, f"error: {exc}")
        finally:
            if session._client is not None:
                session._client.close()

    return wrapper  # type: ignore[return-value]


def _describe(exc: APIError) -> str:
    lines = [f"error: {exc.status} {exc.code}: {exc.message}"]
    lines += [f"  {d.get('field', '')}: {d.get('message', '')}" for d in exc.details or [] if isinstance(d, dict)]
    if exc.request_id:
        lines.append(f"  request id: {exc.request_id}")
    return "\n".join(lines)


def fail(session: Session, code: int, error: dict[str, Any], text: str) -> None:
    if session.as_json:
        click.echo(json.dumps({"error": error}, indent=2, ensure_ascii=False))
    else:
        click.echo(text, err=True)
    sys.exit(code)


WHOLE = frozenset({"id", "key"})
"""Columns never cut, whatever the width: what is copied from a table into the next command."""


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Callable[[], None]:
    """A printer of a plain rich table on stdout."""

    def draw() -> None:
        from rich.console import Console
        from rich.table import Table

        cells = [["" if v is None else str(v) for v in row] for row in rows]
        grid = Table(box=None, pad_edge=False, header_style="bold")
        for i, header in enumerate(headers):
            if header in WHOLE or header.endswith(" id"):  # ids and keys stay whole, to be copied; others give way
                widest = max([len(header), *(len(row[i]) for row in cells)])
                grid.add_column(header, no_wrap=True, min_width=widest)
            else:
                grid.add_column(header, overflow="ellipsis")
        for row in cells:
            grid.add_row(*row)
        console = Console(soft_wrap=True)
        if not console.is_terminal:  # a pipe or a file has no width to fit: every cell whole
            natural = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
            console = Console(soft_wrap=True, width=max(80, sum(natural) + 2 * len(natural)))
        console.print(grid)

    return draw


def parse_pairs(pairs: Sequence[str], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """``KEY=VALUE`` options as field values, typed by the story's field schema where known.

    A string field takes the text as is; numbers, booleans, arrays and objects are read as JSON.
    """
    properties = (schema or {}).get("properties", {})
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--field")
        kind = properties.get(key, {}).get("type", "string")
        kinds = kind if isinstance(kind, list) else [kind]
        if "string" in kinds:
            values[key] = raw
            continue
        try:
            values[key] = json.loads(raw)
        except ValueError:
            raise click.BadParameter(f"{key}: {raw!r} is not JSON ({'/'.join(kinds)})", param_hint="--field")
    return values
