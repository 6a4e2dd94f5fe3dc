"""Freeze on drift: a `reconcile` that finds the records disagreeing with the chain pauses the campaign.

The pause is the operators' own (`campaign_pause`), with the reason recorded, so the admin and /health
show why; resuming stays a human decision. Blocks the provider would not give are "not checked", not
drift: a flaky provider never pauses the sale. DWS_FREEZE_ON_DRIFT=off keeps the ERROR line (for an
alert) and leaves the campaign as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings

from donations.services import campaign_pause

logger = logging.getLogger("dws.crawlers")

FREEZER = "reconcile (freeze on drift)"
SHOWN = 3  # discrepancies quoted in the log line and the reason; all of them are in the reconcile run


def drift_of(discrepancies: Sequence[str], *, not_drift: Sequence[str]) -> list[str]:
    """The discrepancies that are drift: everything but `not_drift` (blocks left unchecked for want of
    evidence, and open unexplained inflows waiting for an operator, see crawlers/record/inflows.py)."""
    excluded = set(not_drift)
    return [line for line in discrepancies if line not in excluded]


def freeze_on_drift(*, chain: str, from_block: int, to_block: int, drift: Sequence[str]) -> bool:
    """Pause the one campaign when reconcile found `drift` in from_block..to_block of any chain (and the
    setting allows); True when this paused it."""
    if not drift:
        return False
    quoted = "; ".join(drift[:SHOWN]) + (f"; and {len(drift) - SHOWN} more" if len(drift) > SHOWN else "")
    reason = f"reconcile found drift in blocks {from_block}..{to_block} of {chain}: {quoted}"
    if not settings.CONFIG.freeze_on_drift:
        logger.error("drift found, campaign left running (DWS_FREEZE_ON_DRIFT=off): %s", reason)
        return False
    paused = campaign_pause(operator=FREEZER, reason=reason, chain=chain)
    state = "campaign paused; resume it in the admin once explained" if paused else "campaign was already paused"
    logger.error("drift found, %s: %s", state, reason)
    return paused
