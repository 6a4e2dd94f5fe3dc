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
ZERO = "0x" + "0" * 40
# Circle's CCTP MessageTransmitters as the fuzzer installs them (tests/cctp.py) and their MessageReceived events
CCTP_TRANSMITTERS = {"0x0a992d191deec32afe36203ad87d7d289a738f81", "0x81d40f21f12a8f0e3252bccb954d722d4c464b64"}
RECEIVED = {
    "0x" + keccak(text="MessageReceived(address,uint32,uint64,bytes32,bytes)").hex(): False,
    "0x" + keccak(text="MessageReceived(address,uint32,bytes32,bytes32,uint32,bytes)").hex(): True,
}
_traced: dict[tuple[str, str], list] = {}  # (node, block hash) -> its callTracer answer: a block is traced once


def _block_traces(anvil: Anvil, block: dict) -> list:
    """anvil's own callTracer answer for a block (fetched as `block`), kept by hash: a history's call bombs
    are traced once, not at every step's check."""
    key = (anvil.url, block["hash"])
    if key not in _traced:
        _traced[key] = anvil.rpc("debug_traceBlockByNumber", block["number"], {"tracer": "callTracer"})
    return _traced[key]


def cctp_depositor(anvil: Anvil, mint: dict) -> str | None:
    """Who a coin minted to the donation address belongs to by Circle's CCTP, read here from the mint's
    receipt without the crawlers' code: the messageSender of the burn message in the first MessageReceived
    of a known transmitter after the mint, when it names the address and the amount minted (v2: less the
    fee executed); None otherwise."""
    receipt = anvil.receipt(mint["transactionHash"])
    after = int(mint["logIndex"], 16)
    for log in sorted(receipt["logs"], key=lambda entry: int(entry["logIndex"], 16)):
        if int(log["logIndex"], 16) <= after or log["address"].lower() not in CCTP_TRANSMITTERS:
            continue
        if log["topics"][0].lower() not in RECEIVED:
            continue
        v2, data = RECEIVED[log["topics"][0].lower()], bytes.fromhex(log["data"][2:])
        offset = int.from_bytes(data[64:96], "big")
        body = data[offset + 32 : offset + 32 + int.from_bytes(data[offset : offset + 32], "big")]
        recipient, depositor = "0x" + body[48:68].hex(), "0x" + body[112:132].hex()
        amount = int.from_bytes(body[68:100], "big") - (int.from_bytes(body[164:196], "big") if v2 else 0)
        return depositor if recipient == DONATION_ADDRESS and amount == int(mint["data"], 16) else None
    return None


def donation_units(anvil: Anvil, start: int, end: int) -> tuple[dict[tuple[str, str, str], int], set[str]]:
    units, signed, _ = donations_and_mints(anvil, start, end)
    return units, signed


def donations_and_mints(
    anvil: Anvil, start: int, end: int
) -> tuple[dict[tuple[str, str, str], int], set[str], set[tuple[int, str, int]]]:
    """What reached the donation address as donations in blocks start..end, frame by frame:
    (tx hash, asset, frame) -> raw units, where frame is the call path for ETH ("" for the top-level
    transfer, "0.2" for the third call of the first) or the log index for a coin; and the transactions
    the address signed. Written from the rules of docs/detection.md, not the crawlers' code: a call frame
    that reverted or sits under a reverted one brings nothing; the address's own money never counts:
    anything in a transaction it signed, an ETH frame nested under a CALL the address made, a coin whose
    contract runs in the transaction only under such calls, a coin Transfer whose `from` is the address.
    Dust is included (the caller decides what is recordable). A coin minted to the address is its CCTP
    depositor's (`cctp_depositor`; the address's own when that is the address); the third value is what
    is minted with nobody named: (block, asset, raw), an open question for the operator."""
    if end < start:
        return {}, set(), set()
    found: dict[tuple[str, str, str], int] = {}
    signed: set[str] = set()
    coin_runs: dict[str, dict[str, bool]] = {}  # tx -> coin contract -> runs outside the address's calls
    coins = set(anvil.coins.values())
    blocks = anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(start, end + 1)])
    for block in blocks:
        signed |= {tx["hash"].lower() for tx in block["transactions"] if tx["from"].lower() == DONATION_ADDRESS}
        if not block["transactions"]:
            continue
        for trace in _block_traces(anvil, block):
            tx_hash = trace["txHash"].lower()
            runs = coin_runs.setdefault(tx_hash, {})
            for path, wei, own, to in _frames(trace["result"], "", False):
                if to in coins:
                    runs[to] = runs.get(to, False) or not own
                if wei and to == DONATION_ADDRESS and not own:
                    found[(tx_hash, "eth", path)] = wei
    assets = {address: asset for asset, address in anvil.coins.items()}
    logs = _transfers_to_the_address(anvil, start, end)
    unnamed: dict[tuple[int, str], int] = {}
    for log in logs:
        sender, tx_hash, coin = "0x" + log["topics"][1][-40:], log["transactionHash"].lower(), log["address"].lower()
        raw, own = int(log["data"], 16), tx_hash in signed or not coin_runs.get(tx_hash, {}).get(coin, True)
        # a mint: its CCTP depositor's whoever relayed the message, the address's own, or nobody's
        depositor = cctp_depositor(anvil, log) if sender == ZERO else None
        if raw == 0 or sender == DONATION_ADDRESS or (own and depositor is None) or depositor == DONATION_ADDRESS:
            continue
        if sender == ZERO and depositor is None:
            where = (int(log["blockNumber"], 16), assets[coin])
            unnamed[where] = unnamed.get(where, 0) + raw
            continue
        found[(tx_hash, assets[coin], str(int(log["logIndex"], 16)))] = raw
    named = {key for key in found if key[1] != "eth"}  # a coin's units were judged above, signed or not
    units = {key: units for key, units in found.items() if key[0] not in signed or key in named}
    return units, signed, {(n, asset, raw) for (n, asset), raw in unnamed.items()}


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
    for block in anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), False]) for n in range(start, end + 1)]):
        number = int(block["number"], 16)
        for trace in _block_traces(anvil, block) if block["transactions"] else ():
            for path, wei, _, to in _frames(trace["result"], "", False):
                if path and wei and to == DONATION_ADDRESS:
                    found[number] = found.get(number, 0) + wei
    return found


def paid_through(anvil: Anvil, start: int, end: int, contract: str) -> dict[str, tuple[int, int]]:
    """tx hash -> (block, wei) of the successful transactions to `contract` in start..end that sent it ETH
    (the fuzzer's call bomb pays on all it is sent, to the donation address)."""
    if end < start:
        return {}
    blocks = anvil.rpc_batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(start, end + 1)])
    sent = {
        tx["hash"].lower(): (int(block["number"], 16), int(tx["value"], 16))
        for block in blocks
        for tx in block["transactions"]
        if (tx.get("to") or "").lower() == contract and int(tx["value"], 16) > 0
    }
    return {tx: found for tx, found in sent.items() if anvil.receipt(tx)["status"] == "0x1"}
