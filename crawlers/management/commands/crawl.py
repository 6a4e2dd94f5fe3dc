"""`manage.py crawl latest|finalized|old-unconfirmed [--chain N] [--once | --single-block N | --follow]`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import connections

from crawlers.chain.clients import make_client
from crawlers.models import FINALIZED, LATEST
from crawlers.runs.cadence import INTERVALS
from crawlers.runs.crawl import crawl_single_block
from crawlers.runs.follow import BUSY, DATABASE, follow_head
from crawlers.runs.jobs import job_chain, run_crawler, run_old_unconfirmed
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED, JudgeResult
from crawlers.runs.results import CrawlResult, run_title
from dws_project import shutdown
from dws_project.commands import JobCommand


class Command(JobCommand):
    help = (
        "Run a crawler: one run with --once, else a loop at the beat cadence (under the same lock as the "
        "Celery task). Without --chain every configured chain, each under its own lock and in a thread of its "
        "own (a slow provider never delays another chain). --single-block N re-crawls one block without "
        "touching the cursor (--chain may be left out only while one chain is configured). 'latest --follow' "
        "is the head follower in the foreground: each new block crawled as it appears, until SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("crawler", choices=[LATEST, FINALIZED, OLD_UNCONFIRMED])
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--once", action="store_true", help="one run, then exit")
        mode.add_argument("--single-block", type=int, metavar="N", help="re-crawl block N only; the cursor stays")
        mode.add_argument("--follow", action="store_true", help="latest only: follow the head (the worker's loop)")
        self.add_chain_option(parser, every=True)

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        label = str(options["crawler"])
        single = options["single_block"]
        if label == OLD_UNCONFIRMED and single is not None:
            raise CommandError("the old-unconfirmed crawler has no blocks of its own: re-crawl with 'finalized'")
        if single is not None:
            chain = self.chain_chosen(options)
            if int(single) < 0:
                raise CommandError("--single-block needs a block number >= 0")
            result = crawl_single_block(label, int(single), chain=chain)
            self.stdout.write(result.summary())
            if result.held:
                raise CommandError(result.held)
            return
        chains = self.chains_chosen(options)
        if options["follow"]:
            if label != LATEST:
                raise CommandError("--follow is the latest crawler's: the finalized one follows the finalized tag")
            shutdown.stop_on_sigterm()
            self._in_threads(self._follow, chains)
            return
        if len(chains) == 1:
            held = self._loop(label, chains[0], once=bool(options["once"]))
        else:
            held = self._every_chain(label, chains, once=bool(options["once"]))
        if held:
            raise CommandError("; ".join(held))

    def _every_chain(self, label: str, chains: list[str], *, once: bool) -> list[str]:
        """Each chain's loop in a thread of its own; with --once, every chain's one run."""
        held: list[str] = []

        def loop(chain: str) -> None:
            held.extend(self._loop(label, chain, once=once))

        self._in_threads(loop, chains)
        return held

    @staticmethod
    def _in_threads(target: Callable[[str], None], chains: list[str]) -> None:
        """`target(chain)` for each chain in a thread of its own, each with its own database connection."""

        def run(chain: str) -> None:
            try:
                target(chain)
            finally:
                connections.close_all()

        # Daemon threads: Ctrl-C ends the command as it ended the single loop (a block is one transaction).
        threads = [threading.Thread(target=run, args=(chain,), name=f"crawl-{chain}", daemon=True) for chain in chains]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)  # the main thread stays responsive to Ctrl-C

    def _follow(self, chain: str) -> None:
        """Leases of `chain`'s head follower, one after the other, until SIGTERM or Ctrl-C; while another
        follower holds the chain (a worker's), wait and try again."""
        while not shutdown.requested():
            result = follow_head(chain=chain)
            self.stdout.write(result.summary())
            if result.ended in (BUSY, DATABASE):
                time.sleep(INTERVALS[LATEST] / 2)

    def _loop(self, label: str, chain: str, *, once: bool) -> list[str]:
        """Runs of one chain's crawler until shut down (with `once`: one); the holds of a --once run."""
        client = make_client(job_chain(chain))
        while True:
            run: CrawlResult | JudgeResult | None
            if label == OLD_UNCONFIRMED:
                run = run_old_unconfirmed(chain=chain, client=client)
            else:
                run = run_crawler(label, chain=chain, client=client)
            self.stdout.write(
                run.summary() if run else f"crawl {run_title(label, chain)}: another run holds the lock; skipped"
            )
            if once:
                return [run.held] if run is not None and run.held else []
            if shutdown.requested():
                return []
            if not getattr(run, "more_to_do", False):  # behind: go on at once
                time.sleep(INTERVALS[label])
