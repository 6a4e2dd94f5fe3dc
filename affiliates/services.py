"""Affiliate codes, wallet connections and donation attributions (the writes behind the signed API).

Every function takes an address that a signature has already proven the caller controls.
"""

from __future__ import annotations

import logging
import secrets
import string
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from affiliates.models import AffiliateDonation, AttributionStatus, WalletConnection
from affiliates.rules import CLAIM_LIFETIME, MAX_OPEN_CLAIMS, claim_outcome, next_check_delay
from donations.models import Donation, UserData
from dws_project.api_errors import (
    ATTRIBUTION_CONFLICT,
    NO_DONATION_SEEN,
    NOT_THE_DONOR,
    SELF_REFERRAL,
    TOO_MANY_OPEN_CLAIMS,
    UNKNOWN_AFFILIATE_CODE,
    UNKNOWN_CHAIN,
    ApiException,
)

logger = logging.getLogger("dws.affiliates")

CODE_ALPHABET = string.ascii_letters + string.digits
CODE_LENGTH = 11  # 62**11 codes: a collision is rare, and the unique constraint catches it anyway
_COLLISION_RETRIES = 5


def new_affiliate_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def affiliate_code_get_or_create(*, address: str) -> str:
    """The address's affiliate code, created on the first call; only for an address a donation of which
    has been seen (recorded, confirmed or not): NO_DONATION_SEEN otherwise.

    Codes hang off the user_data row, and a user_data row is never made for an address that never
    donated: any key can sign, so rows made for free keys would grow without bound. A donor seen before
    its donation is confirmed has no row yet: it gets one with zero totals, status none and the fresh
    code, in one `INSERT ... ON CONFLICT DO NOTHING`; the crawler's totals upsert fills it in later.
    Concurrent first calls race on that insert, or on a conditional UPDATE for an existing row without a
    code: exactly one sets the code, the others read the winner's. A code another address already holds
    fails the unique constraint (or is skipped by the insert) and is drawn again.
    """
    if not Donation.objects.filter(address=address).exists():
        raise ApiException(NO_DONATION_SEEN)
    for _ in range(_COLLISION_RETRIES):
        row = UserData.objects.filter(address=address).values_list("affiliate_code").first()
        if row is None:
            UserData.objects.bulk_create(
                [UserData(address=address, affiliate_code=new_affiliate_code())], ignore_conflicts=True
            )
            continue
        if row[0]:
            return row[0]
        try:
            with transaction.atomic():
                UserData.objects.filter(address=address, affiliate_code__isnull=True).update(
                    affiliate_code=new_affiliate_code()
                )
        except IntegrityError:
            logger.info("affiliate code collision, drawing another")
    # Either we or a concurrent caller set it by now; read whatever won.
    code = UserData.objects.filter(address=address).values_list("affiliate_code", flat=True).first()
    if not code:
        raise RuntimeError("could not assign an affiliate code")
    return code


def _code_owner(code: str) -> str:
    owner = UserData.objects.filter(affiliate_code=code).values_list("address", flat=True).first()
    if owner is None:
        raise ApiException(UNKNOWN_AFFILIATE_CODE)
    return owner


# One row per address: a new code replaces the old one (and its time); the same code again changes nothing.
_CONNECT = """
INSERT INTO wallet_connection (address, affiliate_code, created_at) VALUES (%s, %s, now())
ON CONFLICT (address) DO UPDATE SET affiliate_code = EXCLUDED.affiliate_code, created_at = EXCLUDED.created_at
WHERE wallet_connection.affiliate_code IS DISTINCT FROM EXCLUDED.affiliate_code
"""


def wallet_connection_create(*, address: str, code: str) -> WalletConnection:
    """Record that `address` arrived through `code` (any visitor, donor or not, may). An address holds
    one connection: a later code replaces the earlier one; the same code again is a no-op."""
    if _code_owner(code) == address:
        raise ApiException(SELF_REFERRAL)
    with connection.cursor() as cursor:
        cursor.execute(_CONNECT, [address, code])
    return WalletConnection.objects.get(address=address)


Recorded = dict[tuple[str, str], list[tuple[str, str]]]


def _recorded(transactions: Iterable[tuple[str, str]]) -> Recorded:
    """(donor, status) of every donation row of each (chain, transaction), in one query."""
    wanted = set(transactions)
    found: Recorded = {}
    rows = Donation.objects.filter(tx_hash__in={tx for _, tx in wanted}).values_list(
        "chain", "tx_hash", "address", "status"
    )
    for chain, tx, address, status in rows:
        if (chain, tx) in wanted:
            found.setdefault((chain, tx), []).append((address, status))
    return found


