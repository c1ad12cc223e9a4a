"""deploy/ checked offline, with no Docker daemon and no cluster: the compose file against the
Compose Specification's schema, every Kubernetes manifest against the API schemas of the version
we target (strict: unknown fields fail), KEDA ScaledObjects against KEDA's own CRD schema, the
Dockerfiles with hadolint, the shell scripts with shellcheck, and the Grafana dashboard as JSON
whose queries name only metrics the code exports."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.33.0"
KEDA_SCHEMA = Path(__file__).parent / "schemas" / "keda-scaledobject-v1alpha1.json"
MANIFESTS = sorted(p for p in (DEPLOY / "k8s").rglob("*.yaml") if p.name != "kustomization.yaml")


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def resources() -> list[dict[str, Any]]:
    return [d for p in MANIFESTS for d in documents(p)]


def _closed(schema: Any) -> Any:
    """The schema with unknown properties refused wherever it lists properties (kubeconform's strict)."""
    if isinstance(schema, dict):
        schema = {k: _closed(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [_closed(v) for v in schema]
    return schema


def test_compose_file_matches_the_compose_spec() -> None:
    run = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                          str(DEPLOY / "compose.yaml")], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_compose_runs_a_scalable_farm_with_health_checks_and_a_gpu_profile() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert {"api", "worker", "postgres", "redis", "minio", "migrate", "gpu-worker"} <= set(services)
    for name in ("api", "worker", "gpu-worker", "postgres", "redis", "minio"):
        assert "healthcheck" in services[name], name
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker  # --scale worker=N
    assert services["migrate"]["command"] == ["reelfarm", "migrate"]
    assert "--no-migrate" in services["api"]["command"]
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    gpu = services["gpu-worker"]
    assert gpu["profiles"] == ["gpu"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kubernetes_manifests_are_valid(path: Path) -> None:
    keda = _closed(json.loads(KEDA_SCHEMA.read_text()))
    for doc in documents(path):
        if doc["apiVersion"].startswith("keda.sh/"):
            jsonschema.validate(doc, keda)
            assert doc["spec"]["scaleTargetRef"]["name"] in {
                r["metadata"]["name"] for r in resources() if r["kind"] == "Deployment"}
        else:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_kustomizations_name_only_files_that_exist() -> None:
    for kustomization in (DEPLOY / "k8s").rglob("kustomization.yaml"):
        for entry in yaml.safe_load(kustomization.read_text())["resources"]:
            assert (kustomization.parent / entry).exists(), f"{kustomization}: {entry}"


def test_the_farm_is_probed_scaled_and_drained_as_documented() -> None:
    by_name = {(r["kind"], r["metadata"]["name"]): r for r in resources()}
    api = by_name[("Deployment", "reelfarm-api")]["spec"]["template"]["spec"]["containers"][0]
    assert api["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert ("PodDisruptionBudget", "reelfarm-api") in by_name and ("Service", "reelfarm-api") in by_name
    assert by_name[("Job", "reelfarm-migrate")]["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "reelfarm", "migrate"]
    gpu = by_name[("Deployment", "reelfarm-worker-gpu")]["spec"]["template"]["spec"]
    backlog = Dispatcher(None, shares=Shares(None)).backlog_list("")  # chunks waiting for their turn, per queue
    assert gpu["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for name in ("reelfarm-worker-cpu", "reelfarm-worker-gpu"):
        assert by_name[("Deployment", name)]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 600
        triggers = by_name[("ScaledObject", name)]["spec"]["triggers"]
        assert all(t["type"] == "redis" and t["metadata"]["listName"].startswith(("rq:queue:", backlog))
                   for t in triggers)
    assert by_name[("ScaledObject", "reelfarm-worker-gpu")]["spec"]["minReplicaCount"] == 0
    gpu_lists = [t["metadata"]["listName"] for t in by_name[("ScaledObject", "reelfarm-worker-gpu")]["spec"]["triggers"]]
    # its own queues (GL chunks, NVENC renders' chunks) ready and waiting for their turn, and the CPU
    # backlog to start from zero
    assert gpu_lists == ["rq:queue:render-gpu", "rq:queue:render-nvenc", f"{backlog}render-gpu",
                         f"{backlog}render-nvenc", "rq:queue:render", f"{backlog}render"]
    cpu_lists = [t["metadata"]["listName"] for t in by_name[("ScaledObject", "reelfarm-worker-cpu")]["spec"]["triggers"]]
    assert cpu_lists == ["rq:queue:render", f"{backlog}render", "rq:queue:jobs"]
    assert gpu["containers"][0]["command"][:4] == ["reelfarm", "worker", "--queues", "render-gpu,render"]


def test_the_api_is_taken_out_of_service_before_it_stops_and_exits_within_its_grace_period() -> None:
    """api/server.py, "Stopping": SIGTERM makes /readyz 503 and starts the drain; the listener closes
    at its end; the process is gone by the graceful timeout, counted from SIGTERM."""
    from reelfarm.api.server import DRAIN_SEC, GRACEFUL_SEC, STOP_MARGIN_SEC

    by_name = {(r["kind"], r["metadata"]["name"]): r for r in resources()}
    pod = by_name[("Deployment", "reelfarm-api")]["spec"]["template"]["spec"]
    api = pod["containers"][0]
    env = {e["name"]: e["value"] for e in api.get("env", [])}
    drain = float(env.get("REELFARM_DRAIN_SEC", DRAIN_SEC))
    graceful = int(env.get("REELFARM_GRACEFUL_SEC", GRACEFUL_SEC))
    assert not {"--drain-sec", "--graceful-sec"} & set(api["command"])
    assert drain + STOP_MARGIN_SEC < graceful  # as `reelfarm serve` requires
    probe = api["readinessProbe"]
    assert probe["httpGet"]["path"] == "/readyz"
    # probed every periodSeconds, unready after failureThreshold 503s: before the drain ends
    assert probe["periodSeconds"] * probe["failureThreshold"] <= drain
    sleep, seconds = api["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep == "sleep"
    assert pod["terminationGracePeriodSeconds"] >= int(seconds) + graceful + 5

    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["api"]
    environment = compose.get("environment", {})
    assert "REELFARM_GRACEFUL_SEC" not in environment and "--graceful-sec" not in compose["command"]
    assert int(compose["stop_grace_period"].removesuffix("s")) >= GRACEFUL_SEC + 5


@pytest.mark.parametrize("dockerfile", sorted((DEPLOY / "docker").glob("Dockerfile*")), ids=lambda p: p.name)
def test_dockerfiles_pass_hadolint(dockerfile: Path) -> None:
    run = subprocess.run([str(Path(sys.executable).parent / "hadolint"), "--config",
                          str(DEPLOY / "docker" / "hadolint.yaml"), str(dockerfile)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    text = dockerfile.read_text()
    assert re.search(r"^USER 10001$", text, re.MULTILINE) and text.count("FROM ") == 2  # non-root, multi-stage


def test_shell_scripts_pass_shellcheck() -> None:
    run = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), str(ROOT / "scripts" / "setup-system.sh"),
                          str(ROOT / ".ci" / "run")], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_grafana_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "reelfarm-farm.json").read_text())
    exported = set()
    for module in ("api/metrics.py", "farm/runtime/metrics.py"):
        exported |= set(re.findall(r'"(reelfarm_[a-z_]+)"', (ROOT / module).read_text()))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    for expr in exprs:
        for name in re.findall(r"reelfarm_[a-z_]+", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            assert base in exported or base.removesuffix("_total") in exported, name
