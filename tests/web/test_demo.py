"""The README's demo as a newcomer runs it: `make run`'s deploy/run-local.sh in one shell (two local chains,
eth and the rollup), then `deploy/simulate-donations.sh --count 20 --interval 5` in a second shell with the
same (plain) environment, until the donations it sent, on both chains, are confirmed by the local system.

The local system runs from a copy of this checkout made of symlinks (its own var/: chain state, logs,
beat schedule), with its own database, web and chain ports; the test's Redis db is flushed around it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg2
import pytest
import requests
from django.conf import settings

from dws_project.redis_client import get_redis
from tests.chain import PORT_RANGE, free_port
from tests.processes import ROOT

README_DEMO = "deploy/simulate-donations.sh --count 20 --interval 5"
SENT_BEFORE_CTRL_C = 3  # the README's form, interrupted after a few donations (20 take 100 s)
DONATION_LINE = re.compile(r"^donation \d+/20: (0x[0-9a-f]{40}) gave \S+ \w+ on (\w+) \(tx (0x[0-9a-f]{64})\)$")


class Output:
    """A process's combined output, read as it comes (for waiting on a line and for failure messages)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        self._reader = threading.Thread(target=lambda: self.lines.extend(line.rstrip("\n") for line in stream))
        self._reader.start()

    def text(self) -> str:
        return "\n".join(self.lines[-80:])


def shell_environment(**extra: str) -> dict[str, str]:
    """A newcomer's shell: none of dws's variables set, only what this test must move off the defaults."""
    prefixes = ("DWS_", "DJANGO_", "ETH_", "DATABASE_", "REDIS_", "TEST_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return env | {"PYTHONUNBUFFERED": "1"} | extra


def administer(*statements: str) -> None:
    conn = psycopg2.connect("postgres://postgres@127.0.0.1:5432/postgres")
    conn.autocommit = True
    try:
        with conn.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        conn.close()


@pytest.fixture
def local_database() -> Iterator[str]:
    name = f"{settings.DATABASES['default']['NAME']}_demo"
    administer(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    yield f"postgres://postgres@127.0.0.1:5432/{name}"
    administer(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """This checkout, file for file, except var/ (`make run`'s state stays the developer's)."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in ("var", ".git"):
            (copy / entry.name).symlink_to(entry)
    return copy


def stop(process: subprocess.Popen[str], sig: int = signal.SIGINT) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def wait_for(condition: Callable[[], bool], timeout: float, what: str, output: Output) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}; output:\n{output.text()}"
        time.sleep(1)


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).ok
    except requests.RequestException:  # refused, or accepted by a server still starting: not yet
        return False


@pytest.mark.timeout(280)
def test_the_readme_demo_next_to_make_run_gets_its_donations_confirmed(local_database, checkout) -> None:
    """About 60 s, the suite's longest: it is the README's newcomer path end to end (`make run`'s two anvils,
    worker, beat and web started as the script starts them, the demo's donations confirmed on both chains),
    which no shorter test covers."""
    get_redis().flushdb()
    web_port = free_port()
    chain_port = free_port(range(web_port + 1, PORT_RANGE[-1] + 1))
    rollup_port = free_port(range(chain_port + 1, PORT_RANGE[-1] + 1))
    redis_url = settings.CONFIG.redis_url
    # First shell: `make run` (deploy/run-local.sh), moved to this test's database, Redis db and ports.
    first_shell = shell_environment(
        DATABASE_URL=local_database,
        REDIS_URL=redis_url,
        DWS_WEB_PORT=str(web_port),
        DWS_LOCAL_CHAIN_PORT=str(chain_port),
        DWS_LOCAL_ROLLUP_PORT=str(rollup_port),
        DWS_WEB_WORKERS="1",
    )
    system = subprocess.Popen(
        ["deploy/run-local.sh"],
        cwd=checkout,
        env=first_shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    system_output = Output(system)
    demo: subprocess.Popen[str] | None = None
    try:
        wait_for(
            lambda: any(line.startswith("dws is running") for line in system_output.lines) or system.poll() is not None,
            90,
            "make run did not start",
            system_output,
        )
        assert system.poll() is None, system_output.text()
        base = f"http://127.0.0.1:{web_port}"
        # the banner comes once the web process answers (issue 36: it came a few seconds before)
        assert answers(base), "make run said it was running before the web process answered"
        # without any set-up, the page offers both networks, the rollup with the RPC URL a wallet may add
        page = requests.get(base, timeout=5).text
        assert re.findall(r'class="network-option" data-chain="(\w+)"', page) == ["eth", "rollup"]
        assert f'"walletRpcUrl": "http://127.0.0.1:{rollup_port}"' in page

        # Second shell: the same plain environment, the command exactly as the README shows it.
        demo = subprocess.Popen(
            README_DEMO.split(),
            cwd=ROOT,
            env=first_shell,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        demo_output = Output(demo)
        wait_for(
            lambda: (
                sum(bool(DONATION_LINE.match(line)) for line in demo_output.lines) >= SENT_BEFORE_CTRL_C
                or demo.poll() is not None
            ),
            60,
            "the demo sent nothing",
            demo_output,
        )
        assert demo.poll() is None, f"the demo stopped:\n{demo_output.text()}"
        stop(demo)  # Ctrl-C in the second shell
        sent = [m.groups() for m in map(DONATION_LINE.match, demo_output.lines) if m]
        assert len(sent) >= SENT_BEFORE_CTRL_C
        assert {chain for _, chain, _ in sent} == {"eth", "rollup"}  # the demo takes turns over both

        def confirmed() -> bool:
            for donor, chain, tx in sent:
                answer = requests.get(f"{base}/user/data/{donor}", timeout=5)
                statuses = {(d["chain"], d["tx_hash"]): d["status"] for d in answer.json()["donations"]}
                if statuses.get((chain, tx)) != "confirmed":
                    return False
            return True

        # The finalized crawler runs every 60 s: each donation the demo sent is confirmed within its cadence.
        wait_for(confirmed, 150, "the demo's donations were not all confirmed", system_output)
        campaign = requests.get(f"{base}/donation/data", timeout=5).json()
        assert int(campaign["tokens"]) > 0
    finally:
        if demo is not None:
            stop(demo, signal.SIGTERM)
        stop(system)
        get_redis().flushdb()
