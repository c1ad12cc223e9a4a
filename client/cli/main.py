"""The ``reelfarm`` command: one group composed from the parts a distribution installs.

``reelfarm-client`` installs the client's commands alone (``login``, ``videos``, ``mcp``, ...);
the server distribution, which carries the client too, adds the local creative commands
(``render``, ``still``, ``story``, ``lint``) and the service's (``serve``, ``worker``, ``migrate``,
``admin``, ``farm``). Either way it is one command, ``reelfarm``.

A part is a module with a ``COMMANDS`` tuple. Parts are imported on first use, in order, one at a
time, so ``reelfarm render`` never loads httpx and ``reelfarm videos`` never loads the web framework.
This module imports only click.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence

import click

CLIENT_PARTS = ("reelfarm.client.cli.commands",)

CLIENT_EPILOG = """\b
Examples:
  reelfarm login --api-url https://reelfarm.example.com
  reelfarm videos create --story quote --field quote='Ship it' --json
  reelfarm videos render VIDEO_ID --format 9:16 --download out.mp4
  REELFARM_API_KEY=rf_live_... reelfarm mcp            MCP server for agents (stdio)
"""


class PartsGroup(click.Group):
    """A group whose commands come from parts, imported on first use, one part at a time."""

    def __init__(self, *args: object, parts: Sequence[str] = (), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.parts = tuple(parts)
        self._loaded = 0

    def _load_next(self) -> bool:
        if self._loaded >= len(self.parts):
            return False
        module = self.parts[self._loaded]
        self._loaded += 1
        for command in importlib.import_module(module).COMMANDS:
            self.add_command(command)
        return True

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        while command is None and self._load_next():
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        while self._load_next():
            pass
        return super().list_commands(ctx)


def make_main(parts: Sequence[str], distribution: str, epilog: str) -> click.Group:
    """The ``reelfarm`` group over ``parts``, reporting ``distribution``'s version."""

    @click.group(cls=PartsGroup, parts=parts, epilog=epilog,
                 context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(package_name=distribution)
    def main() -> None:
        """reelfarm: video creation with a render farm behind it."""

    return main


main = make_main(CLIENT_PARTS, "reelfarm-client", CLIENT_EPILOG)
