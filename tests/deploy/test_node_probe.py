"""The GPU worker proves its node before it takes work, checked offline: in Kubernetes an init
container and in Compose a one-shot service run `reelfarm node check` with options the real command
accepts, on the GPU worker's image, with the GPU, asking for hardware GL and the worker's queues."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reelfarm.farm.runtime.nodecheck import check_command

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _parses(command: list[str]) -> dict[str, Any]:
    """The options `reelfarm node check` gets from `command`; click refuses any it does not take."""
    assert command[:3] == ["reelfarm", "node", "check"], command
    return dict(check_command.make_context("check", command[3:]).params)


def _gpu_deployment() -> dict[str, Any]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "base" / "worker-gpu.yaml").read_text())
    return next(d for d in docs if d and d["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_the_gpu_worker_pod_starts_only_after_its_node_check_passes() -> None:
    pod = _gpu_deployment()
    worker = pod["containers"][0]
    (check,) = pod["initContainers"]
    params = _parses(check["command"])
    assert params["raster"] == "gl" and params["hardware_gl"] and not params["quick"]
    worker_queues = worker["command"][worker["command"].index("--queues") + 1]
    assert params["queues"] == worker_queues == "render-gpu,render"
    assert check["image"] == worker["image"]
    assert check["resources"]["limits"]["nvidia.com/gpu"] == worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert {"configMapRef": {"name": "reelfarm-config"}} in check["envFrom"]  # REELFARM_ENCODER, as the worker reads it
    assert "secretRef" not in str(check["envFrom"])  # the check reaches no database or storage
    assert check["securityContext"]["readOnlyRootFilesystem"] and {"name": "tmp", "mountPath": "/tmp"} in check[
        "volumeMounts"]


def test_compose_starts_the_gpu_worker_after_a_node_check() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    check, worker = services["gpu-node-check"], services["gpu-worker"]
    params = _parses(check["command"])
    assert params["raster"] == "gl" and params["hardware_gl"] and params["queues"] == "render-gpu,render"
    assert worker["depends_on"]["gpu-node-check"]["condition"] == "service_completed_successfully"
    assert {"migrate", "redis", "bucket"} <= set(worker["depends_on"])
    assert check["image"] == worker["image"] and check["profiles"] == worker["profiles"] == ["gpu"]
    assert check["deploy"]["resources"]["reservations"]["devices"] == worker["deploy"]["resources"]["reservations"][
        "devices"]
    assert check["restart"] == "no"
