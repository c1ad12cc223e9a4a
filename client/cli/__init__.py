"""The client commands of the ``reelfarm`` console script (``reelfarm/cli.py`` gathers them).

They load only httpx, click and rich, never the server's code: ``reelfarm videos ...`` starts as
fast as ``reelfarm render``. ``mcp`` imports the MCP SDK only when run.
"""
from __future__ import annotations

from reelfarm.client.cli.account import COMMANDS as ACCOUNT_COMMANDS
from reelfarm.client.cli.agent import mcp_command
from reelfarm.client.cli.videos import COMMANDS as VIDEO_COMMANDS

COMMANDS = (*ACCOUNT_COMMANDS, *VIDEO_COMMANDS, mcp_command)
