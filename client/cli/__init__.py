"""The client commands of the ``reelfarm`` command: ``login``, ``whoami``, ``stories``, ``videos``,
``renders``, ``jobs``, ``brand``, ``webhooks``, ``mcp`` (``commands.py`` gathers them; ``main.py``
composes the command from what is installed).

They load only httpx, click and rich, never the server's code: ``reelfarm videos ...`` starts as
fast as ``reelfarm render``. ``mcp`` imports the MCP SDK only when run.
"""
