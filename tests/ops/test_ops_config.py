"""The operations variables are validated at start like every other: a bad value stops the process."""

from __future__ import annotations

import pytest

from tests.processes import base_environment, leaked_secrets, run_manage


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DWS_FREEZE_ON_DRIFT", "maybe"),
        ("DWS_FREEZE_ON_DRIFT", "yes please"),
        ("DWS_METRICS_PORT", "0"),
        ("DWS_METRICS_PORT", "70000"),
        ("DWS_METRICS_PORT", "nine"),
        ("DWS_METRICS_HOST", "metrics.example.org"),
        ("DWS_HEARTBEAT_DIR", "var/heartbeat"),
        ("DWS_METRICS_TOKEN", "short"),
    ],
)
def test_a_bad_operations_value_stops_the_process_naming_the_variable(variable: str, value: str) -> None:
    env = base_environment()
    env[variable] = value

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert f"configuration error: {variable} " in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_good_operations_values_start() -> None:
    env = base_environment()
    env.update(
        {
            "DWS_FREEZE_ON_DRIFT": "off",
            "DWS_METRICS_PORT": "9808",
            "DWS_METRICS_HOST": "0.0.0.0",
            "DWS_METRICS_TOKEN": "scrape-token-0123456789abcdef",
            "DWS_HEARTBEAT_DIR": "/tmp/dws-heartbeat-test",
        }
    )

    result = run_manage("check", env=env)

    assert result.returncode == 0, result.stderr


def test_worker_metrics_beyond_loopback_need_a_token() -> None:
    env = base_environment()
    env.update({"DWS_METRICS_PORT": "9808", "DWS_METRICS_HOST": "0.0.0.0"})

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "configuration error: DWS_METRICS_TOKEN is required when DWS_METRICS_HOST is not a loopback" in (
        result.stderr
    )


def test_worker_metrics_beyond_loopback_answer_the_token_only() -> None:
    import requests

    from dws_project.metrics_server import serve
    from tests.ops.processes import os_port

    port = os_port()
    server = serve(port, "127.0.0.1", "scrape-token-0123456789abcdef")
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        anonymous = requests.get(url, timeout=10)
        wrong = requests.get(url, headers={"Authorization": "Bearer guess-0123456789abcdefgh"}, timeout=10)
        right = requests.get(url, headers={"Authorization": "Bearer scrape-token-0123456789abcdef"}, timeout=10)
    finally:
        server.shutdown()
        server.server_close()

    assert (anonymous.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert "dws_rpc_requests_total" in right.text or "# HELP" in right.text
