"""The treasury's batch files (donations/refund_export.py), pure: the Safe Transaction Builder's checksum as its
importer computes it, and the calldata of a token refund."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from django.conf import settings

from donations.refund_export import safe_batch, transfer_calldata
from donations.refund_models import Refund


def test_the_batch_checksum_is_the_one_the_transaction_builder_computes():
    """The expected value was computed by the Transaction Builder's own serializer (apps/tx-builder's
    lib/checksum.ts, run in node with js-sha3) over this very file."""
    rows = [
        Refund(pk=3, chain="eth", donor="0x" + "ab" * 20, asset="eth", contract="", decimals=18, amount=Decimal("1.5")),
        Refund(
            pk=4,
            chain="eth",
            donor="0x" + "cd" * 20,
            asset="dai",
            contract="0x" + "12" * 20,
            decimals=18,
            amount=Decimal(2),
        ),
    ]
    batch = safe_batch(settings.CONFIG.first_chain, rows, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert batch["meta"]["checksum"] == "0x64a879a5e9e1131842cfb8e4d7843a2e154d9aff3cb560c1effbfaa120dfe11c"
    assert batch["transactions"][1]["data"] == transfer_calldata("0x" + "cd" * 20, 2 * 10**18)


def test_a_token_transfer_call_is_selector_recipient_and_amount_in_words():
    data = transfer_calldata("0x" + "cd" * 20, 10_000_000)
    assert data == "0xa9059cbb" + ("cd" * 20).rjust(64, "0") + hex(10_000_000)[2:].rjust(64, "0")
