"""`reelfarm` console script.

Each part contributes its own commands; this module only gathers them, so a part's commands
live beside the code they drive.
"""
from __future__ import annotations

import click

from api.cli import COMMANDS as API_COMMANDS
from farm.cli import COMMANDS as FARM_COMMANDS
from studio.cli import COMMANDS as STUDIO_COMMANDS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reelfarm")
def main() -> None:
    """reelfarm: video creation with a render farm behind it."""


for command in (*STUDIO_COMMANDS, *API_COMMANDS, *FARM_COMMANDS):
    main.add_command(command)

if __name__ == "__main__":  # pragma: no cover
    main()
