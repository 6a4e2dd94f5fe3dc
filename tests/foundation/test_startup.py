"""Each process opens the database once at start and stops, with a redacted reason, when it cannot."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from tests.processes import DB_PASSWORD, ROOT, base_environment, leaked_secrets, run_manage

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word: a black-holed database."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(port: int, name: str = "postgres") -> str:
    return f"postgres://postgres:{quote(DB_PASSWORD, safe='')}@127.0.0.1:{port}/{name}"


def test_a_black_holed_database_stops_the_command_after_the_connect_timeout(silent_server: int) -> None:
    env = base_environment()
    env["DATABASE_URL"] = database_url(silent_server)

    result = run_manage("migrate", "--check", env=env, timeout=40)

    assert result.returncode == 3
    assert "cannot open the database at postgres://postgres@127.0.0.1" in result.stderr
    assert "connection timed out after 10 s" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_a_refused_connection_stops_the_command_with_the_reason() -> None:
    env = base_environment()
    env["DATABASE_URL"] = database_url(closed_port())

    result = run_manage("migrate", "--check", env=env)

    assert result.returncode == 3
    assert "Connection refused" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_a_missing_database_is_named_without_the_password() -> None:
    env = base_environment()
    env["DATABASE_URL"] = database_url(5432, "no_such_database_dws")

    result = run_manage("check", env=env)

    assert result.returncode == 3
    assert 'database "no_such_database_dws" does not exist' in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_a_server_without_tls_is_reported_as_such_when_ssl_is_required() -> None:
    env = base_environment()
    env["DWS_DB_SSLMODE"] = "require"

    result = run_manage("check", env=env)

    assert result.returncode == 3
    assert "server does not support SSL" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def run_process(command: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)


PROCESSES = {
    "worker": [str(VENV_BIN / "celery"), "-A", "dws_project", "worker", "--pool", "solo", "--loglevel", "INFO"],
    "beat": [str(VENV_BIN / "celery"), "-A", "dws_project", "beat", "--schedule", "/tmp/dws-test-beat-schedule"],
    "web": [
        str(VENV_BIN / "gunicorn"),
        "-c",
        str(ROOT / "deploy" / "gunicorn.conf.py"),
        "--bind",
        "127.0.0.1:0",
        "dws_project.wsgi",
    ],
}


@pytest.mark.parametrize("process", sorted(PROCESSES))
def test_every_process_refuses_a_bad_configuration(process: str) -> None:
    env = base_environment()
    env["DWS_STABLE_COINS"] = "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:1"

    result = run_process(PROCESSES[process], env)

    assert result.returncode != 0
    assert "configuration error: DWS_STABLE_COINS" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


@pytest.mark.parametrize("process", sorted(PROCESSES))
def test_every_process_stops_when_the_database_is_unreachable(process: str) -> None:
    env = base_environment()
    env["DATABASE_URL"] = database_url(closed_port())

    result = run_process(PROCESSES[process], env)

    assert result.returncode != 0
    assert "cannot open the database" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


@pytest.fixture
def throwaway_redis(tmp_path) -> Iterator[Callable[[str], str]]:
    """Start private redis-servers (never the shared one) with a given maxmemory-policy."""
    started: list[subprocess.Popen] = []

    def start(policy: str) -> str:
        import time

        import redis

        port = closed_port()
        options = ["--maxmemory", "64mb", "--maxmemory-policy", policy, "--dir", str(tmp_path)]
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(server)
        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        return f"redis://127.0.0.1:{port}/0"

    yield start
    for server in started:
        server.terminate()
        server.wait(timeout=10)


def run_web(
    env: dict[str, str], timeout: float = 30, *, until_serving: bool = False
) -> subprocess.CompletedProcess[str]:
    """Start the web process as deploy/start-web does (gunicorn, preloaded) and let it run a moment; with
    `until_serving`, until it answers /live (or exits), then stop it: a loaded machine may take longer than
    any fixed moment to start it, and a SIGTERM before its handlers are in place kills it instead."""
    port = closed_port()
    env = env | {"DWS_WEB_HOST": "127.0.0.1", "DWS_WEB_PORT": str(port), "DWS_WEB_WORKERS": "1"}
    server = subprocess.Popen(
        [str(VENV_BIN / "gunicorn"), "-c", "deploy/gunicorn.conf.py", "dws_project.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if until_serving:
        deadline = time.monotonic() + 90
        while server.poll() is None and time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{port}/live", timeout=2).ok:
                    break
            except requests.RequestException:
                time.sleep(0.2)
    try:
        out, err = server.communicate(timeout=0.5 if until_serving else timeout)
    except subprocess.TimeoutExpired:
        server.terminate()
        out, err = server.communicate(timeout=30)
    return subprocess.CompletedProcess(server.args, server.returncode, out, err)


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_the_web_process_refuses_a_redis_that_may_evict_its_keys(throwaway_redis, policy: str) -> None:
    env = base_environment() | {"REDIS_URL": throwaway_redis(policy)}

    result = run_web(env)

    assert result.returncode != 0
    assert f"has maxmemory-policy {policy}, which may evict job locks" in result.stderr
    assert "set maxmemory-policy to noeviction" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


@pytest.mark.parametrize("policy", ["noeviction", "volatile-ttl"])
def test_the_web_process_starts_on_a_redis_that_keeps_its_keys(throwaway_redis, policy: str) -> None:
    env = base_environment() | {"REDIS_URL": throwaway_redis(policy)}

    result = run_web(env, until_serving=True)  # serving when the test stops it

    assert result.returncode == 0, result.stderr  # stopped by the test (SIGTERM), not by a check
    assert "may evict" not in result.stderr
    assert f"maxmemory-policy {policy}" in result.stderr
