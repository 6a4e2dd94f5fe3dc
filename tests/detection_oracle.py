"""The test oracle for "which donations are on the chain": an independent reading of anvil, written
without the crawlers' code, so the chaos and reconcile checks do not grade the crawlers by themselves."""

from __future__ import annotations

from eth_utils import keccak

from tests.chain import DONATION_ADDRESS, Anvil

TRANSFER = "0x" + keccak(text="Transfer(address,address,uint256)").hex()


def chain_donations(anvil: Anvil, start: int, end: int) -> dict[tuple[str, int | None], str]:
    """(tx hash, log index or None for ETH) -> asset, for every successful transfer to the donation
    address with a non-zero amount in blocks start..end of anvil's current chain, ETH paid by a contract
    (an internal call) included."""
    if end < start:
        return {}
    blocks = anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(start, end + 1)])
    candidates = [
        tx["hash"].lower()
        for block in blocks
        for tx in block["transactions"]
        if (tx.get("to") or "").lower() == DONATION_ADDRESS and int(tx["value"], 16) > 0
    ]
    receipts = anvil.rpc_batch([("eth_getTransactionReceipt", [h]) for h in candidates]) if candidates else []
    found: dict[tuple[str, int | None], str] = {
        (h, None): "eth" for h, r in zip(candidates, receipts, strict=True) if r["status"] == "0x1"
    }
    assets = {address: asset for asset, address in anvil.coins.items()}
    logs = anvil.rpc(
        "eth_getLogs",
        {
            "fromBlock": hex(start),
            "toBlock": hex(end),
            "address": list(assets),
            "topics": [TRANSFER, None, "0x" + "0" * 24 + DONATION_ADDRESS[2:]],
        },
    )
    for log in logs:
        if int(log["data"], 16) > 0:
            found[(log["transactionHash"].lower(), int(log["logIndex"], 16))] = assets[log["address"].lower()]
    for block in blocks:
        if block["transactions"]:
            for tx_hash in internal_eth(anvil, int(block["number"], 16)):
                found[(tx_hash, None)] = "eth"
    return found


def internal_eth(anvil: Anvil, number: int) -> set[str]:
    """Transactions of block `number` in which a contract's call frame (not reverted, nor under a reverted
    one) sent ETH to the donation address, from anvil's own call tracer."""
    found: set[str] = set()

    def walk(frame: dict, tx_hash: str, depth: int) -> None:
        if frame.get("error"):
            return
        value = int(frame.get("value") or "0x0", 16)
        if depth > 0 and value > 0 and (frame.get("to") or "").lower() == DONATION_ADDRESS:
            found.add(tx_hash)
        for call in frame.get("calls") or ():
            walk(call, tx_hash, depth + 1)

    for trace in anvil.rpc("debug_traceBlockByNumber", hex(number), {"tracer": "callTracer"}):
        walk(trace["result"], trace["txHash"].lower(), 0)
    return found
