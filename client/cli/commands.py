"""The client's commands, as one part of the ``reelfarm`` command (``reelfarm.client.cli.main``)."""
from __future__ import annotations

from reelfarm.client.cli.account import COMMANDS as ACCOUNT_COMMANDS
from reelfarm.client.cli.agent import mcp_command
from reelfarm.client.cli.assets import COMMANDS as ASSET_COMMANDS
from reelfarm.client.cli.videos import COMMANDS as VIDEO_COMMANDS

COMMANDS = (*ACCOUNT_COMMANDS, *VIDEO_COMMANDS, *ASSET_COMMANDS, mcp_command)
