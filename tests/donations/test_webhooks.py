"""Webhooks end to end: crawlers on anvil write the outbox, the drain posts to a real local receiver."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone

from crawlers.chain.rpc import RpcClient
from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.scan.traces import internal_eth_transfers
from donations.judging import donations_fail_unconfirmed
from donations.models import Donation, DonationStats
from donations.services import campaign_pause, campaign_resume, donation_record_unconfirmed
from donations.sightings import Sighting
from donations.tasks import deliver_webhooks
from donations.webhook_delivery import webhooks_drain
from donations.webhook_models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from donations.webhooks import webhook_inflow_unexplained
from donations.wire import inflow_public
from dws_project.config_values import SaleTier
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.manual import page_text
from tests.webhook_receiver import Receiver, registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

SECRET = "whsec-test-0123456789abcdef"
ALL_DONATION_EVENTS = ["donation.seen", "donation.confirmed", "donation.failed", "donation.moved"]


def documented_verifier():
    """The receiver example exactly as docs/webhooks.md documents it."""
    manual = page_text("docs/webhooks.md")
    block = re.search(r"<!-- webhook-receiver-example -->\n```python\n(.*?)```", manual, re.S)
    assert block, "the receiver example in docs/webhooks.md is missing"
    namespace: dict = {}
    exec(block.group(1), namespace)  # noqa: S102 - our own manual, under test
    return namespace["verify_dws_signature"]


def endpoint(receiver: Receiver, events: list[str], secret: str = SECRET) -> WebhookEndpoint:
    return registered_endpoint(receiver.url, events, secret=secret)


def bodies(receiver: Receiver) -> list[dict]:
    return [json.loads(r.body) for r in receiver.accepted()]


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def test_a_delivery_retries_through_a_500_and_a_time_out_then_lands_once(node, settings):
    settings.DWS_WEBHOOK_TIMEOUT = 0.5
    with webhook_receiver(["500", "stall"]) as receiver:
        endpoint(receiver, ["donation.seen"])
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        crawl(LATEST)

        first = webhooks_drain()
        assert (first.delivered, first.failed_attempts) == (0, 1)
        assert webhooks_drain().failed_attempts == 0  # not due again before its retry delay
        webhooks_drain(now=later(31))  # the stalled attempt times out
        landed = webhooks_drain(now=later(95))
        webhooks_drain(now=later(3 * 3600))

    assert landed.delivered == 1
    assert [r.answered for r in receiver.requests] == ["500", "stall", "200"]
    assert len(receiver.accepted()) == 1
    body = bodies(receiver)[0]
    assert body["event"] == "donation.seen"
    assert body["data"]["tx_hash"] == tx
    assert (body["data"]["amount"], body["data"]["usd_amount"], body["data"]["status"]) == (
        "1.0000000000",  # as /user/data shows it: the column scale
        "2000.00",
        "unconfirmed",
    )
    assert body["id"].endswith(f":{tx}:tx:donation.seen")
    # the operator's view: every attempt with its outcome
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    assert [(a.status_code, a.error) for a in WebhookAttempt.objects.filter(delivery=delivery)] == [
        (500, "HTTP 500"),
        (None, "time-out"),
        (200, ""),
    ]


def test_the_signature_verifies_with_the_documented_recipe_and_fails_with_a_wrong_secret(node):
    verify = documented_verifier()
    with webhook_receiver() as receiver:
        endpoint(receiver, ["donation.seen"])
        node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        crawl(LATEST)
        webhooks_drain()

    (request,) = receiver.accepted()
    header = request.headers["dws-signature"]
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert verify(SECRET, header, request.body)
    assert not verify("another-secret-0123456789", header, request.body)
    assert not verify(SECRET, header, request.body.replace(b"2000.00", b"9000.00"))
    old = re.sub(r"t=(\d+)", lambda m: f"t={int(m.group(1)) - 3600}", header)
    assert not verify(SECRET, old, request.body)


def test_events_for_one_donation_arrive_in_order_even_when_the_first_is_retried(node):
    with webhook_receiver(["500"]) as receiver:
        endpoint(receiver, ALL_DONATION_EVENTS)
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        other = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
        crawl(LATEST)
        node.mine(2)
        crawl(FINALIZED)
        assert WebhookEvent.objects.count() == 4  # seen and confirmed, twice

        webhooks_drain()  # the first `seen` fails: its `confirmed` may not overtake it
        assert [r.answered for r in receiver.requests] == ["500"]
        assert WebhookDelivery.objects.filter(status="delivered").count() == 0
        webhooks_drain(now=later(31))

    delivered = [(b["data"]["tx_hash"], b["event"]) for b in bodies(receiver)]
    for donation in (tx, other):
        assert [e for t, e in delivered if t == donation] == ["donation.seen", "donation.confirmed"]
    assert len(delivered) == 4


def test_a_reorg_produces_donation_moved_with_the_new_block(node):
    with webhook_receiver() as receiver:
        endpoint(receiver, ALL_DONATION_EVENTS)
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        signed = node.rpc("eth_getRawTransactionByHash", tx)
        crawl(LATEST)
        first_block = Donation.objects.get().block_hash
        node.remine_one_block_later(signed)
        node.mine(1)
        crawl(LATEST)
        webhooks_drain()

    events = bodies(receiver)
    assert [b["event"] for b in events] == ["donation.seen", "donation.moved"]
    moved = events[1]["data"]
    assert moved["block_hash"] == node.receipt(tx)["blockHash"] != first_block
    assert moved["block_number"] == int(node.receipt(tx)["blockNumber"], 16)


def test_nothing_is_delivered_for_a_change_that_rolled_back(node):
    class Abandoned(Exception):
        pass

    @transaction.atomic
    def pause_then_fail() -> None:
        campaign_pause(operator="test")
        raise Abandoned

    with webhook_receiver() as receiver:
        endpoint(receiver, ["campaign.status", *ALL_DONATION_EVENTS])
        with pytest.raises(Abandoned):
            pause_then_fail()
        assert DonationStats.objects.get().status == "open"
        assert not WebhookEvent.objects.exists()
        webhooks_drain()
    assert receiver.requests == []


def test_pause_and_resume_are_sent_as_campaign_status_and_inactive_endpoints_get_nothing(node, settings):
    with webhook_receiver() as receiver, webhook_receiver() as inactive:
        endpoint(receiver, ["campaign.status"])
        registered_endpoint(inactive.url, ["campaign.status"], secret=SECRET, active=False)
        campaign_pause(operator="test")
        campaign_resume(operator="test", tiers=settings.CONFIG.sale_tiers)
        webhooks_drain()

    assert [(b["data"]["change"], b["data"]["status"]) for b in bodies(receiver)] == [
        ("paused", "paused"),
        ("resumed", "open"),
    ]
    assert inactive.requests == []


def test_webhook_test_sends_a_signed_sample_and_never_prints_the_secret(monkeypatch, capsys):
    verify = documented_verifier()
    monkeypatch.setenv("DWS_WEBHOOK_TEST_SECRET", SECRET)
    with webhook_receiver(["200", "500"]) as receiver:
        call_command("webhook_test", receiver.url)
        with pytest.raises(CommandError, match="not accepted"):
            call_command("webhook_test", receiver.url)
    out = capsys.readouterr()
    assert "accepted (HTTP 200" in out.out
    assert SECRET not in out.out + out.err
    assert verify(SECRET, receiver.requests[0].headers["dws-signature"], receiver.requests[0].body)


def test_webhook_test_refuses_a_non_http_url_and_a_missing_secret(monkeypatch):
    monkeypatch.delenv("DWS_WEBHOOK_TEST_SECRET", raising=False)
    with pytest.raises(CommandError, match="http"):
        call_command("webhook_test", "file:///etc/passwd")
    with pytest.raises(CommandError, match="DWS_WEBHOOK_TEST_SECRET is not set"):
        call_command("webhook_test", "http://127.0.0.1:9/")


def unconfirmed_donation(tx: str) -> Donation:
    return Donation.objects.create(
        tx_hash=tx,
        log_index=None,
        address=ACCOUNTS[1],
        asset="eth",
        amount=Decimal("0.5"),
        usd_amount=Decimal("1000.00"),
        price=Decimal("0.001"),
        tokens=1_000_000,
        status="unconfirmed",
        block_number=10,
        block_hash="0x" + "cd" * 32,
        block_time=timezone.now() - timedelta(days=2),
    )


def test_a_failed_donation_says_whether_it_reverted_or_was_dropped(settings):
    dropped, reverted = unconfirmed_donation("0x" + "01" * 32), unconfirmed_donation("0x" + "02" * 32)
    with webhook_receiver() as receiver:
        endpoint(receiver, ["donation.failed"])
        tiers = settings.CONFIG.sale_tiers
        donations_fail_unconfirmed(donation_ids=[dropped.id], reason="absent from chain and mempool", tiers=tiers)
        donations_fail_unconfirmed(
            donation_ids=[reverted.id], reason="its finalized receipt reports a revert", tiers=tiers
        )
        webhooks_drain()

    failed = {b["data"]["tx_hash"]: (b["data"]["status"], b["data"]["reason"]) for b in bodies(receiver)}
    assert failed == {dropped.tx_hash: ("failed", "dropped"), reverted.tx_hash: ("failed", "reverted")}


def test_an_unexplained_inflow_is_delivered_by_the_celery_task_after_the_commit(django_capture_on_commit_callbacks):
    with webhook_receiver() as receiver:
        endpoint(receiver, ["inflow.unexplained"])
        with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
            inflow = UnexplainedInflow.objects.create(
                block_number=12, block_hash="0xab", asset="eth", amount_raw=27 * 10**9, amount=Decimal("2.7E-8")
            )
            webhook_inflow_unexplained(inflow)
        assert len(callbacks) == 1  # a delivery run is queued once the change commits
        deliver_webhooks.apply()  # what the worker runs for it

    (body,) = bodies(receiver)
    assert body["event"] == "inflow.unexplained"
    # the shape /proof.json lists (never an exponent: str(Decimal) would write "2.7E-8"), without our recording time
    chain = settings.CONFIG.first_chain
    assert body["data"] == {"chain": chain.name, "chain_id": chain.chain_id, "id": inflow.pk} | {
        k: v for k, v in inflow_public(inflow).items() if k != "recorded_at"
    }
    assert body["data"]["amount"] == "0.000000027"


def test_a_dead_receiver_does_not_hold_up_another(node, settings):
    settings.DWS_WEBHOOK_TIMEOUT = 0.5
    with webhook_receiver(["stall"] * 5) as dead, webhook_receiver() as alive:
        endpoint(dead, ["donation.seen"])
        endpoint(alive, ["donation.seen"])
        for sender in ACCOUNTS[1:4]:
            node.send_eth(sender, DONATION_ADDRESS, ETHER)
        crawl(LATEST)

        result = webhooks_drain()

    assert len(alive.accepted()) == 3
    assert len(dead.requests) == 1  # tried once this run, then left for its retry time
    assert (result.delivered, result.failed_attempts) == (3, 1)


def test_reaching_the_sale_cap_sends_campaign_status_closed(node, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=(SaleTier(1000, Decimal("0.001")),))
    with webhook_receiver() as receiver:
        endpoint(receiver, ["campaign.status"])
        node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        crawl(LATEST)
        node.mine(2)
        crawl(FINALIZED)
        webhooks_drain()

    assert DonationStats.objects.get().status == "closed"
    assert [(b["data"]["change"], b["data"]["status"]) for b in bodies(receiver)] == [("closed", "closed")]


def test_eth_from_an_internal_call_is_keyed_by_its_trace_position(node, settings):
    owner = ACCOUNTS[1]
    wallet = node.deploy("EthForwarder", sender=owner)
    node.send_eth(owner, wallet, 2 * ETHER)
    data = node.call_data("forward(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, ETHER])
    tx = node.send({"from": owner, "to": wallet, "data": data, "gas": hex(200_000)})
    receipt = node.receipt(tx)
    (transfer,) = internal_eth_transfers(
        RpcClient(node.url),
        settings.CONFIG.first_chain,
        block_number=int(receipt["blockNumber"], 16),
        block_hash=receipt["blockHash"],
    )
    with webhook_receiver() as receiver:
        endpoint(receiver, ["donation.seen"])
        sighting = Sighting(chain="eth", transfer=transfer, block_time=timezone.now(), eth_price=Decimal("2000"))
        donation_record_unconfirmed(sighting=sighting, tiers=settings.CONFIG.sale_tiers)
        webhooks_drain()

    (body,) = bodies(receiver)
    assert body["id"].endswith(f":{tx}:trace0:donation.seen")
    assert (body["data"]["address"], body["data"]["log_index"], body["data"]["trace_address"]) == (wallet, None, "0")
