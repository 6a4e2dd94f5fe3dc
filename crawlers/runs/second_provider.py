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

from crawlers.chain.outcomes import NoEvidence, NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import tip_block
from crawlers.record.cursors import cursor_get
from crawlers.runs.check_status import AGREEING, DISAGREEING, LAGGING, RANGE, TIP, WAITING, note_check
from crawlers.runs.results import CrawlResult
from crawlers.scan.agreement import Disagreement, RangeClaim, cross_check
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


class CheckSilent(NoEvidenceError):
    """The check provider gave no evidence for its finalized block: the finalized crawler waits for it."""

    def __init__(self, outcome: NoEvidence, check: RpcClient) -> None:
        super().__init__(outcome)
        self.args = (
            f"check provider {check.origin} gave no evidence for its finalized block ({outcome.describe()}); "
            "waiting: nothing is confirmed until it answers",
        )


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
        tip = _within_check(check, chain, label, tip)
    return client, tip


def _within_check(check: RpcClient, chain: ChainSettings, label: str, ours: int) -> int:
    """How far the finalized crawler may go: the lower of both providers' finalized blocks. A check provider
    that does not say is waited for (NoEvidenceError, naming it), one that trails ours too once nothing is
    left to confirm below its finalized block (WARNING); both shown on /health (crawlers/runs/check_status.py)."""
    try:
        theirs = tip_block(check, finalized=True, chain=chain)
    except NoEvidenceError as exc:
        silent = CheckSilent(exc.outcome, check)
        note_check(chain, check.origin, WAITING, source=TIP, reason=str(silent))
        raise silent from exc
    lag = max(ours - theirs, 0)
    cursor = cursor_get(chain=chain.name, label=label) if lag else None
    if cursor is not None and theirs <= cursor.value:
        why = f"its finalized block {theirs} trails ours ({ours}) by {lag}"
        why += "; nothing past it is confirmed until it catches up"
        logger.warning("crawl %s: waiting for the check provider %s: %s", label, check.origin, why)
        note_check(chain, check.origin, LAGGING, source=TIP, reason=why, finalized=theirs, lag_blocks=lag)
    else:
        if lag:
            logger.info(
                "crawl %s: the check provider's finalized block %d trails ours (%d); going as far as it",
                label,
                theirs,
                ours,
            )
        note_check(chain, check.origin, AGREEING, source=TIP, finalized=theirs, lag_blocks=lag)
    return min(ours, theirs)


def agreed(check: RpcClient, client: RpcClient, chain: ChainSettings, claim: RangeClaim, result: CrawlResult) -> bool:
    """Whether the check provider's own answers show what is about to be recorded (else the run holds,
    and says why)."""
    verdict = cross_check(check, chain, claim)
    if verdict is None:
        through = claim.closing.number if claim.closing else None
        note_check(chain, check.origin, AGREEING, source=RANGE, checked_through=through)
        return True
    if isinstance(verdict, Disagreement):
        result.held = verdict.describe(client.origin, check.origin)
        logger.critical("crawl %s: %s; holding, nothing is confirmed until they agree", result.label, result.held)
        note_check(chain, check.origin, DISAGREEING, source=RANGE, reason=result.held)
    else:
        result.held = f"check provider {check.origin} gave no evidence: {verdict.describe()}; waiting"
        result.waiting_for_check = True
        logger.warning("crawl %s: %s", result.label, result.held)
        note_check(chain, check.origin, WAITING, source=RANGE, reason=result.held)
    return False
