"""`manage.py dev_chain_setup`: the local dev chain of `make run`, ready for donations."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from web.dev_chain import DevChain, DevChainError, dev_chain_setup


class Command(BaseCommand):
    help = (
        "On a local development chain (chain id 31337 or 1337; refused on any other): deploy the test "
        "USDT/USDC contracts where DWS_STABLE_COINS expects them and fund anvil's dev accounts with them."
    )

    def handle(self, *args: object, **options: object) -> None:
        config = settings.CONFIG
        try:
            report = dev_chain_setup(DevChain(config.eth_rpc_url), config)
        except DevChainError as exc:
            raise CommandError(str(exc)) from None
        deployed = ", ".join(report.deployed) or "none (already there)"
        self.stdout.write(
            f"dev chain {report.chain_id}: contracts deployed: {deployed}; {len(report.funded)} coin balance(s) funded"
        )
