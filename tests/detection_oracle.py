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
        if (tx.get("to") or "").lower() == DONATION_ADDRESS
        and int(tx["value"], 16) > 0
        and tx["from"].lower() != DONATION_ADDRESS  # a self-transfer is the address's own money
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
        if int(log["data"], 16) > 0 and "0x" + log["topics"][1][-40:] != DONATION_ADDRESS:
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


# --- the fuzzer's oracle: every unit, frame by frame, with the own-money rule -----------------------------
ETH_SCALE = 10**10  # wei per unit of the 8-decimal donation.amount column
COIN_UNIT = 10**6  # the test coins' decimals


def donation_units(anvil: Anvil, start: int, end: int) -> tuple[dict[tuple[str, str, str], int], set[str]]:
    """What reached the donation address as donations in blocks start..end, frame by frame:
    (tx hash, asset, frame) -> raw units, where frame is the call path for ETH ("" for the top-level
    transfer, "0.2" for the third call of the first) or the log index for a coin. Written from the rules of
    docs/detection.md, not the crawlers' code: a call frame that reverted or sits under a reverted one
    brings nothing; nothing arriving in the address's own transactions counts (one it signed, or one in
    whose call tree the address itself made a CALL), nor a coin Transfer whose `from` is the address.
    Dust is included (the caller decides what is recordable). Also returns the own transactions."""
    if end < start:
        return {}, set()
    found: dict[tuple[str, str, str], int] = {}
    own: set[str] = set()
    blocks = anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(start, end + 1)])
    for block in blocks:
        own |= {tx["hash"].lower() for tx in block["transactions"] if tx["from"].lower() == DONATION_ADDRESS}
        if not block["transactions"]:
            continue
        for trace in anvil.rpc("debug_traceBlockByNumber", block["number"], {"tracer": "callTracer"}):
            tx_hash = trace["txHash"].lower()
            if _calls_out(trace["result"]):
                own.add(tx_hash)
            for path, wei in _frames_to_us(trace["result"], ""):
                found[(tx_hash, "eth", path)] = wei
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
        sender = "0x" + log["topics"][1][-40:]
        if int(log["data"], 16) > 0 and sender.lower() != DONATION_ADDRESS:
            key = (log["transactionHash"].lower(), assets[log["address"].lower()], str(int(log["logIndex"], 16)))
            found[key] = int(log["data"], 16)
    return {key: units for key, units in found.items() if key[0] not in own}, own


def _frames_to_us(frame: dict, path: str) -> list[tuple[str, int]]:
    if frame.get("error"):
        return []
    out: list[tuple[str, int]] = []
    value = int(frame.get("value") or "0x0", 16)
    if frame.get("type") == "CALL" and value > 0 and (frame.get("to") or "").lower() == DONATION_ADDRESS:
        out.append((path, value))
    for index, call in enumerate(frame.get("calls") or ()):
        out += _frames_to_us(call, f"{path}.{index}" if path else str(index))
    return out


def _calls_out(frame: dict) -> bool:
    """The address itself made a CALL somewhere in this call tree (a contract or delegated address)."""
    calls = frame.get("calls") or ()
    if frame.get("type") == "CALL" and (frame.get("from") or "").lower() == DONATION_ADDRESS:
        return True
    return any(_calls_out(call) for call in calls)


DESTROYED = "0x" + keccak(text="DestroyedBlackFunds(address,uint256)").hex()


def burnt_without_log(anvil: Anvil, start: int, end: int) -> set[tuple[int, str, int]]:
    """(block, asset, -raw units) for each coin balance of the donation address burnt with no Transfer log
    (USDT's destroyBlackFunds) in blocks start..end: what the crawlers put on record as an outflow."""
    if end < start:
        return set()
    assets = {address: asset for asset, address in anvil.coins.items()}
    logs = anvil.rpc(
        "eth_getLogs", {"fromBlock": hex(start), "toBlock": hex(end), "address": list(assets), "topics": [DESTROYED]}
    )
    burnt = set()
    for log in logs:
        holder, funds = "0x" + log["data"][26:66], int(log["data"][66:130], 16)
        if holder.lower() == DONATION_ADDRESS and funds > 0:
            burnt.add((int(log["blockNumber"], 16), assets[log["address"].lower()], -funds))
    return burnt
