"""`reelfarm` console script.

Each part contributes its own commands; this module only gathers them, so a part's commands
live beside the code they drive.

The local creative commands (`render`, `still`, `story`, `lint`) need only the renderer, so the
service's commands (the web framework, the database, the queues, about a second of imports)
load only when a command that is not local is asked for, or when every command is listed.
"""
from __future__ import annotations

import importlib

import click

from studio.cli import COMMANDS as STUDIO_COMMANDS

SERVICE_COMMAND_MODULES = ("api.cli", "farm.cli")


class ReelfarmGroup(click.Group):
    """A group whose service commands are imported on first use."""

    _loaded = False

    def _load_service_commands(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in SERVICE_COMMAND_MODULES:
            for command in importlib.import_module(module).COMMANDS:
                self.add_command(command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._load_service_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_service_commands()
        return super().list_commands(ctx)


@click.group(cls=ReelfarmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reelfarm")
def main() -> None:
    """reelfarm: video creation with a render farm behind it."""


for command in STUDIO_COMMANDS:
    main.add_command(command)

if __name__ == "__main__":  # pragma: no cover
    main()
