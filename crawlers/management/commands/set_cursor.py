"""`manage.py set_cursor [--chain N] latest|finalized N`: the operator's way past a wedged block."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import CommandError, CommandParser

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.operator import CursorRefused, set_cursor
from dws_project.commands import JobCommand


class Command(JobCommand):
    help = (
        "Set a crawler's cursor to block N (the last block it has processed): its next run starts at N+1. "
        "Refused beyond the chain head. Set only the cursor of the crawler that is stuck; see "
        'docs/operating.md, "a crawler is stuck on a block".'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("crawler", choices=[LATEST, FINALIZED])
        parser.add_argument("block", type=int)
        self.add_chain_option(parser, every=False)

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        label, block = str(options["crawler"]), int(options["block"])
        chain = self.chain_chosen(options)
        try:
            previous = set_cursor(label, block, chain=chain, operator=f"{getpass.getuser()} (manage.py)")
        except CursorRefused as exc:
            raise CommandError(str(exc)) from None
        was = "unset" if previous is None else previous
        self.stdout.write(f"cursor {label} of {chain}: {was} -> {block}; the next run starts at block {block + 1}")
