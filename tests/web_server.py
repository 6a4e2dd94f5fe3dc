"""A real gunicorn serving this checkout against the test database and Redis, for tests about workers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import requests
from django.conf import settings

from tests.chain import free_port
from tests.processes import ROOT


@contextmanager
def gunicorn(
    *, workers: int = 2, env: Mapping[str, str] | None = None, host: str = "127.0.0.1", deploy_config: bool = False
) -> Iterator[str]:
    """Start gunicorn (sync workers, tests.settings) and yield its base URL; stopped on exit.

    `host` is what it binds (`::` for a dual-stack listener: IPv4 peers arrive as ::ffff:a.b.c.d);
    `deploy_config` runs it with deploy/gunicorn.conf.py, as production does (bind and workers still
    come from here)."""
    db = settings.DATABASES["default"]
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": settings.CONFIG.redis_url,
        **(env or {}),
    }
    port = free_port()
    binary = str(Path(sys.executable).with_name("gunicorn"))
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    command = [binary, "dws_project.wsgi", "--bind", bind, "--workers", str(workers)]
    if deploy_config:
        command[1:1] = ["-c", str(ROOT / "deploy" / "gunicorn.conf.py")]
    # TEST_GUNICORN_LOG=<file>: keep the server's log (for debugging a test); otherwise it is dropped.
    log_path = os.environ.get("TEST_GUNICORN_LOG")
    log_file = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [*command, "--log-level", "warning"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=log_file,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/live", timeout=2).raise_for_status()
                break
            except requests.RequestException:
                assert server.poll() is None, "gunicorn exited at start"
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        if log_path:
            log_file.close()  # type: ignore[union-attr]
