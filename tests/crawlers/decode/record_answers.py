"""Record the node answers the golden decoding tests read (ethereum-etl style: answers beside the values
they must decode to). Run it to regenerate `resources/`:

    .venv/bin/python -m tests.crawlers.decode.record_answers

One block on a fresh anvil holds everything a scan decodes: an ETH donation, a USDT Transfer to the
donation address, a smart wallet paying it in two internal calls, and a transaction the donation
address sends itself (value and fee leave it). `expected.json` is written from what this script did
(who sent what, to whom, in which call), never from our decoders, so the tests check them against an
oracle; only the gas fee is read from the node, through the balances it changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil, deploy_stable_coins

RESOURCES = Path(__file__).resolve().parent / "resources"
DONOR, COIN_DONOR, WALLET_OWNER, PAYEE = ACCOUNTS[1], ACCOUNTS[2], ACCOUNTS[3], ACCOUNTS[4]
OPENING_WEI = 5 * ETHER  # the donation address's balance before the block, set by hand
USDT_UNITS = 25 * 10**6  # 25 USDT (6 decimals)
FRAMES_WEI = [ETHER, 2 * ETHER]  # the wallet's two internal payments, trace addresses "0" and "1"
SENT_WEI = ETHER // 2  # what the donation address sends away in the block


def _balance_calls(address: str, coins: list[str], block: int) -> list[tuple[str, list]]:
    """The donation address's ETH balance, nonce and each coin's balanceOf, the order the crawler asks."""
    data = "0x70a08231" + "0" * 24 + address[2:]
    at = hex(block)
    calls = [("eth_getBalance", [address, at]), ("eth_getTransactionCount", [address, at])]
    return calls + [("eth_call", [{"to": coin, "data": data}, at]) for coin in coins]


def record(node: Anvil) -> dict:
    coins = deploy_stable_coins(node)
    wallet = node.deploy("EthForwarder", sender=WALLET_OWNER)
    node.send_eth(WALLET_OWNER, wallet, 4 * ETHER)
    node.mint(coins["usdt"], COIN_DONOR, USDT_UNITS)
    node.rpc("anvil_setBalance", DONATION_ADDRESS, hex(OPENING_WEI))
    node.mine(1)
    with node.one_block():
        eth_tx = node.send_eth(DONOR, DONATION_ADDRESS, ETHER)
        usdt_tx = node.transfer_token(coins["usdt"], COIN_DONOR, DONATION_ADDRESS, USDT_UNITS)
        data = node.call_data(
            "forwardMany(address,uint256[])", ["address", "uint256[]"], [DONATION_ADDRESS, FRAMES_WEI]
        )
        wallet_tx = node.send({"from": WALLET_OWNER, "to": wallet, "data": data, "gas": hex(500_000)})
        sent_tx = node.send_eth(DONATION_ADDRESS, PAYEE, SENT_WEI)
    number = node.head()
    hashes = [eth_tx, usdt_tx, wallet_tx, sent_tx]
    contracts = [coins["usdt"], coins["usdc"]]
    us_topic = "0x" + "0" * 24 + DONATION_ADDRESS[2:]
    span = {"address": contracts, "fromBlock": hex(number), "toBlock": hex(number)}
    transfer = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
    answers = {
        "eth_getBlockByNumber.json": node.block(number, full=True),
        "eth_getTransactionReceipt.json": {h: node.receipt(h) for h in hashes},
        "eth_getLogs.json": [
            node.rpc("eth_getLogs", {**span, "topics": [transfer, None, us_topic]}),
            node.rpc("eth_getLogs", {**span, "topics": [transfer, us_topic]}),
        ],
        "debug_traceBlockByNumber.json": node.rpc("debug_traceBlockByNumber", hex(number), {"tracer": "callTracer"}),
        "trace_block.json": node.rpc("trace_block", hex(number)),
        "balances.json": {
            "before": node.rpc_batch(_balance_calls(DONATION_ADDRESS, contracts, number - 1)),
            "after": node.rpc_batch(_balance_calls(DONATION_ADDRESS, contracts, number)),
        },
    }
    for name, answer in answers.items():
        (RESOURCES / name).write_text(json.dumps(answer, indent=1, sort_keys=True) + "\n")
    return {
        "chain": {"donation_address": DONATION_ADDRESS, "coins": {"usdt": coins["usdt"], "usdc": coins["usdc"]}},
        "block_number": number,
        "eth_donation": {"tx_hash": eth_tx, "donor": DONOR, "wei": ETHER},
        "usdt_donation": {"tx_hash": usdt_tx, "donor": COIN_DONOR, "units": USDT_UNITS},
        "internal_donations": [
            {"tx_hash": wallet_tx, "donor": wallet, "trace_address": str(i), "wei": wei}
            for i, wei in enumerate(FRAMES_WEI)
        ],
        "sent": {"tx_hash": sent_tx, "to": PAYEE, "wei": SENT_WEI},
        "transactions": hashes,
        "opening": {"eth": OPENING_WEI, "nonce": 0, "usdt": 0, "usdc": 0},
    }


def main() -> None:
    RESOURCES.mkdir(exist_ok=True)
    with Anvil() as node:
        expected = record(node)
    (RESOURCES / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"recorded block {expected['block_number']} into {RESOURCES}")


if __name__ == "__main__":
    main()
