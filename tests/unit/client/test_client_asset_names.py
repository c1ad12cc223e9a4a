"""Asset names in the SDK and the command line, against a scripted loopback stand-in for the API:
``Asset.name``; ``assets.list(name=...)`` sends ``q``; ``assets.rename`` sends a PATCH with the
name and raises ``ValidationError`` for a refused one; ``reelfarm assets list`` shows names (and
``--name`` filters), ``reelfarm assets rename`` renames. The blocking and the awaited client alike."""
from __future__ import annotations

import json

import anyio
import pytest
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client, ValidationError
from reelfarm.client.cli.main import main as client_main
from tests.unit.client.test_client_assets import API, ASSET, KEY, SOUND, envelope

NAMED = {**ASSET, "name": "Team photo.png"}
RENAMED = {**ASSET, "name": "Team photo (final).png"}


def test_names_are_read_searched_and_changed_in_the_blocking_client():
    refused = envelope(400, "validation_failed", [{"field": "/name", "code": "invalid",
                                                   "message": "a name may not hold / or \\"}])
    script = {("GET", "/assets"): [(200, {"data": [NAMED, SOUND], "next_cursor": None})],
              ("PATCH", "/assets/a1"): [(200, RENAMED), refused]}
    with API(script) as api, Client(api_key=KEY, base_url=api.url) as rf:
        listed = list(rf.assets.list(name="photo"))
        assert [a.name for a in listed] == ["Team photo.png", None]  # a file sent without a name has none
        assert rf.assets.rename("a1", "Team photo (final).png").name == "Team photo (final).png"
        with pytest.raises(ValidationError) as caught:
            rf.assets.rename("a1", "a/b")
        assert caught.value.details[0]["field"] == "/name"
    assert [q for m, p, q, *_ in api.seen if m == "GET"] == [{"q": "photo"}]
    assert [json.loads(body) for m, _p, _q, _h, body in api.seen if m == "PATCH"] == [
        {"name": "Team photo (final).png"}, {"name": "a/b"}]


def test_names_in_the_awaited_client():
    script = {("GET", "/assets"): [(200, {"data": [NAMED], "next_cursor": None})],
              ("PATCH", "/assets/a1"): [(200, RENAMED)]}

    async def main() -> tuple[list[str | None], str | None]:
        async with AsyncClient(api_key=KEY, base_url=api.url) as rf:
            found = [a.name async for a in rf.assets.list(name="TEAM", kind="image")]
            return found, (await rf.assets.rename("a1", "Team photo (final).png")).name

    with API(script) as api:
        assert anyio.run(main) == (["Team photo.png"], "Team photo (final).png")
    assert api.seen[0][2] == {"kind": "image", "q": "TEAM"}


def test_the_command_line_lists_and_renames_by_name():
    script = {("GET", "/assets"): [(200, {"data": [NAMED, SOUND], "next_cursor": None})],
              ("PATCH", "/assets/a1"): [(200, RENAMED)]}
    with API(script) as api:
        def run(*args: str):
            return CliRunner().invoke(client_main, [*args, "--api-url", api.url, "--api-key", KEY])
        listed = run("assets", "list", "--name", "photo")
        assert listed.exit_code == 0, listed.output
        header = listed.stdout.splitlines()[0].split()
        assert header[:3] == ["id", "name", "kind"] and "Team photo.png" in listed.stdout
        renamed = run("assets", "rename", "a1", "Team photo (final).png")
        assert renamed.exit_code == 0, renamed.output
        assert "name Team photo (final).png" in renamed.stdout
        as_json = run("assets", "list", "--json")
        assert [a.get("name") for a in json.loads(as_json.stdout)] == ["Team photo.png", None]  # as answered
    assert next(q for m, p, q, *_ in api.seen if m == "GET") == {"q": "photo", "limit": "100"}
