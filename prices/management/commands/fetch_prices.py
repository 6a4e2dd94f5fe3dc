"""manage.py fetch_prices [--once]: the minute price cycle, as the Celery task runs it."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandParser
from django.utils import timezone

from dws_project.commands import JobCommand
from prices.tasks import run_fetch_prices


class Command(JobCommand):
    help = "Fetch the ETH price from the six venues and record this minute's price (--once: one cycle)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="run one cycle and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        while True:
            result = run_fetch_prices()
            if result is None:
                self.stdout.write("fetch_prices: skipped, another run holds the lock")
            elif result.written:
                self.stdout.write(f"fetch_prices: {result.minute.isoformat()} eth {result.aggregate.price}")
            else:
                reason = result.aggregate.reason or "minute already on record"
                self.stdout.write(f"fetch_prices: {result.minute.isoformat()} nothing written ({reason})")
            if options["once"]:
                return
            now = timezone.now()
            time.sleep(60 - now.second - now.microsecond / 1_000_000)  # wake at the next minute
