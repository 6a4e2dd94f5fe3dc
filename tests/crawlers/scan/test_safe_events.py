"""A genuine Safe at the donation address is read the sparse way, by its events (crawlers/scan/safe.py).

A real Safe 1.4.1 (its runtime code from @safe-global/safe-contracts, tests/safe_wallet.py) takes donations
every way one can reach it and pays out every way its code can; the sparse path, reading only the blocks
its events, its storage and the balances point at, must record exactly what the full scan (every block,
every call trace) records. A contract with the same events whose code is not a Safe we know, and a
provider that leaves the Safe's events out of its logs, must never cost a donation.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from crawlers.decode.safe import EXECUTION_FAILURE, MODULE_SUCCESS
from crawlers.models import FINALIZED, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.selectors import health_report
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, load_artifact
from tests.configs import configured
from tests.crawlers.scan.test_sparse import crawled
from tests.rpc_proxy import RpcProxy
from tests.safe_wallet import enable_module, execute, install_safe, module_execute, pay_by_selfdestruct

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, MODULE, PAYEE = ACCOUNTS[1], ACCOUNTS[7], ACCOUNTS[6]
USDT = 10**6
BOMB = "0x" + "b0" * 20


def relay(node, sender: str, wei: int) -> str:
    """ETH to the Safe from a contract: an internal call (its receive() still says SafeReceived)."""
    relay_contract = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    return node.send({"from": sender, "to": relay_contract, "value": hex(wei), "data": data, "gas": hex(200_000)})


def mode_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("donation address ")]


def test_a_safe_read_by_its_events_records_exactly_what_the_full_scan_records(node, proxy, settings, caplog):
    usdt = node.coins["usdt"]
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mint(usdt, ACCOUNTS[2], 1000 * USDT)
    node.mine(20)
    direct = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)  # a top-level donation
    node.mine(30)
    relayed = relay(node, ACCOUNTS[3], 2 * ETHER)  # an internal one
    node.mine(30)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 2)  # the owners pay out: an internal call
    node.mine(30)
    back = relay(node, ACCOUNTS[4], ETHER // 4)  # in, and the same out again a few blocks on: net zero
    node.mine(3)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 4)
    node.mine(30)
    enable_module(node, DONATION_ADDRESS, OWNER, MODULE)
    node.mine(10)
    paid = module_execute(node, DONATION_ADDRESS, MODULE, PAYEE, ETHER // 8)  # a module: no signature, no nonce
    assert [log["topics"][0] for log in node.receipt(paid)["logs"]] == [MODULE_SUCCESS]
    node.mine(20)
    failed = execute(node, DONATION_ADDRESS, OWNER, usdt, 0, b"\xde\xad", safe_tx_gas=50_000)  # its call reverts
    assert [log["topics"][0] for log in node.receipt(failed)["logs"]] == [EXECUTION_FAILURE]
    node.mine(20)
    pay_by_selfdestruct(node, ACCOUNTS[5], DONATION_ADDRESS, ETHER // 16, BOMB)  # no call, no event
    node.mine(20)
    coin = node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 50 * USDT)
    node.mine(30)

    with caplog.at_level(logging.INFO):
        by_events = crawled(settings, sparse=True)
    sparse_reads = proxy.requests_for("eth_getBlockByNumber")
    full = crawled(settings, sparse=False)
    full_reads = proxy.requests_for("eth_getBlockByNumber") - sparse_reads

    assert by_events == full
    rows, _, _, inflows = by_events
    assert {(r[0], r[3], r[4], r[7]) for r in rows} == {
        (direct, "eth", Decimal(1), "confirmed"),
        (relayed, "eth", Decimal(2), "confirmed"),
        (back, "eth", Decimal("0.25"), "confirmed"),
        (coin, "usdt", Decimal(50), "confirmed"),
    }
    assert [(i[2], i[3]) for i in inflows] == [("eth", ETHER // 16)]  # the self-destruct's: for the operator
    assert sparse_reads < full_reads // 3, (sparse_reads, full_reads)
    said = f"donation address {DONATION_ADDRESS} on eth is contract, Safe 1.4.1: read by its events"
    assert said in mode_lines(caplog)
    assert health_report()["donation_address"]["reading"].startswith("contract")


def test_a_quiet_safe_with_donations_is_read_without_a_bisection(node, proxy, caplog):
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(40)
    crawl(FINALIZED)
    for sender in ACCOUNTS[2:5]:
        node.send_eth(sender, DONATION_ADDRESS, ETHER)
        node.mine(200)
    before = len(proxy.seen)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.filter(status="confirmed").count() == 3
    # The range's first batch (balances, code, Safe storage, events, trace_filter), the three donation
    # blocks read in one, the cursor's tip: no balance asked between the edges, no block traced.
    asked = [m for s in proxy.seen[before:] for m in s.methods]
    assert "trace_block" not in asked
    assert "debug_traceBlockByNumber" not in asked
    assert len(proxy.seen) - before <= 5, [s.methods[:4] for s in proxy.seen[before:]]
    shown = health_report()["donation_address"]
    assert (shown["mode"], shown["reading"]) == ("contract", "contract, Safe 1.4.1: read by its events")


def test_a_contract_with_the_safes_events_but_unknown_code_is_read_in_full(node, proxy, caplog):
    """The real Safe's code with one byte of its metadata changed: the same events, the same behaviour, a
    code hash we do not know. Anything could be behind such code: it is read in full, block by block."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    copy = "0x" + "5a" * 20
    runtime = load_artifact("Safe141")["singletonRuntime"]
    node.set_code(copy, runtime[:-4] + ("00" if runtime[-4:-2] != "00" else "01") + runtime[-2:])
    node.rpc("anvil_setStorageAt", DONATION_ADDRESS, "0x0", "0x" + copy[2:].rjust(64, "0"))
    relayed = relay(node, ACCOUNTS[3], ETHER)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER)  # in and out: net zero
    node.mine(60)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.get().tx_hash == relayed
    assert proxy.requests_for("eth_getBlockByNumber") >= 60  # every block read
    assert f"donation address {DONATION_ADDRESS} on eth is contract; its calls are read from call traces" in " ".join(
        mode_lines(caplog)
    )
    assert health_report()["donation_address"]["reading"] == "contract: read in full through call traces"


