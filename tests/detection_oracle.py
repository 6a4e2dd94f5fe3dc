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
    logs = _transfers_to_the_address(anvil, start, end)
    for log in logs:
        sender = "0x" + log["topics"][1][-40:]
        # neither the address's own coin (a self-transfer) nor a mint (no sender) is a donation
        if int(log["data"], 16) > 0 and sender not in (DONATION_ADDRESS, "0x" + "0" * 40):
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
    transfer, "0.2" for the third call of the first) or the log index for a coin; and the transactions
    the address signed. Written from the rules of docs/detection.md, not the crawlers' code: a call frame
    that reverted or sits under a reverted one brings nothing; the address's own money never counts:
    anything in a transaction it signed, an ETH frame nested under a CALL the address made, a coin whose
    contract runs in the transaction only under such calls, a coin Transfer whose `from` is the address.
    Dust is included (the caller decides what is recordable)."""
    if end < start:
        return {}, set()
    found: dict[tuple[str, str, str], int] = {}
    signed: set[str] = set()
    coin_runs: dict[str, dict[str, bool]] = {}  # tx -> coin contract -> runs outside the address's calls
    coins = set(anvil.coins.values())
    blocks = anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(start, end + 1)])
    for block in blocks:
        signed |= {tx["hash"].lower() for tx in block["transactions"] if tx["from"].lower() == DONATION_ADDRESS}
        if not block["transactions"]:
            continue
        for trace in anvil.rpc("debug_traceBlockByNumber", block["number"], {"tracer": "callTracer"}):
            tx_hash = trace["txHash"].lower()
            runs = coin_runs.setdefault(tx_hash, {})
            for path, wei, own, to in _frames(trace["result"], "", False):
                if to in coins:
                    runs[to] = runs.get(to, False) or not own
                if wei and to == DONATION_ADDRESS and not own:
                    found[(tx_hash, "eth", path)] = wei
    assets = {address: asset for asset, address in anvil.coins.items()}
    logs = _transfers_to_the_address(anvil, start, end)
    for log in logs:
        sender, tx_hash, coin = "0x" + log["topics"][1][-40:], log["transactionHash"].lower(), log["address"].lower()
        minted = sender == "0x" + "0" * 40  # no sender to credit
        if (
            int(log["data"], 16) > 0
            and sender != DONATION_ADDRESS
            and not minted
            and coin_runs.get(tx_hash, {}).get(coin, True)
        ):
            found[(tx_hash, assets[coin], str(int(log["logIndex"], 16)))] = int(log["data"], 16)
    return {key: units for key, units in found.items() if key[0] not in signed}, signed


def _transfers_to_the_address(anvil: Anvil, start: int, end: int) -> list[dict]:
    """The test coins' Transfer logs to the donation address in start..end, as the node gives them."""
    return anvil.rpc(
        "eth_getLogs",
        {
            "fromBlock": hex(start),
            "toBlock": hex(end),
            "address": list(anvil.coins.values()),
            "topics": [TRANSFER, None, "0x" + "0" * 24 + DONATION_ADDRESS[2:]],
        },
    )


def _frames(frame: dict, path: str, own: bool) -> list[tuple[str, int, bool, str]]:
    """(path, wei, own, to) of this frame and every frame under it that did not revert; own: the frame is,
    or is nested under, a CALL the donation address made."""
    if frame.get("error"):
        return []
    own = own or (frame.get("type") == "CALL" and (frame.get("from") or "").lower() == DONATION_ADDRESS)
    wei = int(frame.get("value") or "0x0", 16) if frame.get("type") == "CALL" else 0
    out = [(path, wei, own, (frame.get("to") or "").lower())]
    for index, call in enumerate(frame.get("calls") or ()):
        out += _frames(call, f"{path}.{index}" if path else str(index), own)
    return out


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


def internal_wei(anvil: Anvil, start: int, end: int) -> dict[int, int]:
    """Block -> the wei that reached the donation address by internal calls (not reverted, nor under a
    reverted one; the address's own and dust included): what a provider without traces cannot explain."""
    found: dict[int, int] = {}
    for number in range(start, end + 1):
        for trace in anvil.rpc("debug_traceBlockByNumber", hex(number), {"tracer": "callTracer"}):
            for path, wei, _, to in _frames(trace["result"], "", False):
                if path and wei and to == DONATION_ADDRESS:
                    found[number] = found.get(number, 0) + wei
    return found
