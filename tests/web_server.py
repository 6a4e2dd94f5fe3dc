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
def gunicorn(*, workers: int = 2, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start gunicorn (sync workers, tests.settings) and yield its base URL; stopped on exit."""
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
    command = [binary, "dws_project.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    server = subprocess.Popen(
        [*command, "--log-level", "warning"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
