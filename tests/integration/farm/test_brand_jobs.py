"""Brand extraction jobs on a real queue against fixture websites on loopback: the kit appears
with its tokens and stored logo, becomes the default only over the neutral kit, its event is in
the outbox; a video generated from a site uses the extracted kit, and its logo renders."""
from __future__ import annotations

import io
from typing import Any

from PIL import Image

from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.studio.brand_kits import logo_key
from tests.integration.farm.conftest import Farm
from tests.integration.farm.test_generation_jobs import events, finished, generate, video_row
from tests.integration.farm.test_render_embedded import local_file
from tests.integration.studio.test_brand_sites import servers, site, url  # noqa: F401 - fixtures


def kits(farm: Farm, workspace: str) -> list[kits_repo.BrandKit]:
    with farm.engine.connect() as conn:
        return kits_repo.list_brand_kits(conn, workspace)


def test_an_extracted_kit_is_stored_with_its_logo_and_event(embedded: Farm, site: Any) -> None:  # noqa: F811
    workspace = embedded.workspace()
    job = embedded.jobs.request_brand_extract(workspace, url(site, "/vars/"))
    assert (job["kind"], job["status"], job["stage"]) == ("brand_extract", "queued", None)
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finished(embedded, workspace, job["id"])

    assert done["status"] == "succeeded", done["error"]
    assert (done["stage"], done["progress"]) == ("save", 1.0)
    extracted, neutral = kits(embedded, workspace)
    assert done["result"] == {"brand_kit_id": extracted.id}
    assert (extracted.name, extracted.is_default, neutral.is_default) == ("Acme", True, False)
    assert extracted.source_url == url(site, "/vars/")
    tokens = extracted.tokens
    assert tokens["colors"]["primary"] == "#E11D48"
    assert tokens["fonts"]["heading"]["family"] == "Playfair Display"
    logo = tokens["logo"]
    assert logo["key"] == logo_key(extracted.id) and (logo["width"], logo["height"]) == (200, 100)
    stored = Image.open(io.BytesIO(embedded.storage.get_bytes(logo["key"])))
    assert stored.format == "PNG" and stored.size == (200, 100)

    [(kind, payload)] = events(embedded, workspace)
    assert kind == "brand_kit.extracted"
    shown = payload["brand_kit"]
    assert shown["id"] == extracted.id and "key" not in shown["tokens"]["logo"]
    assert local_file(embedded.storage, shown["tokens"]["logo"]["url"]).read_bytes() == \
        embedded.storage.get_bytes(logo["key"])


def test_a_second_kit_does_not_take_the_default(embedded: Farm, site: Any) -> None:  # noqa: F811
    workspace = embedded.workspace()
    first = embedded.jobs.request_brand_extract(workspace, url(site, "/vars/"))
    second = embedded.jobs.request_brand_extract(workspace, url(site, "/svg/"))
    embedded.queue.start()  # type: ignore[attr-defined]
    for job in (first, second):
        assert finished(embedded, workspace, job["id"])["status"] == "succeeded"
    every = kits(embedded, workspace)
    assert len(every) == 3
    # the two jobs ran at once: whichever saved first took the default, the other did not
    assert sorted((k.source_url is not None, k.is_default) for k in every) == [(False, False), (True, False),
                                                                                (True, True)]


def test_a_non_html_site_fails_the_job_with_the_reason(embedded: Farm, site: Any) -> None:  # noqa: F811
    workspace = embedded.workspace()
    job = embedded.jobs.request_brand_extract(workspace, url(site, "/data.json"))
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finished(embedded, workspace, job["id"])
    assert done["status"] == "failed" and "application/json" in done["error"]
    assert len(kits(embedded, workspace)) == 1 and events(embedded, workspace) == []


def test_a_video_from_a_site_uses_its_brand_and_renders_its_logo(embedded: Farm, site: Any) -> None:  # noqa: F811
    workspace = embedded.workspace()
    video_id, job_id = generate(embedded, workspace, "Our new widget ships on Monday 3 March. Order now.",
                                url=url(site, "/svg/"))
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finished(embedded, workspace, job_id)
    assert done["status"] == "succeeded", done["error"]

    video, version = video_row(embedded, workspace, video_id)
    [kit] = [k for k in kits(embedded, workspace) if k.source_url]
    assert video.brand_kit_id == kit.id and kit.name == "Umbrella"
    assert version.doc["brand"]["colors"]["primary"] == kit.tokens["colors"]["primary"]
    assert version.doc["assets"]["logo"] == {"type": "image", "key": logo_key(kit.id)}
    assert [kind for kind, _ in events(embedded, workspace)] == ["brand_kit.extracted", "video.generated"]

    stills = embedded.jobs.request_stills(workspace, video_id, [1.0], "16:9", resolution=360)
    shot = finished(embedded, workspace, stills["id"])
    assert shot["status"] == "succeeded", shot["error"]
