"""Text longer than a field allows is not cut: the console keeps what was typed and names the limit."""
from __future__ import annotations

import re
from html import unescape

from tests.integration.console.conftest import signed_in_owner
from tests.integration.console.test_console_previews import _form


def test_a_title_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "flash_sale")
    page = ann.get("/app/videos/new/flash_sale").get_data(as_text=True)
    assert " maxlength=" not in page  # a browser would cut what is typed without a word

    refused = ann.post("/app/videos/new/flash_sale", data={**posted, "title": "t" * 230})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert re.search(r'data-error-for="video.title" >Title: at most 200 characters \(this has 230\)<', html)
    assert f'value="{"t" * 230}"' in html
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    saved = ann.post("/app/videos/new/flash_sale", data={**posted, "title": "t" * 200})
    assert saved.status_code == 303
    assert [v["title"] for v in services.videos.list(acme.workspace_id, 10)["data"]] == ["t" * 200]
    assert services.videos.list(other.workspace_id, 10)["data"] == []
