"""The server distribution's ``reelfarm`` command: the client's commands and the server's, one group.

The group itself is the client's (``reelfarm.client.cli.main``), composed here from every part this
distribution installs, in the order they are looked in: the local creative commands first (they
need only the renderer), then the client's (click and httpx), then the service's (the web
framework, the database, the queues: about a second of imports).
``reelfarm render DOC.json`` renders a local file; ``reelfarm videos render VIDEO_ID`` renders on a server.
"""
from __future__ import annotations

from reelfarm.client.cli.main import CLIENT_PARTS, make_main

PARTS = ("reelfarm.studio.cli", *CLIENT_PARTS, "reelfarm.api.cli", "reelfarm.farm.runtime.cli", "reelfarm.serve")

EPILOG = """\b
Examples:
  reelfarm render doc.json -o out.mp4                  render a local VideoDoc on this machine
  reelfarm login --api-url https://reelfarm.example.com
  reelfarm videos create --story quote --field quote='Ship it' --json
  reelfarm videos render VIDEO_ID --format 9:16 --download out.mp4   render on the server
  REELFARM_API_KEY=rf_live_... reelfarm mcp            MCP server for agents (stdio)
"""

main = make_main(PARTS, "reelfarm", EPILOG)

if __name__ == "__main__":  # pragma: no cover
    main()
