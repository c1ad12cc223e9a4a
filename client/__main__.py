"""``python -m reelfarm.client``: the ``reelfarm`` command of the client distribution."""
from reelfarm.client.cli.main import main

main()
