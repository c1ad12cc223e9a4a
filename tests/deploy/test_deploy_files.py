"""deploy/ checked offline, with no Docker daemon and no cluster: the compose file against the
Compose Specification's schema, every Kubernetes manifest against the API schemas of the version
we target (strict: unknown fields fail), KEDA ScaledObjects against KEDA's own CRD schema, the
Dockerfiles with hadolint, the shell scripts with shellcheck, and the Grafana dashboard as JSON
whose queries name only metrics the code exports."""
from __future__ import annotations

import fnmatch
import json
import os
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
APPLY_SECRET = DEPLOY / "k8s" / "apply-secret.sh"
# a version (1.2.3, 16.6, a dated RELEASE tag) or a digest; never a moving tag such as latest or 16
PINNED = re.compile(r"^[^:@\s]+(:(\d+\.\d+(\.\d+)*[-\w.]*|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ))?"
                    r"(@sha256:[0-9a-f]{64})?$")


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
    # each API pod migrates the schema first (an advisory lock orders them), then serves --no-migrate
    api_pod = by_name[("Deployment", "reelfarm-api")]["spec"]["template"]["spec"]
    assert [c["command"] for c in api_pod["initContainers"]] == [["reelfarm", "migrate"]]
    assert "--no-migrate" in api["command"] and not [r for r in resources() if r["kind"] == "Job"]
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
                          str(ROOT / ".ci" / "run"), str(APPLY_SECRET)], capture_output=True, text=True, check=False)
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


# -- the build context, pinned images, the Secret ---------------------------------------------------

def _ignored(patterns: list[str], path: str) -> bool:
    """Whether .dockerignore's ``patterns`` keep ``path`` (relative, with /) out of the build context:
    a pattern matches a path or one of the folders above it, component by component; a leading
    ``**/`` matches at any depth (the subset of Docker's rules the file uses)."""
    parts = path.split("/")
    for pattern in patterns:
        anywhere = pattern.startswith("**/")
        wanted = pattern.removeprefix("**/").split("/")
        starts = range(len(parts)) if anywhere else range(1)
        for start in starts:
            chunk = parts[start:start + len(wanted)]
            if len(chunk) == len(wanted) and all(fnmatch.fnmatchcase(p, w) for p, w in zip(chunk, wanted, strict=True)):
                return True
    return False


def _dockerignore() -> list[str]:
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_build_context_leaves_out_the_virtualenv_git_and_data_but_nothing_an_image_copies() -> None:
    patterns = _dockerignore()
    assert not any(p.startswith("!") for p in patterns)  # no exceptions: _ignored need not know them
    for kept_out in (".venv/lib/python3.11/site-packages/x.py", ".git/HEAD", ".reelfarm/reelfarm.db",
                     ".reelfarm/secret_key", "data/files/renders/r/video.mp4", "benchmarks/results/x.json",
                     "tests/artifacts/console/a.png", "api/__pycache__/app.cpython-311.pyc", "x/.reelfarm/y",
                     "reelfarm.egg-info/PKG-INFO", "tests/typescript/node_modules/a/b.js"):
        assert _ignored(patterns, kept_out), kept_out
    copied = []
    for dockerfile in sorted((DEPLOY / "docker").glob("Dockerfile*")):
        for line in dockerfile.read_text().splitlines():
            if line.startswith("COPY ") and "--from=" not in line:
                copied += line.split()[1:-1]
    assert {"pyproject.toml", "renderer", "api", "reelfarm"} <= set(copied)
    tracked = subprocess.run(["git", "ls-files", "--", *copied], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert len(tracked) > 100
    assert [path for path in tracked if _ignored(patterns, path)] == []
    # the context as this checkout would send it: folders left out are not even walked
    size = 0
    for folder, dirs, files in os.walk(ROOT):
        here = os.path.relpath(folder, ROOT)
        dirs[:] = [d for d in dirs if not _ignored(patterns, os.path.normpath(os.path.join(here, d)))]
        size += sum(os.path.getsize(os.path.join(folder, f)) for f in files
                    if not _ignored(patterns, os.path.normpath(os.path.join(here, f)))
                    and not os.path.islink(os.path.join(folder, f)))
    assert size < 50 * 2**20, f"{size / 2**20:.0f} MiB"


def _resolved(image: str, dockerfile: str) -> str:
    """A FROM line's image with its ``${ARG}`` replaced by the ARG's default (what a build without
    ``--build-arg`` uses)."""
    defaults = dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile, re.MULTILINE))
    return re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], image)


