"""`reelfarm` console script.

Each part contributes its own commands; this module only gathers them, so a part's commands
live beside the code they drive.

The local creative commands (`render`, `still`, `story`, `lint`) need only the renderer, so the
other parts' commands load only when a command that is not local is asked for, or when every
command is listed: first the API client's (`login`, `videos`, `mcp`, ...: click and httpx only),
then the service's (the web framework, the database, the queues, about a second of imports).
`reelfarm render DOC.json` renders a local file; `reelfarm videos render VIDEO_ID` renders on a server.
"""
from __future__ import annotations

import importlib

import click

from reelfarm.studio.cli import COMMANDS as STUDIO_COMMANDS

LAZY_COMMAND_MODULES = ("reelfarm.client.cli", "reelfarm.api.cli", "reelfarm.farm.cli")


class ReelfarmGroup(click.Group):
    """A group whose other parts' commands are imported on first use, one part at a time."""

    _loaded = 0

    def _load_next(self) -> bool:
        if self._loaded >= len(LAZY_COMMAND_MODULES):
            return False
        module = LAZY_COMMAND_MODULES[self._loaded]
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


EPILOG = """\b
Examples:
  reelfarm render doc.json -o out.mp4                  render a local VideoDoc on this machine
  reelfarm login --api-url https://reelfarm.example.com
  reelfarm videos create --story quote --field quote='Ship it' --json
  reelfarm videos render VIDEO_ID --format 9:16 --download out.mp4   render on the server
  REELFARM_API_KEY=rf_live_... reelfarm mcp            MCP server for agents (stdio)
"""


@click.group(cls=ReelfarmGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reelfarm")
def main() -> None:
    """reelfarm: video creation with a render farm behind it."""


for command in STUDIO_COMMANDS:
    main.add_command(command)

if __name__ == "__main__":  # pragma: no cover
    main()
