"""The Prometheus files in deploy/prometheus, checked offline with Prometheus's own promtool: the alert
rules parse (``promtool check rules``) and fire as meant against series shaped like the real metrics
(``promtool test rules alerts_test.yml``); the scrape configuration parses (``promtool check
config``) and its jobs find the pods and ports the Kubernetes manifests define. That every metric
and label the rules use is exported by a real farm is tests/e2e/test_alert_metrics.py's to show.

promtool comes with Debian's ``prometheus`` package (scripts/setup-system.sh --test)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
K8S = ROOT / "deploy" / "k8s" / "base"
SCRAPE_LABELS = {"job", "instance", "pod"}  # added by Prometheus and the scrape configuration
_SELECTOR = re.compile(r"\b(reelfarm_[a-z_]+)(?:\{([^}]*)\})?")
_MATCHER = re.compile(r'([a-z_]+)\s*(=~|!=|!~|=)\s*"([^"]*)"')
_GROUPED = re.compile(r"\bby \(([^)]*)\) \(\s*(?:[a-z_]+\()?(reelfarm_[a-z_]+)")


def promtool(*args: str, cwd: Path = PROMETHEUS) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: scripts/setup-system.sh --test installs it (Debian's prometheus package)"
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120)


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def rule_usage() -> dict[str, dict[str, set[str]]]:
    """Every reelfarm metric the rules use -> each label they use on it -> the values they match it
    exactly to (empty: grouped by it, or matched by a pattern)."""
    used: dict[str, dict[str, set[str]]] = {}
    for rule in alert_rules():
        expr = " ".join(rule["expr"].split())
        for name, matchers in _SELECTOR.findall(expr):
            labels = used.setdefault(name, {})
            for label, op, value in _MATCHER.findall(matchers or ""):
                labels.setdefault(label, set()).update({value} if op == "=" else set())
        for grouped, name in _GROUPED.findall(expr):
            for label in filter(None, (part.strip() for part in grouped.split(","))):
                used[name].setdefault(label, set())
    return used


def test_the_alert_rules_parse() -> None:
    checked = promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert {rule["labels"]["severity"] for rule in alert_rules()} <= {"critical", "warning", "info"}
    assert all(rule["annotations"].get("summary") for rule in alert_rules())


def test_the_alert_rules_fire_as_their_unit_tests_expect() -> None:
    tested = promtool("test", "rules", "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    cases = yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())["tests"]
    fired = {case["alertname"] for test in cases for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert fired == {rule["alert"] for rule in alert_rules()}, "every rule has a case where it fires"


def test_the_rules_cover_what_an_operator_is_woken_by() -> None:
    usage = rule_usage()
    assert {"reelfarm_node_set_aside", "reelfarm_node_heartbeat_age_seconds", "reelfarm_nodes",
            "reelfarm_workspace_oldest_queued_seconds", "reelfarm_renders", "reelfarm_jobs_total",
            "reelfarm_dispatch_lease_held", "reelfarm_dispatch_paused", "reelfarm_dependency_up"} <= set(usage)
    assert usage["reelfarm_dependency_up"]["dependency"] == {"database", "redis"}
    assert usage["reelfarm_workspace_oldest_queued_seconds"] == {"workspace": set()}  # per workspace
    assert "node" in usage["reelfarm_node_set_aside"] and "node" in usage["reelfarm_jobs_total"]


def _manifest(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def test_the_scrape_configuration_parses_and_finds_the_pods_the_manifests_define(tmp_path: Path) -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"reelfarm-api", "reelfarm-nodes"}
    assert jobs["reelfarm-api"]["authorization"]["type"] == "Bearer"  # the metrics token
    assert "authorization" not in jobs["reelfarm-nodes"]
    pods = {d["metadata"]["name"]: d["spec"]["template"] for f in ("api.yaml", "worker-cpu.yaml", "worker-gpu.yaml")
            for d in _manifest(f) if d["kind"] == "Deployment"}
    for job_name, deployments in (("reelfarm-api", ["reelfarm-api"]),
                                  ("reelfarm-nodes", ["reelfarm-worker-cpu", "reelfarm-worker-gpu"])):
        keep = jobs[job_name]["relabel_configs"][0]
        for deployment in deployments:
            template = pods[deployment]
            assert "prometheus.io/scrape" not in template["metadata"].get("annotations", {})
            ports = [port["name"] for c in template["spec"]["containers"] for port in c.get("ports", [])]
            found = [p for p in ports if re.fullmatch(keep["regex"], f"{template['metadata']['labels']['app.kubernetes.io/name']};{p}")]
            assert len(found) == 1, (job_name, deployment, ports)
    # Debian's promtool is built without Kubernetes discovery: the rest is checked with static targets
    # in its place, and the token file made.
    token = tmp_path / "metrics-token"
    token.write_text("t" * 40)
    for job in config["scrape_configs"]:
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["127.0.0.1:9"]}]
        if "authorization" in job:
            job["authorization"]["credentials_file"] = str(token)
    config["rule_files"] = [str(PROMETHEUS / "alerts.yml")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    checked = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_dashboard_shows_what_the_rules_watch() -> None:
    """Each metric an alert fires on has a panel (the workspaces' chunks aside: the farm status shows them)."""
    import json

    dashboard = json.loads((ROOT / "deploy" / "grafana" / "reelfarm-farm.json").read_text())
    shown = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    watched = set(rule_usage()) - {"reelfarm_workspace_chunks_waiting", "reelfarm_workspace_chunks_running"}
    assert not {name for name in watched if name not in shown}
    failures = next(p for p in dashboard["panels"] if p["title"].startswith("Job failures"))
    assert any('outcome="failed"' in t["expr"] and "node" in t["expr"] for t in failures["targets"])
