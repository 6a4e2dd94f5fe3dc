"""The refund register from the operator's side (donations/refund_admin.py): an inflow closed as "not a donation,
refund" is owed, the list answers "who do we owe, and did we pay them" with its totals, an operator waives and
adds rows (each in the admin's history and the log, with the name), and owed rows export as the batch the
treasury signs."""

from __future__ import annotations

import csv
import io
import json
import logging
from decimal import Decimal

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from crawlers.models import UnexplainedInflow
from donations.refund_export import batch_checksum
from donations.refund_models import Refund
from tests.chain import ACCOUNTS, DONATION_ADDRESS, checksum

pytestmark = pytest.mark.django_db

DONOR = ACCOUNTS[4]
CHANGELIST = "admin:donations_refund_changelist"


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    return client


def inflow(asset: str = "eth", raw: int = 3 * 10**18) -> UnexplainedInflow:
    return UnexplainedInflow.objects.create(
        chain="eth",
        block_number=120,
        block_hash="0x" + "ab" * 32,
        asset=asset,
        amount_raw=raw,
        amount=Decimal(raw).scaleb(-18 if asset == "eth" else -6),
    )


def owed(amount: str, asset: str = "usdt", donor: str = DONOR, tx: str = "01") -> Refund:
    contract = {"eth": "", "usdt": "0x5fbdb2315678afecb367f032d93f642f64180aa3"}[asset]
    return Refund.objects.create(
        chain="eth",
        donor=donor,
        asset=asset,
        contract=contract,
        decimals=18 if asset == "eth" else 6,
        amount=Decimal(amount),
        reason="stray-coin",
        source_tx_hash="0x" + tx * 32,
        source_log_index=0,
    )


def test_an_inflow_closed_as_not_a_donation_refund_is_owed_to_the_sender_named(operator, caplog):
    closing = inflow()
    listing = operator.get(reverse("admin:crawlers_unexplainedinflow_changelist")).content.decode()
    assert "not a donation, keep" in listing
    assert "not a donation, refund" in listing
    url = reverse("admin:crawlers_unexplainedinflow_refund", args=[closing.pk])

    refused = operator.post(url, {"donor": "0x1234", "reason": "sent from an exchange by mistake"})
    assert "the address owed: not a 0x-prefixed 20-byte hex address" in refused.content.decode()
    tx = "0x" + "cd" * 32
    with caplog.at_level(logging.WARNING):
        done = operator.post(url, {"donor": checksum(DONOR), "tx_hash": tx, "reason": "sent from an exchange"})

    assert done.status_code == 302
    refund = Refund.objects.get()
    assert (refund.donor, refund.asset, refund.amount, refund.reason, refund.inflow_id, refund.source_tx_hash) == (
        DONOR,
        "eth",
        Decimal(3),
        "not-a-donation",
        closing.pk,
        tx,
    )
    closing.refresh_from_db()
    assert closing.status == "dismissed"
    assert closing.operator == "alice (admin)"
    assert f"not a donation, refund {refund.pk} owed to {DONOR}: sent from an exchange" in closing.reason
    assert "marked not a donation, refund, by alice (admin)" in caplog.text
    again = operator.post(url, {"donor": DONOR, "reason": "twice"})
    assert "this inflow is already dismissed" in again.content.decode()
    assert Refund.objects.count() == 1


def test_refunding_an_inflow_needs_the_refund_registers_permission_too(client):
    """ "Not a donation, refund" writes an owed row to an address the operator types, the same lever as "Add a
    refund by hand": an operator trusted with inflows only (keep or credit) cannot make the treasury owe
    someone through it."""
    bob = User.objects.create_user("bob", "bob@example.org", "pw-not-used", is_staff=True)
    for codename in ("view_unexplainedinflow", "change_unexplainedinflow"):
        bob.user_permissions.add(Permission.objects.get(codename=codename))
    client.force_login(bob)
    closing = inflow()
    url = reverse("admin:crawlers_unexplainedinflow_refund", args=[closing.pk])
    form = {"donor": checksum(ACCOUNTS[5]), "tx_hash": "", "reason": "mine"}
    assert client.post(url, form).status_code == 403
    assert not Refund.objects.exists()
    closing.refresh_from_db()
    assert closing.status == "open"

    bob.user_permissions.add(Permission.objects.get(codename="change_refund"))
    bob = User.objects.get(pk=bob.pk)  # permissions are cached per user object
    client.force_login(bob)
    assert client.post(url, form).status_code == 302
    assert Refund.objects.get().donor == ACCOUNTS[5]


def test_the_list_filters_and_totals_who_is_owed_and_what_was_paid(operator):
    owed("10")
    owed("2.5", tx="02")
    paid = owed("4", tx="03")
    Refund.objects.filter(pk=paid.pk).update(status="paid", paid_tx_hash="0x" + "ee" * 32, paid_block_number=9)
    owed("0.5", asset="eth", tx="04")

    page = operator.get(reverse(CHANGELIST)).content.decode()
    totals = page[page.index('id="refund-totals"') : page.index("</table>", page.index('id="refund-totals"'))]
    assert "<td>eth</td><td>eth</td>" in totals
    assert '<td class="owed">0.5 (1)</td>' in totals
    assert '<td class="owed">12.5 (2)</td>' in totals
    assert '<td class="paid">4 (1)</td>' in totals

    only_owed = operator.get(reverse(CHANGELIST), {"status__exact": "owed", "asset": "usdt"}).content.decode()
    assert '<td class="owed">12.5 (2)</td>' in only_owed
    assert '<td class="paid">0 (0)</td>' in only_owed


