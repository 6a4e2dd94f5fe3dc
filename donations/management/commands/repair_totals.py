"""`manage.py repair_totals`: the campaign row and every donor's totals recomputed from the confirmed
donations, under the campaign lock (donations/repair.py); prints what moved."""

from __future__ import annotations

import getpass
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from donations.repair import totals_repair


class Command(BaseCommand):
    help = "Recompute donation_stats and every user_data row from the confirmed donations (under the campaign lock)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--operator", help="who runs the repair, for the log (default: the system user)")

    def handle(self, *args: Any, **options: Any) -> None:
        operator = options["operator"] or f"{getpass.getuser()} (manage.py)"
        repair = totals_repair(operator=operator, tiers=settings.CONFIG.sale_tiers)
        for line in repair.lines():
            self.stdout.write(line)
