"""The deployment files match the code: probe paths are our URLs, probe commands our command and its
kinds, the queues the workers consume are the ones tasks are routed to, and the dashboard, the alert
rules and the README name only metrics the code exports (and the README all of them)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import get_commands, load_command_class
from django.urls import reverse

from dws_project import metrics, metrics_collectors
from tests.chain import ROOT
from tests.manual import page_text
from tests.ops.processes import os_port

DEPLOY = ROOT / "deploy"
COMPOSE = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
MANIFESTS = [doc for path in sorted((DEPLOY / "k8s").glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]
DEPLOYMENTS = {doc["metadata"]["name"]: doc for doc in MANIFESTS if doc["kind"] == "Deployment"}


def probe_kinds() -> tuple[str, ...]:
    command = load_command_class(get_commands()["probe"], "probe")
    parser = command.create_parser("manage.py", "probe")
    kind = next(a for a in parser._actions if a.dest == "kind")
    return tuple(kind.choices)


def assert_probe_command(command: list[str], kind: str) -> None:
    assert command[:3] == ["python", "manage.py", "probe"], command
    assert command[3] == kind
    assert kind in probe_kinds()


def defined_metric_names() -> set[str]:
    """The process metrics (dws_project/metrics.py) and the database's, read at scrape time (the collectors)."""
    source = "".join(Path(module.__file__).read_text() for module in (metrics, metrics_collectors))
    return set(re.findall(r'(?:Gauge|Counter|Histogram|GaugeMetricFamily)\(\s*"(dws_[a-z_]+)"', source))


def exported_metric_names() -> set[str]:
    """Every name a scrape can show: the process metrics (with their sample suffixes) and the database's."""
    names = defined_metric_names()
    counters = {m._name for m in vars(metrics).values() if m.__class__.__name__ == "Counter"}
    histograms = {m._name for m in vars(metrics).values() if m.__class__.__name__ == "Histogram"}
    names |= {f"{c}_total" for c in counters}
    names |= {f"{h}_{suffix}" for h in histograms for suffix in ("bucket", "count", "sum")}
    return names


def test_every_compose_service_has_a_health_check():
    services = COMPOSE["services"]
    assert {"db", "redis", "web", "beat"} <= set(services)
    workers = [name for name in services if name.startswith("worker")]
    assert len(workers) >= 2, "one worker per queue"
    for name, service in services.items():
        assert "healthcheck" in service, name
    assert_probe_command(services["web"]["healthcheck"]["test"][1:], "web")
    assert_probe_command(services["beat"]["healthcheck"]["test"][1:], "beat")
    for name in workers:
        assert_probe_command(services[name]["healthcheck"]["test"][1:], "worker")


def consumed_queues(environments: list[dict[str, str]]) -> set[str]:
    return {q for env in environments for q in env["DWS_WORKER_QUEUES"].split(",")}


