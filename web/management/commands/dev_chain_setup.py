"""`manage.py dev_chain_setup`: the local dev chains of `make run`, ready for donations."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from web.dev_chain import DevChain, DevChainError, dev_chain_setup


class Command(BaseCommand):
    help = (
        "On every configured chain, each a local development chain (chain id 31337 or 1337; refused on any "
        "other): deploy the test USDT/USDC contracts where the chain's coins variable expects them and fund "
        "anvil's dev accounts with them."
    )

    def handle(self, *args: object, **options: object) -> None:
        for chain in settings.CONFIG.chains:
            try:
                report = dev_chain_setup(DevChain(chain.rpc_url), chain)
            except DevChainError as exc:
                raise CommandError(f"chain {chain.name}: {exc}") from None
            deployed = ", ".join(report.deployed) or "none (already there)"
            self.stdout.write(
                f"dev chain {chain.name} ({report.chain_id}): contracts deployed: {deployed}; "
                f"{len(report.funded)} coin balance(s) funded"
            )