def drop_safe_events(proxy) -> None:
    """The provider leaves every log of the Safe out of its eth_getLogs answers."""

    def without(logs, params):
        if not isinstance(logs, list):
            return logs
        return [log for log in logs if log["address"].lower() != DONATION_ADDRESS]

    proxy.arm("eth_getLogs", "rewrite", count=None, rewrite=without)


def test_a_provider_dropping_the_safes_events_costs_no_donation(node, proxy, caplog):
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(20)
    crawl(FINALIZED)
    relayed = relay(node, ACCOUNTS[3], ETHER)  # in and out again: the balance nets out, the events are gone
    node.mine(5)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER)
    direct = node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER // 2)  # only the balance shows this one
    node.mine(40)
    drop_safe_events(proxy)

    with caplog.at_level(logging.WARNING):
        result = crawl(FINALIZED)

    assert result.held is None
    assert {d.tx_hash for d in Donation.objects.filter(status="confirmed")} >= {relayed, direct}
    assert not UnexplainedInflow.objects.exists()
    assert any("its transaction nonce moved" in line for line in [r.getMessage() for r in caplog.records])


def test_a_provider_dropping_a_module_execution_costs_no_donation(node, proxy, caplog):
    install_safe(node, DONATION_ADDRESS, [OWNER])
    enable_module(node, DONATION_ADDRESS, OWNER, MODULE)
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(20)
    crawl(FINALIZED)
    relayed = relay(node, ACCOUNTS[3], ETHER)
    module_execute(node, DONATION_ADDRESS, MODULE, PAYEE, ETHER)  # no nonce moves: only trace_filter shows it
    node.mine(40)
    drop_safe_events(proxy)

    with caplog.at_level(logging.WARNING):
        result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"
    assert any("trace_filter shows value leaving it" in r.getMessage() for r in caplog.records)

    # Without trace_filter, a Safe with a module enabled is read in full: nothing else could show what
    # a module moved.
    node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER)
    node.mine(40)
    proxy.arm("trace_filter", "error", count=None, code=-32601, message="the method trace_filter does not exist")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert crawl(FINALIZED).held is None
    assert Donation.objects.filter(status="confirmed").count() == 3
    assert any("a module is enabled and trace_filter does not answer" in r.getMessage() for r in caplog.records)


def test_a_check_provider_showing_other_code_than_the_safe_holds_the_chain(node, settings, caplog):
    """The primary's Safe proxy code is what lets a range be read by the Safe's events: a check provider
    (DWS_RPC_CHECK_URL) that shows other code at the address disagrees, and nothing is confirmed."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(20)
    with RpcProxy(node.url) as check:

        def other_code(code, params):
            return "0x00" if str(params[0]).lower() == DONATION_ADDRESS else code

        check.arm("eth_getCode", "rewrite", count=None, rewrite=other_code)
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=check.url("/check"))
        with caplog.at_level(logging.WARNING):
            result = crawl(FINALIZED)

    assert "providers disagree" in result.held
    assert "ours says a SafeProxy 1.4.1" in result.held
    assert not Donation.objects.filter(status="confirmed").exists()
