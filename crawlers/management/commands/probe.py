"""`manage.py probe worker|beat|web [--ready]`: exit 0 while the process in this container is alive (with
--ready: and able to do its work), 1 otherwise.

worker and beat: their heartbeat (DWS_HEARTBEAT_DIR/<kind>) was renewed within --max-age seconds. With
--ready also the database, Redis and the provider answer and no crawler job is overdue
(crawlers/runs/readiness.py); a readiness probe, for compose's healthcheck and Kubernetes.
web: GET /live on this container's gunicorn answers 200, asked with an allowed Host header (Django
refuses any other, and a probe from 127.0.0.1 would otherwise get 400).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from typing import Any, NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.urls import reverse

from crawlers.runs.readiness import readiness_problems
from dws_project import heartbeat

WEB = "web"


class Command(BaseCommand):
    help = (
        "Liveness probe for the worker, beat or web process in this container: exits 0 when the worker's "
        "or beat's heartbeat was renewed within --max-age seconds (web: /live answers), 1 otherwise. "
        "With --ready (worker, beat): also the database, Redis and the provider answer and no crawler is "
        "overdue. For compose healthchecks and Kubernetes exec probes."
    )
    requires_system_checks: list[str] = []  # a probe runs every few seconds: no checks (--ready: one query)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=(*heartbeat.KINDS, WEB))
        parser.add_argument("--max-age", type=float, default=None, help="seconds (default: worker 30, beat 60)")
        parser.add_argument(
            "--ready", action="store_true", help="readiness: database, Redis, provider, no crawler overdue"
        )

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        kind = str(options["kind"])
        if kind == WEB:
            self._web()
            return
        limit = float(options["max_age"] or heartbeat.STALE_AFTER[kind])
        age = heartbeat.age(kind)
        if age is None:
            self._fail(f"{kind}: no heartbeat at {heartbeat.heartbeat_path(kind)}")
        if age > limit:
            self._fail(f"{kind}: heartbeat stale, renewed {age:.0f} s ago (limit {limit:.0f} s)")
        if options["ready"]:
            problems = readiness_problems(kind, worker_queues=os.environ.get("DWS_WORKER_QUEUES"))
            if problems:
                self._fail("\n".join(f"{kind}: not ready: {problem}" for problem in problems))
            self.stdout.write(f"{kind}: ready, heartbeat renewed {age:.0f} s ago")
            return
        self.stdout.write(f"{kind}: alive, heartbeat renewed {age:.0f} s ago")

    def _web(self) -> None:
        port = os.environ.get("DWS_WEB_PORT", "8000")
        host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*",) and not h.startswith(".")), "localhost")
        request = urllib.request.Request(f"http://127.0.0.1:{port}{reverse('live')}", headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - a fixed local URL
                status = response.status
        except (urllib.error.URLError, OSError) as exc:
            self._fail(f"web: /live did not answer: {type(exc).__name__}")
        if status != 200:
            self._fail(f"web: /live answered {status}")
        self.stdout.write("web: alive")

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(message)
        sys.exit(1)
