"""A coin minted to the donation address is its depositor's, the address's own, or an open question (issue
32). On main every Transfer from the zero address was "minted to the address": an internal movement, no
donation, no open inflow, reconcile ok -- USDC a donor bridged with CCTP straight to the address was
neither credited nor reported.

Circle's MessageTransmitter is a stand-in at Circle's own addresses (tests/cctp.py): the message layouts
and the events are Circle's, v1 and v2.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.models import FINALIZED, LATEST, InternalMovement, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.cctp import install_transmitters, receive, receive_call
from tests.chain import ACCOUNTS, DONATION_ADDRESS, multisend
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDC = 10**6
DEPOSITOR, RELAYER = ACCOUNTS[4], ACCOUNTS[5]


@pytest.fixture
def cctp(node) -> int:
    """Circle's transmitters minting the configured USDC; the first block the test's own actions are in."""
    install_transmitters(node, node.coins["usdc"])
    return node.head() + 1


def crawl_final(node) -> None:
    node.mine(2)
    assert crawl(LATEST).held is None
    assert crawl(FINALIZED).held is None


def no_drift(node, first: int) -> list[str]:
    report = reconcile(first, node.finalized())
    assert DonationStats.objects.get().status == "open"
    return [line for line in report.discrepancies if line not in report.awaiting_operator]


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_usdc_a_donor_bridges_with_cctp_is_credited_to_the_depositor(node, cctp, v2):
    fee = 10_000 if v2 else 0  # v2: the fee executed is minted elsewhere, the rest to the recipient
    minted = receive(node, RELAYER, v2=v2, recipient=DONATION_ADDRESS, amount=25 * USDC, depositor=DEPOSITOR, fee=fee)

    crawl_final(node)

    row = Donation.objects.get()
    arrived = Decimal(25 * USDC - fee) / USDC
    assert (row.tx_hash, row.address, row.asset, row.amount, row.chain, row.status) == (
        minted,
        DEPOSITOR,
        "usdc",
        arrived,
        "eth",
        "confirmed",
    )
    assert not UnexplainedInflow.objects.exists()
    assert not InternalMovement.objects.exists()
    assert no_drift(node, cctp) == []


def test_the_addresss_own_cctp_deposit_is_its_own_and_a_donors_message_it_relays_is_the_donors(node, cctp):
    """The burn message names where the value came from: the address's own burn is an internal movement
    whoever relays it, and a donor's burn the sale relays itself is the donor's donation (a sale that claimed
    its donors' messages would otherwise keep their USDC as its own; the public verifier reads it so too)."""
    own_deposit = receive(
        node, RELAYER, v2=True, recipient=DONATION_ADDRESS, amount=7 * USDC, depositor=DONATION_ADDRESS
    )
    relayed = receive(
        node, DONATION_ADDRESS, v2=False, recipient=DONATION_ADDRESS, amount=3 * USDC, depositor=DEPOSITOR
    )

    crawl_final(node)

    row = Donation.objects.get()
    assert (row.tx_hash, row.address, row.amount, row.status) == (relayed, DEPOSITOR, Decimal(3), "confirmed")
    assert not UnexplainedInflow.objects.exists()
    assert {(m.tx_hash, m.kind, m.amount) for m in InternalMovement.objects.all()} == {
        (own_deposit, "bridged by the address", Decimal(7)),
    }
    assert no_drift(node, cctp) == []


def test_a_mint_nobody_is_named_for_is_an_open_inflow_for_the_operator(node, cctp):
    unknown = node.mint(node.coins["usdc"], DONATION_ADDRESS, 40 * USDC)  # an unknown bridge's mint
    mismatched = receive(node, RELAYER, v2=False, recipient=ACCOUNTS[6], amount=5 * USDC, depositor=DEPOSITOR)

    crawl_final(node)

    assert not Donation.objects.exists()
    inflow = UnexplainedInflow.objects.get()
    assert (int(inflow.amount_raw), inflow.asset, inflow.status) == (40 * USDC, "usdc", "open")
    assert unknown in inflow.reason
    assert not InternalMovement.objects.exists()
    assert mismatched not in {d.tx_hash for d in Donation.objects.all()}  # paid someone else: nothing of ours
    assert no_drift(node, cctp) == []
    assert any(
        unknown in line or str(inflow.pk) in line for line in reconcile(cctp, node.finalized()).awaiting_operator
    )


def test_a_check_provider_agrees_on_a_bridged_donation(node, cctp, settings):
    with RpcProxy(node.url) as check:
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=check.url("/check"))
        receive(node, RELAYER, v2=True, recipient=DONATION_ADDRESS, amount=12 * USDC, depositor=DEPOSITOR)
        crawl_final(node)

    assert Donation.objects.get().status == "confirmed"
    assert Donation.objects.get().address == DEPOSITOR


def test_one_cctp_message_credits_one_mint_however_many_a_strangers_transaction_holds(node, cctp):
    """A stranger's one transaction (a Safe's batch): a mint of the same amount by another minter (an unknown
    bridge's claim he relayed: someone else's coins), then his claim of his own CCTP burn. The message was read
    as both mints': he was credited twice for one burn (found by attack32). It is the claim's mint's only; the
    other is an open inflow for the operator."""
    stranger, usdc = ACCOUNTS[6], node.coins["usdc"]
    safe = node.deploy("BatchSafe", ["address"], [stranger])
    unknown = {
        "to": usdc,
        "value": 0,
        "data": node.call_data("mint(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 5 * USDC]),
    }
    claim = receive_call(v2=False, recipient=DONATION_ADDRESS, amount=5 * USDC, depositor=stranger) | {"value": 0}
    batch = node.call_data("multiSend(bytes)", ["bytes"], [multisend([unknown, claim])])
    both = node.send({"from": stranger, "to": safe, "data": batch, "gas": hex(1_000_000)})
    assert node.receipt(both)["status"] == "0x1"

    crawl_final(node)

    row = Donation.objects.get()
    assert (row.tx_hash, row.log_index, row.address, row.amount, row.status) == (
        both,
        1,
        stranger,
        Decimal(5),
        "confirmed",
    )
    inflow = UnexplainedInflow.objects.get()
    assert (int(inflow.amount_raw), inflow.asset, inflow.status) == (5 * USDC, "usdc", "open")
    assert both in inflow.reason
    assert no_drift(node, cctp) == []
