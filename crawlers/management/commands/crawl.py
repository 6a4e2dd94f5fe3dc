"""`manage.py crawl latest|finalized|old-unconfirmed [--once | --single-block N]`."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from crawlers.chain.clients import make_client
from crawlers.models import FINALIZED, LATEST
from crawlers.runs.cadence import INTERVALS
from crawlers.runs.crawl import crawl_single_block
from crawlers.runs.jobs import run_crawler, run_old_unconfirmed
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED
from dws_project.chain_settings import chain_settings
from dws_project.commands import JobCommand


class Command(JobCommand):
    help = (
        "Run a crawler: one run with --once, else a loop at the beat cadence (under the same lock as the "
        "Celery task). --single-block N re-crawls one block without touching the cursor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("crawler", choices=[LATEST, FINALIZED, OLD_UNCONFIRMED])
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--once", action="store_true", help="one run, then exit")
        mode.add_argument("--single-block", type=int, metavar="N", help="re-crawl block N only; the cursor stays")

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        label = str(options["crawler"])
        single = options["single_block"]
        if label == OLD_UNCONFIRMED and single is not None:
            raise CommandError("the old-unconfirmed crawler has no blocks of its own: re-crawl with 'finalized'")
        if single is not None:
            if int(single) < 0:
                raise CommandError("--single-block needs a block number >= 0")
            result = crawl_single_block(label, int(single))
            self.stdout.write(result.summary())
            if result.held:
                raise CommandError(result.held)
            return
        client = make_client(chain_settings(settings.CONFIG))
        while True:
            run = run_old_unconfirmed(client=client) if label == OLD_UNCONFIRMED else run_crawler(label, client=client)
            self.stdout.write(run.summary() if run else f"crawl {label}: another run holds the lock; skipped")
            if options["once"]:
                if run is not None and run.held:
                    raise CommandError(run.held)
                return
            if not getattr(run, "more_to_do", False):  # behind: go on at once
                time.sleep(INTERVALS[label])
