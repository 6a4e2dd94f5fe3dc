"""`manage.py probe worker|beat`: exit 0 while the process renews its heartbeat, 1 once it is stale."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandParser

from dws_project import heartbeat


class Command(BaseCommand):
    help = (
        "Liveness probe for a worker or beat in this container: exits 0 when its heartbeat "
        "(DWS_HEARTBEAT_DIR/<kind>) was renewed within --max-age seconds, 1 otherwise. "
        "For compose healthchecks and Kubernetes exec probes."
    )
    requires_system_checks: list[str] = []  # a probe runs every few seconds: no checks, no database

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=heartbeat.KINDS)
        parser.add_argument("--max-age", type=float, default=None, help="seconds (default: worker 30, beat 60)")

    def handle(self, *args: object, **options: object) -> None:
        kind = str(options["kind"])
        limit = float(options["max_age"] or heartbeat.STALE_AFTER[kind])  # type: ignore[arg-type]
        age = heartbeat.age(kind)
        if age is None:
            self.stderr.write(f"{kind}: no heartbeat at {heartbeat.heartbeat_path(kind)}")
            sys.exit(1)
        if age > limit:
            self.stderr.write(f"{kind}: heartbeat stale, renewed {age:.0f} s ago (limit {limit:.0f} s)")
            sys.exit(1)
        self.stdout.write(f"{kind}: alive, heartbeat renewed {age:.0f} s ago")
