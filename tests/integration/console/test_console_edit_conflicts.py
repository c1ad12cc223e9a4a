"""Two tabs editing one video's fields: the form carries the version it was opened at; the second
save, made from a version that is no longer current, saves nothing and shows field by field what
each save changed, with "merge" (only this person's changes, onto the current version) and
"overwrite" (their values as they are). A restore from a page that has fallen behind restores
nothing. Both databases."""
from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from typing import Any

from tests.integration.console.conftest import csrf_token, signed_in_owner


class _Form(HTMLParser):
    """The values a browser would post for the form whose ``action`` ends with ``ending``."""

    def __init__(self, ending: str) -> None:
        super().__init__()
        self.ending, self.inside, self.values = ending, False, {}
        self._text: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = found.get("action", "").endswith(self.ending)
        if not self.inside:
            return
        name = found.get("name")
        if tag == "input" and name and found.get("type") not in ("file", "submit", "checkbox", "radio"):
            self.values[name] = found.get("value", "")
        elif tag == "input" and name and "checked" in found:
            self.values[name] = found.get("value", "on")
        elif tag == "textarea" and name:
            self._text = name
            self.values[name] = ""
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in found:
            self.values[self._select] = found.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._text:
            self.values[self._text] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "textarea":
            self._text = None
        elif tag == "select":
            self._select = None


def _form(page: str, ending: str) -> dict[str, str]:
    parser = _Form(ending)
    parser.feed(page)
    assert parser.values, f"no form posting to …{ending}"
    return parser.values


def _open_fields(browser: Any, video_id: str) -> dict[str, str]:
    """The fields form as a tab shows it when opened."""
    return _form(browser.get(f"/app/videos/{video_id}").get_data(as_text=True), f"/videos/{video_id}/fields")


def _row(page: str, field: str) -> tuple[str, list[str]]:
    """Who changed ``field`` and the texts of its row (opened, yours, now)."""
    found = re.search(rf'<tr data-field="{field}" data-changed-by="([a-z]+)">(.*?)</tr>', page, re.DOTALL)
    assert found, f"no row for {field}"
    cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", found.group(2), re.DOTALL)]
    return found.group(1), cells[:3]


def _doc_texts(services: Any, tenant: Any, video_id: str) -> str:
    return json.dumps(services.videos.get(tenant.workspace_id, video_id)["current_version"]["doc"])


def _video(services: Any, tenant: Any) -> str:
    return services.videos.create(tenant.workspace_id, story_id="announcement",
                                  fields={"headline": "Grand opening", "cta": "Come by"})["id"]


