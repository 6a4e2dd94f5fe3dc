"""The runs' side of a second provider (DWS_RPC_CHECK_URL): where a run reads from, how far it goes, and
whether the check provider agrees on what it is about to record (crawlers/scan/agreement.py asks it).

* The finalized crawler's tip is the lower of both providers' finalized blocks: a check provider that
  lags is waited for, never a disagreement.
* Before a finalized range (or a single re-crawled block) is recorded, the check provider must agree on
  it; a disagreement holds the run with a CRITICAL line naming both answers, a check provider without an
  answer holds it with a WARNING (it waits).
* The latest crawler reads from the check provider when ours gives no evidence for the head: a donor
  still sees "pending" at once, and confirming it still needs both.
"""

from __future__ import annotations

import logging

from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import tip_block
from crawlers.runs.results import CrawlResult
from crawlers.scan.agreement import Disagreement, RangeClaim, cross_check
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def run_tip(
    client: RpcClient, check: RpcClient | None, chain: ChainSettings, *, label: str, final: bool
) -> tuple[RpcClient, int]:
    """The client this run reads from and its tip. The finalized crawler's tip is the lower of both
    providers' finalized blocks (a check provider that lags is waited for, never a disagreement); the
    latest crawler falls over to the check provider when ours gives no evidence (a donor still sees
    "pending" at once; confirming it waits for both)."""
    try:
        tip = tip_block(client, finalized=final, chain=chain)
    except NoEvidenceError as exc:
        if check is None or final:
            raise
        logger.warning(
            "crawl %s: provider %s gave no evidence (%s); reading from the check provider %s",
            label,
            client.origin,
            exc,
            check.origin,
        )
        return check, tip_block(check, finalized=False, chain=chain)
    if check is not None and final:
        theirs = tip_block(check, finalized=True, chain=chain)
        if theirs < tip:
            logger.info(
                "crawl %s: the check provider's finalized block %d trails ours (%d); going as far as it",
                label,
                theirs,
                tip,
            )
        tip = min(tip, theirs)
    return client, tip


def agreed(check: RpcClient, client: RpcClient, chain: ChainSettings, claim: RangeClaim, result: CrawlResult) -> bool:
    """Whether the check provider's own answers show what is about to be recorded (else the run holds,
    and says why)."""
    verdict = cross_check(check, chain, claim)
    if verdict is None:
        return True
    if isinstance(verdict, Disagreement):
        result.held = verdict.describe(client.origin, check.origin)
        logger.critical("crawl %s: %s; holding, nothing is confirmed until they agree", result.label, result.held)
    else:
        result.held = f"check provider {check.origin} gave no evidence: {verdict.describe()}; waiting"
        logger.warning("crawl %s: %s", result.label, result.held)
    return False
