"""`manage.py simulate_donations`: a few dev donors giving ETH, USDT and USDC, for a lively demo."""

from __future__ import annotations

import random
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dws_project.chain_settings import UnknownChain
from web.dev_chain import SIMULATED_DONORS, DevChain, DevChainError, simulate_donation


class Command(BaseCommand):
    help = (
        "Send donations of random assets and sizes from anvil's dev accounts to the donation address, on "
        "local development chains only (each node's chain id must be 31337 or 1337; refused otherwise), "
        "taking turns over every configured chain (or only --chain N). The crawlers then record and confirm "
        "them like any other donation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--count", type=int, default=10, help="donations to send (default 10)")
        parser.add_argument(
            "--interval", type=float, default=5.0, help="seconds between donations (default 5; 0: back to back)"
        )
        parser.add_argument(
            "--donors",
            type=int,
            default=4,
            choices=range(1, len(SIMULATED_DONORS) + 1),
            metavar=f"1..{len(SIMULATED_DONORS)}",
            help="how many dev accounts take turns donating (default 4)",
        )
        parser.add_argument("--seed", type=int, default=None, help="random seed, to repeat a run exactly")
        parser.add_argument("--chain", metavar="N", help="only this chain, as DWS_CHAINS names it (default: each)")

    def handle(self, *args: Any, **options: Any) -> None:  # argparse's values, typed by add_arguments
        count, interval = int(options["count"]), float(options["interval"])
        if count < 1 or interval < 0:
            raise CommandError("--count must be at least 1 and --interval at least 0")
        config = settings.CONFIG
        try:
            chains = [config.chain(str(options["chain"]))] if options["chain"] else list(config.chains)
        except UnknownChain as exc:
            raise CommandError(str(exc)) from None
        nodes = {}
        for chain in chains:
            nodes[chain.name] = DevChain(chain.rpc_url)
            try:
                chain_id = nodes[chain.name].require_dev_chain(chain)
            except DevChainError as exc:
                raise CommandError(f"chain {chain.name}: {exc}") from None
            self.stdout.write(f"dev chain {chain.name} ({chain_id}): donations to {chain.donation_address}")
        rng = random.Random(options["seed"])
        donors = SIMULATED_DONORS[: int(options["donors"])]
        self.stdout.write(f"{count} donation(s), taking turns over {', '.join(c.name for c in chains)}")
        for n in range(1, count + 1):
            chain = chains[(n - 1) % len(chains)]
            try:
                donation = simulate_donation(nodes[chain.name], chain, rng, donors)
            except DevChainError as exc:
                raise CommandError(f"donation {n} on {chain.name}: {exc}") from None
            self.stdout.write(
                f"donation {n}/{count}: {donation.donor} gave {donation.amount} {donation.asset.upper()} "
                f"on {chain.name} (tx {donation.tx_hash})"
            )
            if n < count:
                time.sleep(interval)
