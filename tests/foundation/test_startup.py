"""Each process opens the database once at start and stops, with a redacted reason, when it cannot."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

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
