"""`manage.py reconcile [--chain N] --from-block A --to-block B`: the records checked against the chain."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from crawlers.runs.reconcile import ReconcileError, reconcile, reconcile_lock
from dws_project.commands import JobCommand
from dws_project.locks import exclusive_run


class Command(JobCommand):
    help = (
        "Check blocks A..B of a chain (finalized and crawled ones) against the records: every transfer to the donation "
        "address recorded once and confirmed, nothing confirmed that is not on chain, the campaign and donor "
        "totals equal to the sums. Prints each discrepancy; exits 1 on any, 0 with a one-line summary."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from-block", type=int, required=True, metavar="A")
        parser.add_argument("--to-block", type=int, required=True, metavar="B")
        self.add_chain_option(parser, every=False)

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        chain = self.chain_chosen(options)
        with exclusive_run(reconcile_lock(chain), ttl=300) as acquired:
            if not acquired:
                raise CommandError(f"another reconcile of {chain} is running; try again when it has finished")
            try:
                report = reconcile(int(options["from_block"]), int(options["to_block"]), chain=chain)
            except ReconcileError as exc:
                raise CommandError(str(exc)) from None
        for line in report.discrepancies:
            self.stdout.write(line)
        if not report.ok:
            raise CommandError(report.summary())
        self.stdout.write(report.summary())
