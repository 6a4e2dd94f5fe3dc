"""What a crawler worker checks once at its start, beside (never before) its first runs, on every chain:
that each provider (the chain's RPC URL, and its check URL when set) serves the chain id configured for
it, that a donation address several chains share is a contract on none or deployed on all of them
(crawlers/runs/address_code.py), and that each coin's configured scale is its contract's decimals()
(crawlers/runs/coin_scales.py).

Every crawler run checks again (crawlers/chain/tips.py: the chain id is asked with the tip) and holds
on a mismatch; this look only says so at once, in the start's log, with the same CRITICAL words. A
provider that does not answer here is no evidence: a WARNING, and the runs ask again.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from crawlers.chain.clients import make_check_client, make_probe_client
from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.tips import ChainMismatchError, check_chain_id
from crawlers.runs.address_code import check_address_codes
from crawlers.runs.coin_scales import check_coin_scales
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")


def check_chain_ids(process: str, *, config: Config | None = None) -> bool:
    """Whether every configured provider of every chain said it serves its chain's id (False also when one
    did not say)."""
    return all([_check_chain_id(process, chain) for chain in (config or settings.CONFIG).chains])


def _check_chain_id(process: str, chain: ChainSettings) -> bool:
    agreed = True
    for role, client in (("provider", make_probe_client(chain)), ("check provider", make_check_client(chain))):
        if client is None:
            continue
        try:
            check_chain_id(client, chain)
        except ChainMismatchError as exc:
            logger.critical("%s: %s", process, exc.hold_reason())
            agreed = False
        except NoEvidenceError as exc:
            logger.warning(
                "%s: the %s of chain %s did not say its chain id at start (%s); every crawler run asks",
                process,
                role,
                chain.name,
                exc,
            )
            agreed = False
    return agreed


def check_chains_in_background(process: str) -> threading.Thread:
    """The start's look, in a thread of its own: a slow provider never delays the worker's start."""

    def work() -> None:
        check_chain_ids(process)
        check_address_codes(process)
        check_coin_scales(process, settings.CONFIG)

    thread = threading.Thread(target=work, name="dws-chains-at-start", daemon=True)
    thread.start()
    return thread