def routed_queues() -> set[str]:
    return {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {"celery"}


def test_compose_runs_a_worker_for_every_queue():
    workers = [s for name, s in COMPOSE["services"].items() if name.startswith("worker")]
    assert consumed_queues([w["environment"] for w in workers]) == routed_queues()
    assert any(w["environment"]["DWS_WORKER_QUEUES"] == "prices" for w in workers), "prices alone on its worker"


def test_kubernetes_has_a_deployment_per_process_with_probes_and_no_cronjob():
    assert {doc["kind"] for doc in MANIFESTS} == {"Deployment", "Service", "NetworkPolicy"}  # no CronJob
    commands = {}
    for name, deployment in DEPLOYMENTS.items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        commands[name] = container["command"]
        assert "livenessProbe" in container, name
    assert sorted(commands.values()) == sorted(
        [["deploy/start-web"], ["deploy/start-beat"]] + [["deploy/start-worker"]] * len(routed_queues() - {"celery"})
    )
    for command in commands.values():
        assert (ROOT / command[0]).exists()
    assert DEPLOYMENTS["dws-beat"]["spec"]["replicas"] == 1
    assert DEPLOYMENTS["dws-beat"]["spec"]["strategy"]["type"] == "Recreate"


def container(name: str) -> dict:
    return DEPLOYMENTS[name]["spec"]["template"]["spec"]["containers"][0]


def test_kubernetes_probes_match_the_code():
    web = container("dws-web")
    assert web["livenessProbe"]["httpGet"]["path"] == reverse("live")
    assert web["readinessProbe"]["httpGet"]["path"] == reverse("ready")
    assert_probe_command(container("dws-beat")["livenessProbe"]["exec"]["command"], "beat")
    workers = [n for n in DEPLOYMENTS if n.startswith("dws-worker")]
    for name in workers:
        assert_probe_command(container(name)["livenessProbe"]["exec"]["command"], "worker")
        grace = DEPLOYMENTS[name]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= 60  # the SIGTERM test's bound on a worker's exit
    environments = [{e["name"]: e["value"] for e in container(n)["env"]} for n in workers]
    assert consumed_queues(environments) == routed_queues()
    services = [doc for doc in MANIFESTS if doc["kind"] == "Service"]
    assert [s["spec"]["selector"]["component"] for s in services] == ["web"]


@pytest.mark.parametrize(
    "path", ["prometheus/alerts.yml", "grafana/dws-dashboard.json"], ids=["alert rules", "dashboard"]
)
def test_the_dashboard_and_the_alerts_use_exported_metrics(path):
    text = (DEPLOY / path).read_text()
    if path.endswith(".json"):
        json.loads(text)
    else:
        yaml.safe_load(text)
    used = set(re.findall(r"\bdws_[a-z_]+", text))

    assert used
    assert used - exported_metric_names() == set()


def test_the_operating_manual_documents_every_metric():
    manual = page_text("docs/operating.md")
    assert len(defined_metric_names()) >= 20
    for name in defined_metric_names():
        assert f"`{name}" in manual, name


# --- what the deployment exposes (issue 21: medium 4, low 14) ------------------------------------------

DOCKERFILE = (DEPLOY / "Dockerfile").read_text()
LOCK = (DEPLOY / "requirements.lock").read_text()


def dws_services() -> dict[str, dict]:
    return {n: s for n, s in COMPOSE["services"].items() if s.get("command", [""])[0].startswith("deploy/start-")}


def test_compose_publishes_the_web_port_on_loopback_only_and_nothing_else():
    for name, service in COMPOSE["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert COMPOSE["services"]["web"]["ports"] == ["127.0.0.1:8000:8000"]


def test_compose_redis_asks_for_a_password_and_sits_with_postgres_on_an_internal_network():
    assert "--requirepass" in COMPOSE["services"]["redis"]["command"]
    assert COMPOSE["networks"]["backend"]["internal"] is True
    assert COMPOSE["services"]["redis"]["networks"] == ["backend"]
    assert COMPOSE["services"]["db"]["networks"] == ["backend"]
    for name, service in dws_services().items():
        assert service["environment"]["REDIS_URL"].startswith("redis://:${REDIS_PASSWORD"), name
        assert "backend" in service["networks"], name


def test_kubernetes_lets_only_dws_pods_reach_redis_and_postgres():
    policies = {doc["metadata"]["name"]: doc for doc in MANIFESTS if doc["kind"] == "NetworkPolicy"}
    for name, port in (("dws-redis-from-dws-only", 6379), ("dws-postgres-from-dws-only", 5432)):
        (rule,) = policies[name]["spec"]["ingress"]
        assert rule["from"] == [{"podSelector": {"matchLabels": {"app": "dws"}}}]
        assert rule["ports"] == [{"protocol": "TCP", "port": port}]
    web = next(d for n, d in DEPLOYMENTS.items() if n == "dws-web")
    assert web["spec"]["template"]["metadata"]["labels"]["app"] == "dws"


def test_the_image_is_built_from_a_digest_with_hashed_runtime_packages_only():
    (base,) = re.findall(r"^FROM (\S+)", DOCKERFILE, re.M)
    assert re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base)
    assert "pip install --require-hashes --no-deps -r deploy/requirements.lock" in DOCKERFILE
    assert not re.search(r"^(RUN|COPY).*requirements(-dev)?\.txt", DOCKERFILE, re.M)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"tests", "bench", "requirements-dev.txt"} <= set(ignored)


