"""What a crawler worker checks once at its start, beside (never before) its first runs: that each provider
(ETH_RPC_URL, and DWS_RPC_CHECK_URL when set) serves the chain DWS_CHAIN_ID names.

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
from dws_project.chain_settings import chain_settings
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")


def check_chain_ids(process: str, *, config: Config | None = None) -> bool:
    """Whether every configured provider said it serves DWS_CHAIN_ID (False also when one did not say)."""
    chain = chain_settings(config or settings.CONFIG)
    agreed = True
    for role, client in (("provider", make_probe_client(chain)), ("check provider", make_check_client(chain))):
        if client is None:
            continue
        try:
            check_chain_id(client, chain.chain_id)
        except ChainMismatchError as exc:
            logger.critical("%s: %s", process, exc.hold_reason())
            agreed = False
        except NoEvidenceError as exc:
            logger.warning(
                "%s: the %s did not say its chain id at start (%s); every crawler run asks", process, role, exc
            )
            agreed = False
    return agreed


def check_chain_ids_in_background(process: str) -> threading.Thread:
    """The start's look, in a thread of its own: a slow provider never delays the worker's start."""
    thread = threading.Thread(target=check_chain_ids, args=(process,), name="dws-chain-id-at-start", daemon=True)
    thread.start()
    return thread
