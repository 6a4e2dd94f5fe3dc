"""Affiliate codes, wallet connections and donation attributions (the writes behind the signed API).

Every function takes an address that a signature has already proven the caller controls.
"""

from __future__ import annotations

import logging
import secrets
import string

from django.db import IntegrityError, transaction

from affiliates.models import AffiliateDonation, AttributionStatus, WalletConnection
from donations.models import Donation, UserData
from dws_project.api_errors import (
    ATTRIBUTION_CONFLICT,
    NOT_THE_DONOR,
    SELF_REFERRAL,
    UNKNOWN_AFFILIATE_CODE,
    ApiException,
)

logger = logging.getLogger("dws.affiliates")

CODE_ALPHABET = string.ascii_letters + string.digits
CODE_LENGTH = 11  # 62**11 codes: a collision is rare, and the unique constraint catches it anyway
_COLLISION_RETRIES = 5


def new_affiliate_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def affiliate_code_get_or_create(*, address: str) -> str:
    """The address's affiliate code, created on the first call.

    Codes hang off the user_data row. A caller without one (no confirmed donation yet: a referrer who
    shares the link before donating) gets a row with zero totals, status none and the fresh code, in
    one `INSERT ... ON CONFLICT DO NOTHING`; the crawler's totals upsert fills it in later. Concurrent
    first calls race on that insert, or on a conditional UPDATE for an existing row without a code:
    exactly one sets the code, the others read the winner's. A code another address already holds
    fails the unique constraint (or is skipped by the insert) and is drawn again.
    """
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


def wallet_connection_create(*, address: str, code: str) -> WalletConnection:
    """Record that `address` arrived through `code`. Connecting with the same code again is a no-op."""
    if _code_owner(code) == address:
        raise ApiException(SELF_REFERRAL)
    existing = WalletConnection.objects.filter(address=address, affiliate_code=code).order_by("id").first()
    if existing is not None:
        return existing
    return WalletConnection.objects.create(address=address, affiliate_code=code)


def _donors(tx_hash: str) -> set[str]:
    return set(Donation.objects.filter(tx_hash=tx_hash).values_list("address", flat=True).distinct())


def affiliate_donation_claim(*, signer: str, tx_hash: str, code: str) -> AffiliateDonation:
    """Attribute the donation in `tx_hash` to `code` on behalf of its donor, `signer`.

    If the crawler has recorded the transaction, the signer must be its donor. If not yet, the claim
    is kept pending and `affiliate_donations_resolve` settles it once the donation is recorded.
    """
    tx_hash = tx_hash.lower()
    if _code_owner(code) == signer:
        raise ApiException(SELF_REFERRAL)
    donors = _donors(tx_hash)
    if donors and signer not in donors:
        raise ApiException(NOT_THE_DONOR)
    status = AttributionStatus.ATTRIBUTED if donors else AttributionStatus.PENDING
    try:
        with transaction.atomic():
            claim, created = AffiliateDonation.objects.get_or_create(
                tx_hash=tx_hash, signer=signer, defaults={"affiliate_code": code, "status": status}
            )
    except IntegrityError:
        # Only the one-attribution-per-transaction index can fail here: someone else is attributed.
        raise ApiException(ATTRIBUTION_CONFLICT) from None
    if not created and claim.affiliate_code != code:
        raise ApiException(ATTRIBUTION_CONFLICT)
    if not created and claim.status == AttributionStatus.PENDING and donors:
        affiliate_donations_resolve(tx_hashes=[tx_hash])
        claim.refresh_from_db()
    return claim


def affiliate_donations_resolve(*, tx_hashes: list[str] | None = None, batch: int = 1000) -> int:
    """Settle pending claims whose donation the crawler has recorded since; returns how many settled."""
    pending = AffiliateDonation.objects.filter(status=AttributionStatus.PENDING).order_by("id")
    if tx_hashes is not None:
        pending = pending.filter(tx_hash__in=tx_hashes)
    settled = 0
    for claim in pending[:batch]:
        donors = _donors(claim.tx_hash)
        if not donors:
            continue
        outcome = AttributionStatus.ATTRIBUTED if claim.signer in donors else AttributionStatus.REJECTED
        try:
            with transaction.atomic():
                settled += AffiliateDonation.objects.filter(id=claim.id, status=AttributionStatus.PENDING).update(
                    status=outcome
                )
        except IntegrityError:
            logger.warning("claim %s on %s could not be attributed: already attributed", claim.id, claim.tx_hash)
    return settled
