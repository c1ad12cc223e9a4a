"""The Kubernetes manifests agree with themselves and with the code, offline: the Redis they name is
one they define, the schema is migrated before an API pod serves (no Job whose fixed name a second
apply would trip on), nodes are probed on whether they can take work, and nothing relies on
scraping annotations that cannot send the metrics token."""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from reelfarm.api.cli import make_serve_command, migrate_command
from reelfarm.farm.runtime.cli import worker_command
from reelfarm.farm.runtime.nodeprobe import probes_app

BASE = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "base"


def resources() -> dict[tuple[str, str], dict[str, Any]]:
    names = yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"]
    return {(d["kind"], d["metadata"]["name"]): d for name in names
            for d in yaml.safe_load_all((BASE / name).read_text()) if d}


def pod(kind: str, name: str) -> dict[str, Any]:
    return dict(resources()[(kind, name)]["spec"]["template"]["spec"])


def test_the_redis_the_configuration_names_is_defined() -> None:
    found = resources()
    config = found[("ConfigMap", "reelfarm-config")]["data"]
    url = urlsplit(config["REELFARM_REDIS_URL"])
    service = found[("Service", url.hostname)]
    assert [p["port"] for p in service["spec"]["ports"]] == [url.port]
    assert config["REDIS_ADDRESS"] == f"{url.hostname}:{url.port}"  # KEDA's scalers
    redis = found[("StatefulSet", "redis")]
    assert service["spec"]["selector"].items() <= redis["spec"]["template"]["metadata"]["labels"].items()
    command = redis["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"  # queued jobs are never evicted
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"


def test_the_schema_is_migrated_before_an_api_pod_serves_with_nothing_to_rename() -> None:
    spec = pod("Deployment", "reelfarm-api")
    (migrate,) = spec["initContainers"]
    (api,) = spec["containers"]
    assert migrate["command"] == ["reelfarm", "migrate"] and migrate_command.name == "migrate"
    assert migrate["image"] == api["image"] and migrate["envFrom"] == api["envFrom"]
    serve = make_serve_command(lambda *a, **k: None)
    assert serve.make_context("serve", api["command"][2:]).params["migrate"] is False  # --no-migrate
    assert not [key for key in resources() if key[0] == "Job"]


def test_nodes_are_probed_on_whether_they_can_take_work() -> None:
    for name in ("reelfarm-worker-cpu", "reelfarm-worker-gpu"):
        (worker,) = pod("Deployment", name)["containers"]
        port = worker_command.make_context("worker", worker["command"][2:]).params["metrics_port"]
        assert {p["name"]: p["containerPort"] for p in worker["ports"]} == {"metrics": port}
        assert worker["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "metrics"}
        assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    answered: list[str] = []
    app = probes_app(None, lambda environ, start: answered.append(environ["PATH_INFO"]) or [b""])
    app({"PATH_INFO": "/metrics"}, lambda *a: None)
    assert answered == ["/metrics"]  # without a probe the port serves metrics alone; with one, see test_nodeprobe


def test_no_pod_relies_on_scraping_annotations() -> None:
    for (kind, name), resource in resources().items():
        if kind in ("Deployment", "StatefulSet"):
            annotations = resource["spec"]["template"]["metadata"].get("annotations", {})
            assert not [a for a in annotations if a.startswith("prometheus.io/")], name
