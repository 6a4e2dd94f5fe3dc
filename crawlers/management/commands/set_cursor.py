"""`manage.py set_cursor latest|finalized N`: the operator's way past a wedged block."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from crawlers.models import FINALIZED, LATEST
from crawlers.services import cursor_get, cursor_set
from crawlers.tasks import job_name
from dws_project.locks import exclusive_run


class Command(BaseCommand):
    help = (
        "Set a crawler's cursor to block N (the last block it has processed): its next run starts at N+1. "
        "Set only the cursor of the crawler that is stuck; see 'a crawler is stuck on a block' in the README."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("crawler", choices=[LATEST, FINALIZED])
        parser.add_argument("block", type=int)

    def handle(self, *args: object, **options: object) -> None:
        label, block = str(options["crawler"]), int(options["block"])  # type: ignore[arg-type]
        if block < 0:
            raise CommandError("the block number must be >= 0")
        # Under the crawler's own lock, so a run in progress cannot write the old position back.
        with exclusive_run(job_name(label)) as acquired:
            if not acquired:
                raise CommandError(f"the {label} crawler is running; try again in a few seconds")
            before = cursor_get(label)
            cursor_set(label, block)
        was = before.value if before else "unset"
        self.stdout.write(f"cursor {label}: {was} -> {block}; the next run starts at block {block + 1}")
