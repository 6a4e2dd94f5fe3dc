"""The rules for referral claims: how long one waits, how often it is looked at, when it counts.

A claim says "the donation in this transaction was referred by this code", signed by its donor. It is
settled from the donation rows the crawlers write:

- attributed: the signer's donation in that transaction is confirmed (only a confirmed donation counts);
- rejected: the transaction is recorded and its donor is someone else;
- expired: neither within CLAIM_LIFETIME of the claim (a reverted transaction, one on another chain,
  or a hash made up to clog the queue).

An open (pending) claim is looked at again after a back-off that doubles from CHECK_FIRST_DELAY up to
CHECK_MAX_DELAY, so claims that never settle make way for new ones instead of holding the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from affiliates.models import AttributionStatus
from donations.models import DonationStatus

# Long enough for a donation held by a paused campaign to be confirmed after the pause.
CLAIM_LIFETIME = timedelta(days=7)
# Pending claims one address may hold at once; a donor has a few donations in flight at most.
MAX_OPEN_CLAIMS = 10
CHECK_FIRST_DELAY = timedelta(minutes=1)
CHECK_MAX_DELAY = timedelta(hours=1)


def next_check_delay(checks: int) -> timedelta:
    """The wait before the next look at a claim already looked at `checks` times."""
    return min(CHECK_FIRST_DELAY * (2 ** min(checks, 16)), CHECK_MAX_DELAY)


def claim_outcome(signer: str, recorded: Iterable[tuple[str, str]]) -> str | None:
    """attributed / rejected for (donor, status) rows of the transaction, or None while undecided."""
    rows = list(recorded)
    if not rows:
        return None
    if signer not in {donor for donor, _ in rows}:
        return AttributionStatus.REJECTED
    if any(donor == signer and status == DonationStatus.CONFIRMED for donor, status in rows):
        return AttributionStatus.ATTRIBUTED
    return None