def test_base_images_and_services_are_pinned_by_version_or_digest() -> None:
    bases = [_resolved(line.split()[1], p.read_text()) for p in sorted((DEPLOY / "docker").glob("Dockerfile*"))
             for line in p.read_text().splitlines() if line.startswith("FROM ")]
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    images = bases + [service["image"] for service in services.values() if "image" in service]
    assert len(images) >= 10 and any(image.startswith("minio/minio:") for image in images)
    for image in images:
        assert ":" in image.split("/")[-1] or "@sha256:" in image, image
        assert PINNED.match(image) and not image.endswith(":latest"), image
    overlay = yaml.safe_load((DEPLOY / "k8s" / "overlays" / "production" / "kustomization.yaml").read_text())
    pinned = {entry["name"]: f"{entry['newName']}:{entry['newTag']}" for entry in overlay["images"]}
    used = {c["image"] for r in resources() if r["kind"] in ("Deployment", "Job")
            for c in r["spec"]["template"]["spec"]["containers"]}
    assert used <= set(pinned), used - set(pinned)
    assert all(PINNED.match(image) for image in pinned.values()), pinned


@pytest.fixture
def kubectl(tmp_path: Path) -> Path:
    """A ``kubectl`` that keeps what it is asked (arguments, standard input) in ``tmp_path``."""
    stub = tmp_path / "bin" / "kubectl"
    stub.parent.mkdir()
    stub.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(tmp_path / 'kubectl.json')!r}, 'w').write(json.dumps("
                    "{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))\n")
    stub.chmod(0o755)
    return tmp_path


def _apply_secret(kubectl: Path, **values: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{kubectl / 'bin'}:/usr/bin:/bin", **values}
    return subprocess.run([str(APPLY_SECRET)], env=env, capture_output=True, text=True, check=False, timeout=30)


GOOD = {"REELFARM_DATABASE_URL": "postgresql+psycopg2://reelfarm:p&ss\\w\"rd$x@db.internal:5432/reelfarm",
        "REELFARM_SECRET_KEY": "Zq8" * 15, "AWS_ACCESS_KEY_ID": "AKIAREELFARM0001",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t/with+chars='and'", "REELFARM_METRICS_TOKEN": "m" * 32}


@pytest.mark.parametrize(("changed", "said"), [
    ({"REELFARM_SECRET_KEY": None}, "REELFARM_SECRET_KEY is not set"),
    ({"AWS_SECRET_ACCESS_KEY": ""}, "AWS_SECRET_ACCESS_KEY is not set"),
    ({"REELFARM_DATABASE_URL": "postgresql+psycopg2://reelfarm:CHANGE-ME@postgres:5432/reelfarm"},
     "REELFARM_DATABASE_URL still holds a placeholder"),
    ({"REELFARM_SECRET_KEY": "CHANGE-ME-to-40-or-more-random-characters-xxxxxxxx"},
     "REELFARM_SECRET_KEY still holds a placeholder"),
    ({"AWS_ACCESS_KEY_ID": "${AWS_ACCESS_KEY_ID}"}, "AWS_ACCESS_KEY_ID still holds a placeholder"),
    ({"REELFARM_SECRET_KEY": "short-but-real-9f3k"}, "REELFARM_SECRET_KEY has 19 characters; it needs 40"),
    ({"REELFARM_METRICS_TOKEN": "m" * 31}, "REELFARM_METRICS_TOKEN has 31 characters; it needs 32"),
])
def test_the_secret_is_not_applied_with_a_placeholder_or_a_missing_value(
        kubectl: Path, changed: dict[str, str | None], said: str) -> None:
    values = {k: v for k, v in {**GOOD, **changed}.items() if v is not None}
    run = _apply_secret(kubectl, **values)
    assert run.returncode == 1 and said in run.stderr and "nothing applied" in run.stderr, run.stderr
    assert not (kubectl / "kubectl.json").exists()  # kubectl never ran


def test_the_secret_is_applied_from_the_environment_with_its_values_intact(kubectl: Path) -> None:
    run = _apply_secret(kubectl, **GOOD)
    assert run.returncode == 0, run.stderr
    asked = json.loads((kubectl / "kubectl.json").read_text())
    assert asked["argv"] == ["apply", "--namespace", "reelfarm", "-f", "-"]
    secret = yaml.safe_load(asked["stdin"])
    kubernetes_validate.validate(secret, K8S_VERSION, strict=True)
    assert secret["metadata"]["name"] == "reelfarm-secrets" and secret["stringData"] == GOOD
    assert GOOD["AWS_SECRET_ACCESS_KEY"] not in run.stdout + run.stderr  # no value printed
    # every workload reads that Secret, and no applied manifest holds a Secret of its own
    readers = [c for r in resources() if r["kind"] in ("Deployment", "Job")
               for c in r["spec"]["template"]["spec"]["containers"]]
    assert readers and all({"secretRef": {"name": "reelfarm-secrets"}} in c.get("envFrom", []) for c in readers)
    applied = [d for p in MANIFESTS if p.name != "secret.template.yaml" for d in documents(p)]
    assert not [d for d in applied if d["kind"] == "Secret"]
    assert "CHANGE-ME" not in json.dumps(resources())  # no placeholder value left in any manifest
