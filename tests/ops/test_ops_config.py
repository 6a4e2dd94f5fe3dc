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
            "DWS_HEARTBEAT_DIR": "/tmp/dws-heartbeat-test",
        }
    )

    result = run_manage("check", env=env)

    assert result.returncode == 0, result.stderr
