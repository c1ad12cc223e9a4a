"""The SDK and the command line name a render's node pool and read it back, against the app served on
127.0.0.1 (no farm started: the renders wait). A workspace that no operator limited may name any pool."""
from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client
from reelfarm.client.cli.main import main
from reelfarm.client.errors import ValidationError
from tests.integration.api.test_api_client_edits import served  # noqa: F401 - the fixture


def test_the_sdk_and_the_command_line_name_a_renders_pool(served, make_tenant, create_video):  # noqa: F811
    tenant = make_tenant(credits=10)
    video_id = create_video(tenant)["id"]
    with Client(api_key=tenant.key, base_url=served.url) as rf:
        anywhere = rf.videos.render(video_id, format="9:16", resolution=720)
        eu = rf.videos.render(video_id, format="1:1", resolution=720, pool="region=eu,gpu")
        with pytest.raises(ValidationError) as refused:
            rf.videos.render(video_id, format="4:5", resolution=720, pool="Region=EU!")
    assert anywhere.pool == "" and eu.pool == "gpu,region=eu"  # the pool as the farm spells it
    assert refused.value.status == 400 and [d["field"] for d in refused.value.details] == ["/pool"]

    async def awaited() -> Any:
        async with AsyncClient(api_key=tenant.key, base_url=served.url) as rf:
            return await rf.videos.render(video_id, format="16:9", resolution=720, pool="region=ap")
    assert anyio.run(awaited).pool == "region=ap"

    said = CliRunner().invoke(main, ["videos", "render", video_id, "--format", "4:5", "--resolution", "720",
                                     "--pool", "customer=acme", "--no-wait", "--json", "--api-url", served.url,
                                     "--api-key", tenant.key],
                              env={"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None})
    assert said.exit_code == 0, said.output
    assert json.loads(said.stdout)["pool"] == "customer=acme"
