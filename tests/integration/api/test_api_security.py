"""Secrets stay secret: no API key in any log line, whatever happens to the request."""
from __future__ import annotations

import logging

from reelfarm.shared import keys


def test_no_plaintext_key_in_logs(client, make_tenant, caplog):
    tenant = make_tenant(credits=1)
    revoked_looking = keys.generate_key()
    caplog.set_level(logging.DEBUG)
    client.get("/api/v1/me", headers=tenant.headers)
    client.post("/api/v1/videos", data="{broken", content_type="application/json", headers=tenant.headers)
    client.get("/api/v1/videos/not-a-uuid", headers=tenant.headers)
    client.get("/api/v1/me", headers={"Authorization": f"Bearer {revoked_looking}"})
    client.get("/api/v1/me", headers={"Authorization": f"Bearer {tenant.key[:-1]}x"})
    text = caplog.text
    for secret in (tenant.key, revoked_looking, tenant.key[8:40]):
        assert secret not in text