def test_the_lock_pins_every_runtime_requirement_at_its_version_and_no_test_tool():
    def pins(text: str) -> dict[str, str]:
        found = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", text, re.M)
        return {name.lower().replace("_", "-"): version for name, version in found}

    locked = pins(LOCK)
    runtime = pins((ROOT / "requirements.txt").read_text())
    assert {n: locked.get(n) for n in runtime} == runtime, "run `make lock` after changing requirements.txt"
    assert all("--hash=sha256:" in block for block in re.split(r"\n(?=[a-z])", LOCK.strip()))
    tools = pins((ROOT / "requirements-dev.txt").read_text())
    assert not set(tools) & set(locked), "a test or check tool in the production lock"


# --- readiness (issue 22): a worker that crawls nothing is not ready, whatever its heartbeat says ------


def test_compose_health_checks_the_workers_and_beat_for_readiness():
    services = COMPOSE["services"]
    for name in [n for n in services if n.startswith("worker")] + ["beat"]:
        test = services[name]["healthcheck"]["test"][1:]
        assert test[-1] == "--ready", name
        assert_probe_command(test, "beat" if name == "beat" else "worker")


def test_kubernetes_workers_and_beat_have_a_readiness_probe():
    for name in [n for n in DEPLOYMENTS if n.startswith("dws-worker")] + ["dws-beat"]:
        command = container(name)["readinessProbe"]["exec"]["command"]
        assert command[-1] == "--ready", name
        assert_probe_command(command, "beat" if name == "dws-beat" else "worker")
        assert "--ready" not in container(name)["livenessProbe"]["exec"]["command"]  # a provider outage kills nothing


def test_an_overdue_crawler_is_an_alert():
    rules = yaml.safe_load((DEPLOY / "prometheus/alerts.yml").read_text())["groups"][0]["rules"]
    (overdue,) = [r for r in rules if "dws_crawler_overdue" in r["expr"]]
    assert overdue["labels"]["severity"] == "critical"


# --- make run's banner (issue 36): "dws is running" only once the web process answers ------------------


def _slow_web(port: int, delay: float) -> subprocess.Popen[bytes]:
    """A web process that starts answering only after `delay` seconds."""
    code = (
        "import http.server, time\n"
        f"time.sleep({delay})\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')\n"
        "    def log_message(self, *a): pass\n"
        f"http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def _wait_for_web(url: str, pid: int) -> subprocess.CompletedProcess[str]:
    script = f"source deploy/local-env.sh && wait_for_web {url} {pid} && echo answered"
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=90, check=False)


def test_make_run_says_it_is_running_only_once_the_web_process_answers():
    run_local = (DEPLOY / "run-local.sh").read_text()
    assert run_local.index("wait_for_web ") < run_local.index('echo "dws is running')
    port = os_port()
    web = _slow_web(port, delay=1.5)
    try:
        started = time.monotonic()
        result = _wait_for_web(f"http://127.0.0.1:{port}/live", web.pid)
        assert result.stdout.strip() == "answered", result.stderr
        assert time.monotonic() - started >= 1.4
    finally:
        web.kill()
        web.wait()
    # a web process that dies before it answers: make run stops instead of announcing a dead page
    dead = _wait_for_web(f"http://127.0.0.1:{port}/live", web.pid)
    assert dead.returncode != 0
    assert "exited before it answered" in dead.stderr
