"""Brand-kit logos replaced or removed are deleted by the retention round once no kit and no version
names them, an hour after they were written; two workspaces side by side, on local files and on
S3 (a moto server), both databases.
"""
from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.retention import purge
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.config import Settings
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.studio.brand_kits import LogoFile
from reelfarm.studio.brand_logos import LOGO_FOLDER
from tests.servers import MOTO_CREDENTIALS, MotoProcess


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoProcess]:
    server = MotoProcess(bucket="logos").start()
    yield server
    server.stop()


@pytest.fixture(params=["local", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    env = {"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url}
    if request.param == "s3":
        for name, value in MOTO_CREDENTIALS.items():
            monkeypatch.setenv(name, value)
        env |= {"REELFARM_STORAGE_URL": f"s3://logos/run-{tmp_path.name}",
                "REELFARM_S3_ENDPOINT_URL": request.getfixturevalue("moto").url}
    return Settings.from_env(env)


def _png(color: tuple[int, int, int]) -> LogoFile:
    out = io.BytesIO()
    Image.new("RGB", (40, 20), color).save(out, "PNG")
    return LogoFile(out.getvalue(), "logo.png")


def _logo_key(kit: dict[str, Any], services: Any, workspace_id: str) -> str:
    with services.engine.connect() as conn:
        return str(kits_repo.get_brand_kit(conn, workspace_id, kit["id"]).tokens["logo"]["key"])


def test_replaced_and_removed_logos_go_once_nothing_names_them(services, clock, make_tenant, create_video,
                                                              settings):
    kits, storage = services.brand_kits, services.storage
    acme, other = make_tenant(), make_tenant()
    # acme: red, used by a video, then replaced by green, then by blue
    kits.update(acme.workspace_id, acme.default_kit_id, {}, logo=_png((255, 0, 0)))
    red = _logo_key({"id": acme.default_kit_id}, services, acme.workspace_id)
    video = create_video(acme, brandKitId=acme.default_kit_id)
    kits.update(acme.workspace_id, acme.default_kit_id, {}, logo=_png((0, 255, 0)))
    green = _logo_key({"id": acme.default_kit_id}, services, acme.workspace_id)
    kits.update(acme.workspace_id, acme.default_kit_id, {}, logo=_png((0, 0, 255)))
    blue = _logo_key({"id": acme.default_kit_id}, services, acme.workspace_id)
    # other: yellow, removed; its second kit keeps purple
    kits.update(other.workspace_id, other.default_kit_id, {}, logo=_png((255, 255, 0)))
    yellow = _logo_key({"id": other.default_kit_id}, services, other.workspace_id)
    kits.update(other.workspace_id, other.default_kit_id, {}, drop_logo=True)
    second = kits.create(other.workspace_id, "Second", NEUTRAL_BRAND, logo=_png((128, 0, 128)))
    purple = _logo_key(second, services, other.workspace_id)
    assert len({red, green, blue, yellow, purple}) == 5
    assert video["current_version"]["doc"]["brand"]["logo"]["key"] == red

    configure(TaskContext(engine=services.engine, storage=storage, clock=clock, progress=MemoryProgress(),
                          settings=settings))
    clock.set(datetime.now(UTC) + timedelta(minutes=30))  # written under an hour ago: kept
    # purge deletes across the database (PostgreSQL is shared by the tests): the logos are compared
    assert purge().logos == 0
    assert set(storage.list_keys(LOGO_FOLDER)) == {red, green, blue, yellow, purple}

    clock.set(datetime.now(UTC) + timedelta(hours=2))
    assert purge().logos == 2
    assert set(storage.list_keys(LOGO_FOLDER)) == {red, blue, purple}
    assert not storage.exists(green) and not storage.exists(yellow)
    assert purge().logos == 0  # nothing left to do