def test_the_second_tab_sees_what_changed_and_a_merge_keeps_both_edits(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    video_id = _video(services, acme)
    tab_a, tab_b = _open_fields(ann, video_id), _open_fields(ann, video_id)
    assert tab_a["version"] == tab_b["version"] == "1"

    saved = ann.post(f"/app/videos/{video_id}/fields", data={**tab_a, "f.headline": "New tagline from A"})
    assert saved.status_code == 303
    conflict = ann.post(f"/app/videos/{video_id}/fields", data={**tab_b, "f.cta": "Now 20% off, from B",
                                                                 "note": "price"})
    page = conflict.get_data(as_text=True)
    assert conflict.status_code == 409
    assert "You opened version 1; since then version 2" in page
    assert _row(page, "headline") == ("other", ["Grand opening", "Grand opening", "New tagline from A"])
    assert _row(page, "cta") == ("you", ["Come by", "Now 20% off, from B", "Come by"])
    assert 'data-field="kicker"' not in page  # neither save changed it
    assert "Merge: apply only the 1 field you changed to version 2" in page
    assert "undoing the other save's 1 field" in page
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 2  # nothing saved

    merged = ann.post(f"/app/videos/{video_id}/fields/resolve",
                      data={**_form(page, "/fields/resolve"), "resolve": "merge"})
    assert merged.status_code == 303
    current = services.videos.get(acme.workspace_id, video_id)["current_version"]
    assert (current["number"], current["note"]) == (3, "price")
    texts = _doc_texts(services, acme, video_id)
    assert "New tagline from A" in texts and "Now 20% off, from B" in texts
    shown = ann.get(merged.headers["Location"]).get_data(as_text=True)
    assert "Merged your changes into version 2: saved as version 3." in shown


def test_overwrite_saves_the_second_tabs_values_as_they_are(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    video_id = _video(services, acme)
    tab_a, tab_b = _open_fields(ann, video_id), _open_fields(ann, video_id)
    ann.post(f"/app/videos/{video_id}/fields", data={**tab_a, "f.headline": "New tagline from A"})
    page = ann.post(f"/app/videos/{video_id}/fields", data={**tab_b, "f.cta": "Price from B"}).get_data(as_text=True)
    overwritten = ann.post(f"/app/videos/{video_id}/fields/resolve",
                           data={**_form(page, "/fields/resolve"), "resolve": "overwrite"})
    assert overwritten.status_code == 303
    assert services.read_models.current_fields(acme.workspace_id, video_id)["headline"] == "Grand opening"
    texts = _doc_texts(services, acme, video_id)
    assert "Price from B" in texts and "New tagline from A" not in texts
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 3


def test_a_merge_refused_by_yet_another_save_shows_the_comparison_again(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    video_id = _video(services, acme)
    tab_a, tab_b = _open_fields(ann, video_id), _open_fields(ann, video_id)
    ann.post(f"/app/videos/{video_id}/fields", data={**tab_a, "f.headline": "Tagline from A"})
    page = ann.post(f"/app/videos/{video_id}/fields", data={**tab_b, "f.cta": "Price from B"}).get_data(as_text=True)
    services.videos.update(acme.workspace_id, video_id, fields={"kicker": "Kicker from C"})  # version 3
    again = ann.post(f"/app/videos/{video_id}/fields/resolve", data={**_form(page, "/fields/resolve"),
                                                                      "resolve": "merge"})
    shown = again.get_data(as_text=True)
    assert again.status_code == 409 and "since then versions 2, 3" in shown
    assert _row(shown, "kicker")[0] == "other" and _row(shown, "cta")[0] == "you"
    merged = ann.post(f"/app/videos/{video_id}/fields/resolve", data={**_form(shown, "/fields/resolve"),
                                                                       "resolve": "merge"})
    assert merged.status_code == 303
    texts = _doc_texts(services, acme, video_id)
    assert all(t in texts for t in ("Tagline from A", "Price from B", "Kicker from C"))


def test_a_save_that_changed_nothing_keeps_the_newer_version_and_makes_none(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    video_id = _video(services, acme)
    tab_a, tab_b = _open_fields(ann, video_id), _open_fields(ann, video_id)
    ann.post(f"/app/videos/{video_id}/fields", data={**tab_a, "f.headline": "Tagline from A"})
    kept = ann.post(f"/app/videos/{video_id}/fields", data=tab_b)
    assert kept.status_code == 303
    assert "you had changed nothing, so it is kept as it is" in ann.get(kept.headers["Location"]).get_data(as_text=True)
    unchanged = ann.post(f"/app/videos/{video_id}/fields", data=_open_fields(ann, video_id))
    assert "Nothing changed, so no version was made." in ann.get(unchanged.headers["Location"]).get_data(as_text=True)
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 2


def test_a_restore_from_a_page_that_fell_behind_restores_nothing(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    video_id = _video(services, acme)
    services.videos.update(acme.workspace_id, video_id, fields={"headline": "Second"})
    page = ann.get(f"/app/videos/{video_id}").get_data(as_text=True)
    restore = _form(page, f"/videos/{video_id}/versions/1/restore")
    assert restore["version"] == "2"
    services.videos.update(acme.workspace_id, video_id, fields={"headline": "Third"})
    refused = ann.post(f"/app/videos/{video_id}/versions/1/restore", data=restore)
    assert refused.status_code == 302
    assert "Version 3 of this video was saved since this page was opened" in \
        ann.get(refused.headers["Location"]).get_data(as_text=True)
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 3
    fresh = _form(ann.get(f"/app/videos/{video_id}").get_data(as_text=True), f"/videos/{video_id}/versions/1/restore")
    assert ann.post(f"/app/videos/{video_id}/versions/1/restore", data=fresh).status_code == 303
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["source"] == "restore"
    # another workspace's person cannot resolve into this video
    theirs = bob.post(f"/app/videos/{video_id}/fields/resolve",
                      data={"csrf_token": csrf_token(bob, "/app/videos/new/announcement"), "yours": '{"cta": "Bob"}',
                            "opened": "1", "version": "4", "resolve": "merge"})
    assert theirs.status_code == 404
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 4