def _hold_open_claim_slot(signer: str) -> None:
    """Inside a transaction: refuse a new pending claim when the signer already holds MAX_OPEN_CLAIMS.

    A transaction-scoped advisory lock per signer makes the count and the insert one step, so parallel
    requests cannot slip past the bound together.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ["affiliate-claims:" + signer])
    if AffiliateDonation.objects.filter(signer=signer, status=AttributionStatus.PENDING).count() >= MAX_OPEN_CLAIMS:
        raise ApiException(TOO_MANY_OPEN_CLAIMS)


def affiliate_donation_claim(*, signer: str, tx_hash: str, code: str, chain: str | None = None) -> AffiliateDonation:
    """Attribute the donation in `tx_hash` on `chain` (the first chain when None) to `code` on behalf of its
    donor, `signer`.

    If the crawler has recorded the transaction, the signer must be its donor; the claim is attributed
    once the signer's donation is confirmed. Until then it is pending, at most MAX_OPEN_CLAIMS per
    signer, and `affiliate_donations_resolve` settles it (or lets it expire, see affiliates.rules).
    """
    tx_hash = tx_hash.lower()
    if chain is None:
        chain = settings.CONFIG.first_chain.name
    elif chain not in settings.CONFIG.chain_names:
        raise ApiException(UNKNOWN_CHAIN)
    if _code_owner(code) == signer:
        raise ApiException(SELF_REFERRAL)
    recorded = _recorded([(chain, tx_hash)]).get((chain, tx_hash), [])
    outcome = claim_outcome(signer, recorded)
    if outcome == AttributionStatus.REJECTED:
        raise ApiException(NOT_THE_DONOR)
    status = outcome or AttributionStatus.PENDING
    try:
        with transaction.atomic():
            claim = AffiliateDonation.objects.filter(chain=chain, tx_hash=tx_hash, signer=signer).first()
            created = claim is None
            if claim is None:
                if status == AttributionStatus.PENDING:
                    _hold_open_claim_slot(signer)
                claim = AffiliateDonation.objects.create(
                    chain=chain, tx_hash=tx_hash, signer=signer, affiliate_code=code, status=status
                )
    except IntegrityError:
        # The pair's unique key (a parallel first claim) or the one-attribution index: treat both as taken.
        raise ApiException(ATTRIBUTION_CONFLICT) from None
    if not created and claim.affiliate_code != code:
        raise ApiException(ATTRIBUTION_CONFLICT)
    if not created and claim.status == AttributionStatus.PENDING and recorded:
        affiliate_donations_resolve(transactions=[(chain, tx_hash)])
        claim.refresh_from_db()
    return claim


def affiliate_donations_expire(*, now: datetime | None = None) -> int:
    """Close pending claims older than CLAIM_LIFETIME; returns how many expired."""
    now = now or timezone.now()
    return AffiliateDonation.objects.filter(
        status=AttributionStatus.PENDING, created_at__lt=now - CLAIM_LIFETIME
    ).update(status=AttributionStatus.EXPIRED, modified_at=now)


def affiliate_donations_resolve(
    *, transactions: list[tuple[str, str]] | None = None, batch: int = 1000, now: datetime | None = None
) -> int:
    """Settle the pending claims that are due (or those of `transactions`, (chain, tx_hash) pairs); returns how
    many settled.

    Claims are taken in next-check order; one still undecided is put back with a growing delay, so
    each run reaches claims further down the queue instead of re-reading the same oldest ones.
    """
    now = now or timezone.now()
    affiliate_donations_expire(now=now)
    pending = AffiliateDonation.objects.filter(status=AttributionStatus.PENDING)
    # Named transactions are looked at now (a donor re-claiming); the periodic walk takes what is due.
    if transactions is not None:
        pending = pending.filter(tx_hash__in={tx for _, tx in transactions})
    else:
        pending = pending.filter(next_check_at__lte=now)
    claims = [
        c
        for c in pending.order_by("next_check_at", "id")[:batch]
        if transactions is None or (c.chain, c.tx_hash) in transactions
    ]
    recorded = _recorded({(c.chain, c.tx_hash) for c in claims})
    settled = 0
    for claim in claims:
        outcome = claim_outcome(claim.signer, recorded.get((claim.chain, claim.tx_hash), []))
        still_pending = AffiliateDonation.objects.filter(id=claim.id, status=AttributionStatus.PENDING)
        if outcome is None:
            still_pending.update(
                checks=claim.checks + 1, next_check_at=now + next_check_delay(claim.checks), modified_at=now
            )
            continue
        try:
            with transaction.atomic():
                settled += still_pending.update(status=outcome, modified_at=now)
        except IntegrityError:
            logger.warning(
                "claim %s on %s (%s) could not be attributed: already attributed", claim.id, claim.tx_hash, claim.chain
            )
    return settled
