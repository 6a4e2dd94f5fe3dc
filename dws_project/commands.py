"""The base of the commands that run the system's periodic jobs (crawlers, prices, reconcile), and their
`--chain` option (DESIGN "Chains")."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dws_project.chain_settings import UnknownChain


class JobCommand(BaseCommand):
    """A command that reads the chain or the venues and writes the database, never serves a request.

    Django's system checks would import the URL configuration, and with it the delphi views and the
    signing library (about 0.4 s), before every run of a job that uses neither. The configuration is
    still validated in full when settings load, and the database is checked at start by manage.py.
    """

    requires_system_checks: list[str] = []

    @staticmethod
    def add_chain_option(parser: CommandParser, *, every: bool) -> None:
        what = "every configured chain, each in turn" if every else "allowed only while one chain is configured"
        parser.add_argument("--chain", metavar="N", help=f"the chain, as DWS_CHAINS names it (left out: {what})")

    @staticmethod
    def chains_chosen(options: dict[str, Any]) -> list[str]:
        """The chain --chain names (refused unless configured), or every configured chain."""
        names = list(settings.CONFIG.chain_names)
        chosen = options.get("chain")
        if chosen is None:
            return names
        try:
            return [settings.CONFIG.chain(str(chosen)).name]
        except UnknownChain as exc:
            raise CommandError(str(exc)) from None

    @classmethod
    def chain_chosen(cls, options: dict[str, Any]) -> str:
        """The one chain a command acts on: --chain, which may be left out only while one chain is configured."""
        chosen = cls.chains_chosen(options)
        if len(chosen) > 1:
            raise CommandError(
                f"several chains are configured ({', '.join(chosen)}): name the one to act on with --chain"
            )
        return chosen[0]
