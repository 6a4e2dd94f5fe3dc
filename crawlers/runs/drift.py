"""Freeze on drift: a `reconcile` that finds the records disagreeing with the chain pauses the campaign.

The pause is the operators' own (`campaign_pause`), with the reason recorded, so the admin and /health
show why; resuming stays a human decision. Blocks the provider would not give are "not checked", not
drift: a flaky provider never pauses the sale. DWS_FREEZE_ON_DRIFT=off keeps the ERROR line (for an
alert) and leaves the campaign as it is.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings

from donations.services import campaign_pause

if TYPE_CHECKING:
    from crawlers.runs.reconcile import ReconcileReport

logger = logging.getLogger("dws.crawlers")

FREEZER = "reconcile (freeze on drift)"
SHOWN = 3  # discrepancies quoted in the log line and the reason; all of them are in the reconcile run


def drift_of(report: ReconcileReport) -> list[str]:
    """The discrepancies that are drift: everything but blocks left unchecked for want of evidence and open
    unexplained inflows (waiting for an operator, see crawlers/record/inflows.py)."""
    unchecked = set(report.unchecked) | set(report.awaiting_operator)
    return [line for line in report.discrepancies if line not in unchecked]


def freeze_on_drift(report: ReconcileReport) -> bool:
    """Pause the campaign when `report` found drift (and the setting allows); True when this paused it."""
    drift = drift_of(report)
    if not drift:
        return False
    quoted = "; ".join(drift[:SHOWN]) + (f"; and {len(drift) - SHOWN} more" if len(drift) > SHOWN else "")
    reason = f"reconcile found drift in blocks {report.from_block}..{report.to_block}: {quoted}"
    if not settings.CONFIG.freeze_on_drift:
        logger.error("drift found, campaign left running (DWS_FREEZE_ON_DRIFT=off): %s", reason)
        return False
    paused = campaign_pause(operator=FREEZER, reason=reason)
    state = "campaign paused; resume it in the admin once explained" if paused else "campaign was already paused"
    logger.error("drift found, %s: %s", state, reason)
    return paused
