"""Real worker and beat processes for the operations tests, on this test run's database and Redis db."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote

from django.conf import settings as django_settings

from tests.chain import ROOT

# A crawl proving ranges side by side (DWS_RPC_MAX_IN_FLIGHT) and skipping quiet blocks is done in a
# second or two; the tests of a long crawl need one that lasts: every block read in full, one post at a time.
ONE_POST_AT_A_TIME = {"DWS_RPC_MAX_IN_FLIGHT": "1", "TEST_CRAWLER_SPARSE": "0"}


def process_environment(**extra: str) -> dict[str, str]:
    """This run's test database and Redis db, the test settings, and `extra` on top."""
    db = django_settings.DATABASES["default"]
    password = f":{quote(str(db['PASSWORD']), safe='')}" if db["PASSWORD"] else ""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DWS_", "DATABASE_", "ETH_", "PYTEST"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
            "REDIS_URL": django_settings.CONFIG.redis_url,
        }
    )
    env.update(extra)
    return env


class Process:
    """A dws process in its own process group (signals reach the pool children too)."""

    def __init__(self, name: str, command: list[str], env: Mapping[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        self._out = log.open("ab")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=dict(env), stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, what: Callable[[], bool], timeout: float, describe: str) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited while waiting for {describe}:\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {describe} within {timeout:.0f} s:\n{self.text()[-3000:]}")
            time.sleep(0.2)

    def wait_log(self, needle: str, timeout: float = 60.0) -> None:
        self.wait_for(lambda: needle in self.text(), timeout, repr(needle))

    def signal_group(self, signum: int) -> None:
        os.killpg(self.process.pid, signum)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGCONT)
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        self._out.close()


def celery_worker_command(node: str, queues: str, *, concurrency: int = 1) -> list[str]:
    """A prefork Celery worker as deployed, named `node`, without the chatter a test has no use for."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "dws_project",
        "worker",
        "--pool=prefork",
        f"--concurrency={concurrency}",
        "-Q",
        queues,
        "-n",
        node,
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
        "-l",
        "INFO",
    ]


def worker(name: str, queues: str, env: Mapping[str, str], log_dir: Path, *, concurrency: int = 1) -> Process:
    command = celery_worker_command(f"{name}@ops", queues, concurrency=concurrency)
    started = Process(name, command, env, log_dir / f"{name}.log")
    started.wait_log(" ready.")
    return started


def beat(env: Mapping[str, str], log_dir: Path) -> Process:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "dws_project",
        "beat",
        "-l",
        "INFO",
        "--schedule",
        str(log_dir / "celerybeat-schedule"),
    ]
    return Process("beat", command, env, log_dir / "beat.log")


def probe(kind: str, env: Mapping[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "probe", kind, *extra],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def os_port() -> int:
    """A port the OS picks (not the first free one of a fixed range, which parallel test runs race for)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
