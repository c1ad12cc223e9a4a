"""Containers in the client surfaces, against the loopback stand-in for the API: the SDK (blocking
and awaited) sends ``container`` and ``transparent`` only when asked and reads them back with
``clamped``; the command line takes ``--container`` and ``--transparent``."""
from __future__ import annotations

import anyio
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client, Render
from reelfarm.client.cli.main import main
from tests.unit.client.test_client_priority import DONE, KEY, RENDER, FakeAPI


def test_the_sdk_sends_the_container_only_when_asked() -> None:
    api = FakeAPI([{**DONE, "container": "gif", "transparent": False, "clamped": ["fps"]}])
    try:
        with Client(api_key=KEY, base_url=api.base) as rf:
            rf.videos.render("v1", format="1:1")
            gif = rf.videos.render("v1", format="1:1", container="gif")
            rf.videos.variants("v1", ["1:1"], container="webm", transparent=True)

        async def awaited() -> None:
            async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
                await rf.videos.render("v1", format="1:1", container="webm", transparent=True)
        anyio.run(awaited)
    finally:
        api.close()
    assert api.bodies() == [{"format": "1:1"}, {"format": "1:1", "container": "gif"},
                            {"formats": ["1:1"], "container": "webm", "transparent": True},
                            {"format": "1:1", "container": "webm", "transparent": True}]
    assert (gif.container, gif.transparent, gif.clamped) == ("gif", False, ["fps"])
    older = Render.from_dict(RENDER)  # a server from before containers
    assert (older.container, older.transparent, older.clamped) == ("mp4", False, [])


def test_the_command_line_asks_for_a_container() -> None:
    api = FakeAPI([{**DONE, "container": "webm", "transparent": True, "clamped": []}])
    try:
        env = {"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None}
        where = ["--api-url", api.base, "--api-key", KEY]
        result = CliRunner().invoke(main, ["videos", "render", "v1", "--container", "webm", "--transparent",
                                           "--no-wait", "--json", *where], env=env)
        bad = CliRunner().invoke(main, ["videos", "render", "v1", "--container", "mov", *where], env=env)
    finally:
        api.close()
    assert result.exit_code == 0, result.output
    assert api.bodies() == [{"format": "1:1", "container": "webm", "transparent": True}]
    assert bad.exit_code == 2 and "mov" in bad.output