def test_waive_asks_a_reason_and_keeps_who_and_why(operator, caplog):
    first, second = owed("10"), owed("3", tx="02")
    url = reverse(CHANGELIST)
    chosen = {"action": "waive", ACTION_CHECKBOX_NAME: [first.pk, second.pk]}

    asked = operator.post(url, chosen)
    assert asked.status_code == 200
    assert "Waive 2 owed refund(s)" in asked.content.decode()
    with caplog.at_level(logging.WARNING):
        done = operator.post(url, {**chosen, "reason": "the donor asked for tokens on another chain"})

    assert done.status_code == 302
    rows = list(Refund.objects.order_by("id").values_list("status", "waived_by", "waived_reason"))
    assert rows == [("waived", "alice (admin)", "the donor asked for tokens on another chain")] * 2
    assert "waived by alice (admin): the donor asked for tokens on another chain" in caplog.text
    history = LogEntry.objects.filter(object_id=str(first.pk)).values_list("change_message", flat=True)
    assert "waived: the donor asked for tokens on another chain" in list(history)


def test_a_row_added_by_hand_names_its_transaction_and_its_operator(operator):
    url = reverse("admin:donations_refund_add_by_hand")
    form = {"chain": "eth", "donor": DONOR, "asset": "usdt", "amount": "7.25", "tx_hash": "0x12", "note": "by mail"}
    refused = operator.post(url, form)
    assert "a transaction hash is 0x followed by 64 hex digits" in refused.content.decode()

    done = operator.post(url, {**form, "tx_hash": "0x" + "77" * 32})

    assert done.status_code == 302
    row = Refund.objects.get()
    assert (row.reason, row.amount, row.source_tx_hash, row.added_by, row.note) == (
        "by-hand",
        Decimal("7.25"),
        "0x" + "77" * 32,
        "alice (admin)",
        "by mail",
    )
    assert LogEntry.objects.filter(object_id=str(row.pk), action_flag=1).exists()


def test_owed_rows_export_as_a_safe_batch_and_as_a_csv_with_payment_links(operator, settings):
    coin, eth = owed("10"), owed("0.5", asset="eth", tx="02")
    chosen = [coin.pk, eth.pk]

    answer = operator.post(reverse(CHANGELIST), {"action": "export_safe_batch", ACTION_CHECKBOX_NAME: chosen})

    assert answer["Content-Disposition"].startswith('attachment; filename="dws-refunds-eth-')
    batch = json.loads(answer.content)
    assert batch["version"] == "1.0"
    assert batch["chainId"] == str(settings.CONFIG.first_chain.chain_id)
    assert batch["meta"]["createdFromSafeAddress"] == checksum(DONATION_ADDRESS)
    assert batch["meta"]["checksum"] == batch_checksum(batch)
    transfer = "0xa9059cbb" + DONOR[2:].rjust(64, "0") + hex(10_000_000)[2:].rjust(64, "0")
    assert batch["transactions"] == [
        {"to": checksum(coin.contract), "value": "0", "data": transfer},
        {"to": checksum(DONOR), "value": str(5 * 10**17), "data": "0x"},
    ]

    sheet = operator.post(reverse(CHANGELIST), {"action": "export_eoa_csv", ACTION_CHECKBOX_NAME: chosen})
    lines = list(csv.DictReader(io.StringIO(sheet.content.decode())))
    chain_id = settings.CONFIG.first_chain.chain_id
    assert [(line["to"], line["amount"], line["amount_raw"], line["eip681"]) for line in lines] == [
        (
            checksum(DONOR),
            "10",
            "10000000",
            f"ethereum:{checksum(coin.contract)}@{chain_id}/transfer?address={checksum(DONOR)}&uint256=10000000",
        ),
        (checksum(DONOR), "0.5", str(5 * 10**17), f"ethereum:{checksum(DONOR)}@{chain_id}?value={5 * 10**17}"),
    ]


def test_rows_exported_before_are_named_when_exported_again(operator):
    """A batch waits for the Safe owners' signatures; the overdue alert fires; an operator exports the same
    rows again: executing both would pay twice (the register closes a row once), so the second export says
    which rows went out before."""
    first, fresh = owed("10"), owed("4", tx="02")
    operator.post(reverse(CHANGELIST), {"action": "export_safe_batch", ACTION_CHECKBOX_NAME: [first.pk]})
    quiet = operator.get(reverse(CHANGELIST)).content.decode()
    assert "exported for payment before" not in quiet

    again = operator.post(
        reverse(CHANGELIST), {"action": "export_safe_batch", ACTION_CHECKBOX_NAME: [first.pk, fresh.pk]}
    )
    assert json.loads(again.content)["transactions"]  # the file still comes: the operator decides
    page = operator.get(reverse(CHANGELIST)).content.decode()
    assert f"were exported for payment before: refund(s) {first.pk} (see" in page
