"""manage.py serve_price_requests [--once]: the historical price request poll, as the task runs it."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandParser

from dws_project.commands import JobCommand
from prices.tasks import run_serve_price_requests

POLL_INTERVAL_SECONDS = 10


class Command(JobCommand):
    help = "Serve due historical price requests from the venues' one-minute klines (--once: one poll)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="run one poll and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        while True:
            result = run_serve_price_requests()
            if result is None:
                self.stdout.write("serve_price_requests: skipped, another run holds the lock")
            else:
                self.stdout.write(
                    f"serve_price_requests: {result.claimed} claimed, {result.succeeded} succeeded, "
                    f"{result.failed} failed, {result.overdue} overdue"
                )
            if options["once"]:
                return
            time.sleep(POLL_INTERVAL_SECONDS)
