#!/usr/bin/env python3
"""Check a dws token sale's public proof of completeness against your own Ethereum node.

    python3 verify_proof.py --site https://sale.example --rpc https://your-node.example [--chain eth]
        [--address 0xTHE_ADDRESS_YOU_PAID] [--coin usdc=0xTHE_CONTRACT_YOU_PAID_IN ...] [--tx 0xYOUR_PAYMENT ...]

Take this file from the project's repository (or check its SHA-256 against the README's), not only from the
sale it checks: a dishonest sale could serve one that always matches. `--version` names its version.

What it relies on comes from your node or from you, never from the sale: the chain id, each coin's decimals
(its contract's decimals()), and, when you give them, the donation address and the coin contracts (the check
fails when the site names others, or leaves a coin you named out). It prints the address and the coins first.
Name the transactions you paid in (--tx): each must lie inside the proof, and you are told what it made of each.

It reads the sale's proof (/proof.json) and its confirmed donations (/proof/donations.csv), and for every
range of blocks the site publishes, proven or not, asks YOUR node (never the sale's):

* the donation address's ETH balance, nonce and each coin's balanceOf at the block before the range and at
  its last block, and that last block's hash: they must be what the site says;
* every block where the ETH balance or the nonce moved (found by halving the range), read in full: what the
  address sent (value and fee, by the crawler's rules for the chain), what a deposit it made from L1 minted
  to it, the transactions that paid it; and the call traces of every such block whose balance rose by more
  than those explain: each internal call that paid it (its payer the call's `from`, or for ETH an OP-stack
  rollup's standard bridge relayed from L1 the L1 account that bridged it);
* the address's code at the opening edge and after every block where its nonce moved (an EIP-7702
  delegation comes and goes only so): every block in which it had code is read through its call traces too
  (found with trace_filter where your node serves it), what came in and what went out by internal calls;
* the coins' Transfer logs to and from the address (a coin minted to it: whose a CCTP message says it is).

Every payment at or above the dust (1e-8 ETH; a coin's 10th decimal) must then be a listed donation (same
amount at the stored scale, same payer, same block), the address's own money by the crawler's rules (from
itself, in a transaction it signed, nested under a call it made, bridged by itself), a donation the site lists
as not confirmed yet (a paused sale's backlog), or an open unexplained inflow the site lists in that block;
anything else "does not match", naming the transaction, the amount, the payer and the call path. What left
the address must be the site's `left`, the site's own figures must add up,

    closing - opening = credited + unexplained + uncredited - left

and `uncredited` must be exactly the dust, rounding, own money and backlog found. A range the site calls
unproven is checked in full all the same where your node has the history. The first range that does not
match is named and the check stops.

Exit status: 0 every range matches; 1 a range does not match (named), or blocks no range or two cover; 2 bad
arguments; 3 everything that could be checked matches but your node could not answer everything (no state
for old blocks: use an archive node or a provider with history; no call traces where they were needed);
4 the site or the node could not be read: no full answer within --timeout seconds (the donation CSV: ten
times that), an answer larger than its cap, nested deeper than the documents go, not in the documented
shape, pages that do not move forward, your node on another chain. One line, never a traceback.

Standard library only, so it runs anywhere Python 3.10+ does without installing anything.

Contents (each section a line of dashes below):
    reading the site (and the node) ......... fetch: one deadline per answer, size caps, a nesting limit
    what the site says ...................... the documented shape of /proof.json (read a page at a time) and the CSV
    asking the node ......................... batches, balances, halving to the blocks that moved, logs
    what a transaction cost its sender ...... the fee rules per chain (as the crawler's)
    call traces ............................. frames, their paths, whose ETH each moves, our own money
    a coin minted to the address ............ the CCTP mint rule (as the crawler's)
    what the check relies on ................ Sale: the address, the coins, their decimals, your pins
    one range: every payment found .......... Payment, Ledger: what the rules say each payment is
    one range: the check against your node .. Check: balances, ETH, coins, the mode inside the range
    the whole proof ......................... verify(): ranges as they come, your transactions (--tx); main()
"""

from __future__ import annotations

import argparse
import bisect
import csv
import datetime
import email.utils
import http.client
import io
import itertools
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

__version__ = "2.2.0"

MATCHES, MISMATCH, BAD_ARGUMENTS, INCOMPLETE, UNREADABLE = 0, 1, 2, 3, 4
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
BALANCE_OF = "0x70a08231"  # balanceOf(address)
ZERO_ADDRESS = "0x" + "0" * 40  # a Transfer from it is a mint: no sender to credit
PAGE = 500  # ranges per /proof.json request
BATCH = 100  # calls per JSON-RPC batch
TRACE_BATCH = 8  # blocks' call traces per batch: a busy block's is megabytes
LOG_SPAN = 2000  # blocks per eth_getLogs; halved when the node refuses a span
COLUMN_DECIMALS = 10  # donation amounts are stored with at most 10 decimals (ETH with 8)
ETH_DECIMALS = 8
RETRIES = 3  # a 429 from the site is waited out this many times
PRECOMPILES = frozenset([*range(1, 0x12), 0x100])  # value-less calls to these take no place in a call path
# OP-stack predeploys (the same on every OP-stack rollup) and the relayed calls of an ETH deposit made through
# L1StandardBridge: finalizeBridgeETH(address,address,uint256,bytes), the legacy
# finalizeDeposit(address,address,address,address,uint256,bytes) with the ETH placeholder token.
L2_CROSS_DOMAIN_MESSENGER = "0x4200000000000000000000000000000000000007"
L2_STANDARD_BRIDGE = "0x4200000000000000000000000000000000000010"
LEGACY_ERC20_ETH = "0xdeaddeaddeaddeaddeaddeaddeaddeaddead0000"
FINALIZE_BRIDGE_ETH, FINALIZE_DEPOSIT = "1635f5fd", "662a633a"


class Unreadable(Exception):
    """The site or the node did not answer in a way we can read."""


class Mismatch(Exception):
    """The range does not match what the chain says."""


class NoHistory(Exception):
    """The node keeps no state for that block (it answers the same question about its head)."""

    def __init__(self, block: int) -> None:
        super().__init__(f"your node keeps no state for block {block}")
        self.block = block


class RpcError(Exception):
    pass


# --- reading the site (and the node): one deadline per answer, a size cap, a nesting limit --------------------


SITE_JSON_CAP = 64 * 2**20  # bytes of one /proof.json page (a full page of 500 ranges is well under 1 MiB)
CSV_CAP = 2**30  # bytes of the donation CSV (a million donations take about 240 MiB)
NODE_CAP = 512 * 2**20  # bytes of one answer of your node (a batch of call traces can be large)
CSV_DEADLINE_FACTOR = 10  # the CSV, the whole sale in one answer, gets ten times --timeout
SITE_DEPTH = 16  # /proof.json nests 5 levels deep; a site may not make the decoder recurse for ever
NODE_DEPTH = 2 * 1024 + 64  # a call trace nests two levels per call, and the EVM stops calls at 1,024 deep
# A string, or one that never closes (then the rest of the answer): every match succeeds where it starts, so
# no quote is tried again against the rest (an unclosed string of escaped quotes made that quadratic: hours).
STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
BRACKETS = re.compile(rb"[\[\]{}]")


def _retry_after(value: str | None) -> float:
    """Seconds a 429 asks us to wait: a whole number of seconds or an HTTP date, within 0..30; anything
    else (a NaN, an infinity, a negative, a word) is no answer we can act on."""
    value = (value or "").strip()
    if re.fullmatch(r"[0-9]{1,6}", value):
        return min(float(value), 30.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        when = None
    if when is None or when.tzinfo is None:
        raise ValueError(f"a Retry-After of {value[:40]!r}")
    now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 - Python 3.10 has no datetime.UTC
    return min(max((when - now).total_seconds(), 0.0), 30.0)


def _read_all(request: urllib.request.Request, seconds: float, cap: int, name: str) -> bytes:
    """The whole body, at most `cap` bytes (more: Unreadable). The socket's own time-out only bounds each
    read; the caller's deadline bounds the whole."""
    with urllib.request.urlopen(request, timeout=seconds) as answer:  # noqa: S310 - the scheme is checked
        declared = answer.headers.get("Content-Length")
        if declared and declared.strip().isdigit() and int(declared) > cap:
            raise Unreadable(f"{name}: the answer is larger than {cap // 2**20} MiB")
        parts, size = [], 0
        while chunk := answer.read(2**20):
            size += len(chunk)
            if size > cap:
                raise Unreadable(f"{name}: the answer is larger than {cap // 2**20} MiB")
            parts.append(chunk)
        return b"".join(parts)


def _within(seconds: float, work: Any) -> dict[str, Any] | None:
    """`work()` in a thread of its own: {"body": its result} or {"error": what it raised}, or None when it
    has not finished within `seconds` (the thread is left behind: the verifier exits on it anyway)."""
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["body"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
            done["error"] = exc

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(seconds)
    return None if reader.is_alive() else done


def fetch(url: str, seconds: float, cap: int, *, body: bytes | None = None, name: str | None = None) -> bytes:
    """The answer to a GET of `url` (a POST of `body`), named `name` in messages (a node's URL may carry a
    key, so it is never printed), in full within `seconds` however slowly its bytes come. A 429 is waited
    out as its Retry-After says (within reason), each attempt with its own deadline."""
    name = name or url
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise Unreadable(f"{name}: only http and https URLs are read")
    headers = {"User-Agent": f"dws-verify/{__version__}", "Accept": "*/*", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310 - the scheme is checked above
    for attempt in range(RETRIES + 1):
        done = _within(seconds, lambda: _read_all(request, seconds, cap, name))
        if done is None:
            raise Unreadable(f"{name}: no full answer within {seconds:g} s")
        exc = done.get("error")
        if exc is None:
            return done["body"]
        if isinstance(exc, urllib.error.HTTPError):
            if exc.code != 429 or attempt == RETRIES:
                raise Unreadable(f"{name}: HTTP {exc.code} {printable(exc.reason, 80)}") from None
            try:
                wait = _retry_after(exc.headers.get("Retry-After"))
            except ValueError as why:
                raise Unreadable(f"{name}: HTTP 429 with {why}, which says no time to wait") from None
            time.sleep(wait)
            continue
        if isinstance(exc, Unreadable):
            raise exc
        if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
            raise Unreadable(f"{name}: no full answer within {seconds:g} s") from None  # one read's time-out
        if isinstance(exc, (urllib.error.URLError, OSError, ValueError, http.client.HTTPException)):
            raise Unreadable(f"{name}: {printable(getattr(exc, 'reason', exc), 200)}") from None
        raise exc
    raise Unreadable(name)  # not reached


def printable(text: object, limit: int = 200) -> str:
    """The site's text as the verifier may print it: no new line, terminal escape or other control character
    (a site could otherwise write a line of the verifier's own, or hide the ones after it), at most `limit`
    characters."""
    text = str(text)
    return "".join(c if c.isprintable() else "?" for c in text[:limit]) + ("..." if len(text) > limit else "")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number")


def decode_json(body: bytes, name: str, depth: int) -> Any:
    """JSON, refused when it nests deeper than `depth` (counted before decoding, outside strings) or holds
    NaN or an infinity."""
    level = 0
    for bracket in BRACKETS.finditer(STRINGS.sub(b'""', body)):
        level += 1 if bracket.group() in b"[{" else -1
        if level > depth:
            raise Unreadable(f"{name}: the answer is nested deeper than {depth} levels")
    # The decoder recurses once a level: room for the depth just checked.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 500))
    try:
        return json.loads(body, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Unreadable(f"{name} did not answer JSON ({str(exc)[:80]})") from None


# --- what the site says, checked against its documented shape -------------------------------------------------

HASH = re.compile(r"0x[0-9a-fA-F]{64}")
CHAIN_NAME = re.compile(r"[a-z][a-z0-9]{0,15}")  # as DWS_CHAINS names them
ASSET_NAME = re.compile(r"[a-z0-9]{1,16}")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
RAW = re.compile(r"-?[0-9]{1,80}")  # negative: a coin burnt at the address without a log, an inflow < 0
AMOUNT = re.compile(r"[0-9]{1,40}(\.[0-9]{1,40})?")
TRACE_ADDRESS = re.compile(r"[0-9]{1,5}(\.[0-9]{1,5}){0,1100}")


class Shape:
    """Checks that a value is what the documentation says, naming where it is not (Unreadable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, where: str) -> Unreadable:
        return Unreadable(f"{self.name} is not in the documented shape ({where})")

    def of(self, value: Any, kind: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.fail(where)
        return value

    def key(self, found: dict, name: str, where: str) -> Any:
        """found[name], which may be null but must be there (absent, it is not "unknown" but missing)."""
        if name not in found:
            raise self.fail(f"{where}: no {name}")
        return found[name]

    def block(self, value: Any, where: str) -> int:
        number = self.of(value, int, where)
        if not 0 <= number < 2**63:
            raise self.fail(where)
        return number

    def text(self, value: Any, pattern: re.Pattern[str], where: str, *, null: bool = False) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise self.fail(where)
        return value


def checked_chain(found: Any, shape: Shape) -> dict:
    """One chain of a /proof.json page, every field the verifier reads in its documented type."""
    chain = shape.of(found, dict, "a chain")
    shape.text(chain.get("chain"), CHAIN_NAME, "chain")  # names are printed: nothing but these characters
    shape.block(chain.get("chain_id"), "chain_id")  # your node must be on it: without it, nothing says so
    if chain.get("first_block") is not None:
        shape.block(chain["first_block"], "first_block")
    shape.text(chain.get("donation_address"), ADDRESS, "donation_address")
    for asset in shape.of(chain.get("assets"), list, "assets"):
        shape.of(asset, dict, "an asset")
        shape.text(asset.get("asset"), ASSET_NAME, "an asset's name")
        shape.text(asset.get("contract"), ADDRESS, f"{asset.get('asset')}'s contract", null=asset["asset"] == "eth")
        decimals = shape.of(asset.get("decimals"), int, f"{asset['asset']}'s decimals")
        if not 0 <= decimals <= 77:
            raise shape.fail(f"{asset['asset']}'s decimals")
    for found_range in shape.of(chain.get("ranges"), list, "ranges"):
        checked_range(found_range, shape)
    if chain.get("next_from_block") is not None:
        shape.block(chain["next_from_block"], "next_from_block")
    return chain


def checked_range(found: Any, shape: Shape) -> dict:
    found = shape.of(found, dict, "a range")
    first = shape.block(found.get("first_block"), "first_block")
    last = shape.block(found.get("last_block"), "last_block")
    where = f"range {first}..{last}"
    if last < first:
        raise shape.fail(f"{where} ends before it starts")
    shape.text(found.get("last_block_hash"), HASH, f"{where}: last_block_hash")
    shape.of(found.get("status"), str, f"{where}: status")
    shape.of(found.get("reason"), str, f"{where}: reason")
    nonce = shape.of(found.get("nonce"), dict, f"{where}: nonce")
    for side in ("opening", "closing"):
        shape.text(shape.key(nonce, side, f"{where}: nonce"), RAW, f"{where}: nonce {side}", null=True)
    for asset in shape.of(found.get("assets"), list, f"{where}: assets"):
        shape.of(asset, dict, f"{where}: an asset")
        name = shape.text(asset.get("asset"), ASSET_NAME, f"{where}: an asset's name")
        for figure in ("opening", "closing", "uncredited", "left"):
            shape.text(shape.key(asset, figure, f"{where}: {name}"), RAW, f"{where}: {name} {figure}", null=True)
        for figure in ("credited", "unexplained"):
            shape.text(asset.get(figure), RAW, f"{where}: {name} {figure}")
        shape.block(asset.get("donations"), f"{where}: {name} donations")
    for inflow in shape.of(found.get("inflows"), list, f"{where}: inflows"):
        shape.of(inflow, dict, f"{where}: an inflow")
        shape.block(inflow.get("block_number"), f"{where}: an inflow's block_number")
        shape.of(inflow.get("asset"), str, f"{where}: an inflow's asset")
        shape.text(inflow.get("amount_raw"), RAW, f"{where}: an inflow's amount_raw")
    for item in shape.of(found.get("pending"), list, f"{where}: pending"):
        _checked_row(shape.of(item, dict, f"{where}: a pending donation"), shape, (*CSV_COLUMNS[1:], "amount"))
        shape.block(item.get("block_number"), f"{where}: a pending donation's block_number")
        item["block_number"] = str(item["block_number"])  # as the CSV writes it
    return found


class Proof:
    """The chain's proof as /proof.json pages it, read a page at a time: its ranges are checked as they come, so
    memory holds two pages, not every range (a site may publish one range per block: all of them at once took
    gigabytes). Each page must move forward: a `next_from_block` only on a full page, past the block it was asked
    from and the page's ranges, and within the chain's head, so a site cannot keep us paging for ever; the next
    page is read before a page's ranges are handed out, so one that does not move forward is refused first."""

    def __init__(self, site: str, chain: str | None, timeout: float, head: int) -> None:
        self.site, self.timeout, self.head, self.name = site, timeout, head, f"{site}/proof.json"
        self.query = {"limit": PAGE, "from_block": 0, **({"chain": chain} if chain else {})}
        self.chain = self._page()  # the first page: the chain, its address and coins, its first ranges
        self.query["chain"] = self.chain["chain"]

    def __getitem__(self, key: str) -> Any:
        return self.chain[key]

    def get(self, key: str) -> Any:
        return self.chain.get(key)

    def _page(self) -> dict:
        url = f"{self.site}/proof.json?{urllib.parse.urlencode(self.query)}"
        body = fetch(url, self.timeout, SITE_JSON_CAP, name=self.name)
        shape = Shape(self.name)
        page = shape.of(decode_json(body, self.name, SITE_DEPTH), dict, "the answer")
        chains = shape.of(page.get("chains"), list, "chains")
        if not chains:
            raise Unreadable(f"{self.name} lists no chain {self.query.get('chain') or ''}".rstrip())
        this = checked_chain(chains[0], shape)
        if "chain" in self.query and this["chain"] != self.query["chain"]:
            raise Unreadable(f"{self.name} answered chain {this['chain']} when asked for {self.query['chain']}")
        after = this.get("next_from_block")
        asked, reached = self.query["from_block"], max((r["last_block"] for r in this["ranges"]), default=-1)
        if after is not None and (
            len(this["ranges"]) < PAGE or after <= asked or after <= reached or after > self.head + 1
        ):
            raise Unreadable(
                f"{self.name}: next_from_block {after} after a page of {len(this['ranges'])} range(s) asked from "
                f"block {asked} does not move forward within the chain's head ({self.head})"
            )
        return this

    def ranges(self) -> Iterator[dict]:
        """Every range, page after page, each page's in block order (the check judges how they follow)."""
        page = self.chain
        while True:
            following = None
            if page.get("next_from_block") is not None:
                self.query["from_block"] = page["next_from_block"]
                following = self._page()
            yield from sorted(page["ranges"], key=lambda r: (r["first_block"], r["last_block"]))
            if following is None:
                return
            page = following


CSV_COLUMNS = ("chain", "tx_hash", "log_index", "trace_address", "block_number", "block_hash", "donor", "asset")


def read_donations(site: str, chain: str, timeout: float) -> list[dict]:
    """The listed (confirmed) donations of the chain, in block order, each row in the documented shape."""
    name = f"{site}/proof/donations.csv"
    body = fetch(name, timeout * CSV_DEADLINE_FACTOR, CSV_CAP, name=name)
    try:
        # Decoded as it is read: a str of the whole file and a StringIO of it took five times the file's size.
        reader = csv.DictReader(io.TextIOWrapper(io.BytesIO(body), encoding="utf-8", newline=""))
        rows = []
        for number, row in enumerate(reader, 1):
            if row.get("chain") == chain:  # kept: only the columns the check reads
                rows.append({k: _checked_row(row, Shape(f"{name} row {number}"))[k] for k in (*CSV_COLUMNS, "amount")})
    except (UnicodeDecodeError, csv.Error) as exc:
        raise Unreadable(f"{name} is not a CSV file ({str(exc)[:80]})") from None
    rows.sort(key=lambda r: int(r["block_number"]))
    return rows


def _checked_row(row: dict, shape: Shape, columns: tuple[str, ...] = (*CSV_COLUMNS, "amount")) -> dict:
    if None in row or any(row.get(column) is None for column in columns):
        raise shape.fail("its columns")
    shape.text(row["tx_hash"], HASH, "tx_hash")
    shape.text(row["block_hash"], HASH, "block_hash")
    shape.text(row["donor"], ADDRESS, "donor")
    shape.text(row["amount"], AMOUNT, "amount")
    if not isinstance(row["block_number"], int):
        shape.text(row["block_number"], re.compile(r"[0-9]{1,18}"), "block_number")
    if row["log_index"]:
        shape.text(row["log_index"], re.compile(r"[0-9]{1,12}"), "log_index")
    if row["trace_address"]:
        shape.text(row["trace_address"], TRACE_ADDRESS, "trace_address")
    return row


# --- asking the node ------------------------------------------------------------------------------------------


class Node:
    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout, self.calls = url, timeout, 0

    def batch(self, calls: list[tuple[str, list]], size: int = BATCH) -> list:
        """Each call's result, or an RpcError in its place; `size` calls a post."""
        results: list = []
        for start in range(0, len(calls), size):
            chunk = calls[start : start + size]
            body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(chunk)]
            answer = fetch(self.url, self.timeout, NODE_CAP, body=json.dumps(body).encode(), name="your node")
            replies = decode_json(answer, "your node", NODE_DEPTH)
            if not isinstance(replies, list):
                raise Unreadable(f"your node refused a batch: {str(replies)[:200]}")
            by_id = {r.get("id"): r for r in replies if isinstance(r, dict)}
            for i in range(len(chunk)):
                reply = by_id.get(i) or {"error": {"message": "no answer"}}
                if "error" in reply or reply.get("result") is None:
                    results.append(RpcError(str(reply.get("error") or "null")))
                else:
                    results.append(reply["result"])
            self.calls += len(chunk)
        return results

    def call(self, method: str, *params) -> Any:  # the node's JSON, checked by each caller
        (result,) = self.batch([(method, list(params))])
        if isinstance(result, RpcError):
            raise result
        return result


def _topic(address: str) -> str:
    return "0x" + "0" * 24 + address[2:]


def balance_calls(address: str, coins: list[tuple[str, str]], block: int | str) -> list[tuple[str, list]]:
    tag = hex(block) if isinstance(block, int) else block
    return [("eth_getBalance", [address, tag]), ("eth_getTransactionCount", [address, tag])] + [
        ("eth_call", [{"to": contract, "data": BALANCE_OF + _topic(address)[2:]}, tag]) for _, contract in coins
    ]


def balances(node: Node, address: str, coins: list[tuple[str, str]], blocks: list[int]) -> dict[int, dict]:
    """Per block: ETH (wei), nonce and each coin (base units). NoHistory when the node keeps no state there: it
    answers neither the address's ETH balance nor its nonce there, and does at its head. A coin's balanceOf refused
    where the node has the state is the site's coin failing, not your node (Mismatch): a contract the site lists
    as a coin could otherwise refuse the past on purpose and turn every check off."""
    calls = [c for b in blocks for c in balance_calls(address, coins, b)]
    answers, size, found = node.batch(calls), 2 + len(coins), {}
    for i, block in enumerate(blocks):
        part = answers[i * size : (i + 1) * size]
        if any(isinstance(a, RpcError) for a in part[:2]):
            at_head = node.batch(balance_calls(address, [], "latest"))
            if any(isinstance(a, RpcError) for a in at_head):
                raise Unreadable(
                    f"your node does not answer balances ({next(a for a in at_head if isinstance(a, RpcError))})"
                )
            raise NoHistory(block)
        for (asset, contract), answer in zip(coins, part[2:], strict=True):
            if isinstance(answer, RpcError):
                raise Mismatch(
                    f"the site's coin {asset} ({contract}) does not answer balanceOf on your node at block {block}, "
                    f"where your node has the address's ETH balance and nonce ({str(answer)[:80]})"
                )
        names = ["eth", "nonce"] + [asset for asset, _ in coins]
        found[block] = {
            name: int(value if value not in ("0x", "") else "0x0", 16) for name, value in zip(names, part, strict=True)
        }
    return found


def moved_blocks(
    node: Node, address: str, low: tuple[int, dict], high: tuple[int, dict]
) -> list[tuple[int, dict, dict]]:
    """The blocks after low[0] up to high[0] where the ETH balance or the nonce changed, each with the
    (ETH, nonce) before and after it: intervals with equal ends are left alone (for an address without code
    ETH leaves only with a transaction it signs, which moves the nonce, and the nonce never goes back)."""
    key = ("eth", "nonce")
    level, found = [(low, high)], []
    while level:
        split = []
        for (a, va), (b, vb) in level:
            if all(va[k] == vb[k] for k in key):
                continue
            if b - a == 1:
                found.append((b, va, vb))
            else:
                split.append(((a, va), (a + b) // 2, (b, vb)))
        if not split:
            break
        calls = [c for _, mid, _ in split for c in balance_calls(address, [], mid)]
        answers = node.batch(calls)
        level = []
        for i, (left, mid, right) in enumerate(split):
            pair = answers[2 * i : 2 * i + 2]
            if any(isinstance(a, RpcError) for a in pair):
                raise NoHistory(mid)
            middle = (mid, {"eth": int(pair[0], 16), "nonce": int(pair[1], 16)})
            level += [(left, middle), (middle, right)]
    return sorted(found, key=lambda item: item[0])


def transfer_logs(node: Node, contracts: list[str], topics: list, first: int, last: int) -> list[dict]:
    found, start, span = [], first, LOG_SPAN
    while start <= last:
        end = min(last, start + span - 1)
        try:
            found += node.call(
                "eth_getLogs", {"address": contracts, "topics": topics, "fromBlock": hex(start), "toBlock": hex(end)}
            )
        except RpcError as exc:
            if end == start:
                raise Unreadable(f"your node refuses eth_getLogs for block {start}: {exc}") from None
            span = max(1, (end - start + 1) // 2)
            continue
        start = end + 1
    return found


# --- what a transaction cost its sender -----------------------------------------------------------------------
#
# On every chain the sale takes donations on: exactly the crawler's rules (crawlers/decode/receipts.py,
# receipt_fee; a test holds the two to the same answers on the same receipts).

DEPOSIT_TX_TYPE = 0x7E  # an OP-stack deposit: made on L1, its gas bought there
BLOB_TX_TYPE = 0x03  # EIP-4844: the only transactions that pay for blob gas
OPERATOR_FEE_SCALAR_UNIT = 1_000_000  # OP-stack Isthmus: operatorFeeScalar has six decimals
OPERATOR_FEE_JOVIAN_FACTOR = 100  # OP-stack Jovian: the scalar is applied x 100 instead
QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")  # int(text, 16) alone would also take "-0x5" or "0x5_0"


class UnreadableAmount(Unreadable):
    """A field of your node's transaction or receipt that says what was charged or moved is not a quantity."""


def _quantity(source: dict, name: str) -> int | None:
    value = source.get(name)
    if value is None:  # absent (or null): the balances judge what it would have said
        return None
    if not isinstance(value, str) or not QUANTITY.fullmatch(value):
        raise UnreadableAmount(f"its {name} is {str(value)[:80]!r}, not a hex quantity")
    return int(value, 16)


def _required(source: dict, name: str) -> int:
    value = _quantity(source, name)
    if value is None:
        raise UnreadableAmount(f"it has no {name}")
    return value


def _fee(receipt: dict) -> int:
    """The gas at the price paid; blob gas for a blob transaction only (an OP-stack receipt's blobGasUsed is
    its DA footprint, which nobody pays); an OP-stack chain's l1Fee and operator fee; nothing for a deposit.
    Arbitrum's gasUsed already holds its L1 part (gasUsedForL1 only says how much of it)."""
    kind = _quantity(receipt, "type")
    if kind == DEPOSIT_TX_TYPE:
        return 0
    gas_used = _required(receipt, "gasUsed")
    price = _quantity(receipt, "effectiveGasPrice")
    fee = gas_used * (price if price is not None else _required(receipt, "gasPrice"))
    if kind == BLOB_TX_TYPE:
        fee += _required(receipt, "blobGasUsed") * _required(receipt, "blobGasPrice")
    fee += _quantity(receipt, "l1Fee") or 0
    return fee + _operator_fee(receipt, gas_used)


def _operator_fee(receipt: dict, gas_used: int) -> int:
    """operatorFee where the node reports it; else derived from the scalars as op-revm charges it (Isthmus:
    gasUsed x scalar / 1e6 + constant; from Jovian, shown by daFootprintGasScalar: gasUsed x scalar x 100 +
    constant)."""
    reported = _quantity(receipt, "operatorFee")
    if reported is not None:
        return reported
    scalar, constant = _quantity(receipt, "operatorFeeScalar"), _quantity(receipt, "operatorFeeConstant")
    if scalar is None and constant is None:
        return 0
    if scalar is None or constant is None:
        raise UnreadableAmount("it gives only one of operatorFeeScalar and operatorFeeConstant")
    if _quantity(receipt, "daFootprintGasScalar") is not None:
        return gas_used * scalar * OPERATOR_FEE_JOVIAN_FACTOR + constant
    return gas_used * scalar // OPERATOR_FEE_SCALAR_UNIT + constant


def _is_deposit(source: dict) -> bool:
    return _quantity(source, "type") == DEPOSIT_TX_TYPE


def _mint(tx: dict) -> int:
    """What an OP-stack deposit minted to its `from` (bridged from L1), whether it succeeded or not."""
    return (_quantity(tx, "mint") or 0) if _is_deposit(tx) else 0


# --- call traces: a transaction's frames, their paths, whose ETH each moves -----------------------------------

# Frames by which an account acts outside itself (a delegatecall or staticcall from it does not), and those by
# which ETH leaves it (a callcode runs the callee in the caller's own account: nothing leaves).
ACTING_KINDS = ("call", "callcode", "create", "create2", "selfdestruct")
LEAVING_KINDS = ("call", "create", "create2", "selfdestruct")


def _frames_to(call: dict, path: list[int]) -> list[dict] | None:
    """The call frames from the top down to the one at `path` (sub-call indexes, value-less precompile
    calls not counted), or None where there is no such frame."""
    frames = [call]
    for index in path:
        children = [c for c in call.get("calls") or [] if isinstance(c, dict) and not _quiet_precompile(c)]
        if index >= len(children):
            return None
        call = children[index]
        frames.append(call)
    return frames


def _frame_at(call: dict, path: list[int]) -> tuple[dict | None, bool]:
    """The call frame at `path` and whether it or a frame above it failed."""
    frames = _frames_to(call, path)
    if frames is None:
        return None, bool(call.get("error"))
    return frames[-1], any(bool(f.get("error")) for f in frames)


def _hex(value: object) -> int | None:
    """A hex quantity as the crawler reads one in a trace ("", "0x" and null are 0), or None."""
    if value in (None, "", "0x"):
        return 0
    try:
        return int(value, 16) if isinstance(value, str) else None
    except ValueError:
        return None


def _relayed_eth(calldata: object) -> tuple[str, str, int] | None:
    """(_from, _to, _amount) of a finalizeBridgeETH or ETH finalizeDeposit call, or None: another call,
    another token, or calldata that does not decode cleanly (an address word with high bytes set, the
    `bytes` argument outside the data, not hex)."""
    if not isinstance(calldata, str) or not calldata.startswith("0x") or len(calldata) % 2:
        return None
    if not re.fullmatch(r"[0-9a-fA-F]*", calldata[2:]):
        return None
    selector, args = calldata[2:10].lower(), calldata[10:]
    words = [args[i : i + 64] for i in range(0, len(args) - 63, 64)]
    if selector == FINALIZE_BRIDGE_ETH and len(words) >= 4:
        fields = words[:4]
    elif selector == FINALIZE_DEPOSIT and len(words) >= 6:
        if words[0] != "0" * 64 or words[1].lower() != "0" * 24 + LEGACY_ERC20_ETH[2:]:
            return None  # an ERC-20 deposit
        fields = words[2:6]
    else:
        return None
    sender, to, amount, offset = fields
    if sender[:24] != "0" * 24 or to[:24] != "0" * 24:
        return None
    start, size = int(offset, 16), len(args) // 2
    if start % 32 or start + 32 > size or start + 32 + int(args[2 * start : 2 * start + 64], 16) > size:
        return None
    return "0x" + sender[24:].lower(), "0x" + to[24:].lower(), int(amount, 16)


def _sender(trace: dict, path: list[int]) -> str | None:
    """Whose ETH the call frame at `path` moves, lower case (None: no such frame). Its `from`, except where
    the frame is L2StandardBridge paying out ETH bridged from L1 (OP stack): the bridge CALLs the recipient
    under the call L2CrossDomainMessenger relayed into it (through the proxy's DELEGATECALLs), whose
    finalizeBridgeETH / finalizeDeposit names the L1 account that bridged it (`_from`), this recipient and
    this amount; then `_from`. Anything that does not read so cleanly: the frame's `from`, as the crawler."""
    frames = _frames_to(trace, path)
    if frames is None:
        return None
    frame = frames[-1]
    sender = (frame.get("from") or "").lower()
    wei = _hex(frame.get("value"))
    if sender != L2_STANDARD_BRIDGE or str(frame.get("type") or "").lower() != "call" or not wei or len(frames) < 2:
        return sender
    above = frames[-2::-1]
    while (
        len(above) > 1
        and str(above[0].get("type") or "").lower() == "delegatecall"
        and (above[0].get("from") or "").lower() == L2_STANDARD_BRIDGE
    ):
        above = above[1:]
    relay = above[0]
    if (
        str(relay.get("type") or "").lower() != "call"
        or (relay.get("to") or "").lower() != L2_STANDARD_BRIDGE
        or (relay.get("from") or "").lower() != L2_CROSS_DOMAIN_MESSENGER
        or _hex(relay.get("value")) != wei
    ):
        return sender
    relayed = _relayed_eth(relay.get("input"))
    if relayed is None or relayed[1:] != ((frame.get("to") or "").lower(), wei):
        return sender
    return relayed[0]


def _quiet_precompile(call: dict) -> bool:
    try:
        return int(call.get("to") or "0x0", 16) in PRECOMPILES and int(call.get("value") or "0x0", 16) == 0
    except ValueError:
        return False


def _eth_frames(root: dict, us: str) -> list[tuple[dict, list[int], str, bool]]:
    """The succeeded frames below the top level of one transaction's call trace that moved ETH to or from
    `us`: (frame, path, whose ETH it is, whether it is our own money). Paths as the crawler numbers them
    (value-less precompile calls take no place); the payer of ETH to us is the frame's `from` except for ETH
    the OP-stack standard bridge relayed from L1 (its `_from`, `_sender`); what reaches us under a call we
    made ourselves, or that we bridged from L1, is our own. Walked without recursion (calls nest 1,024 deep)."""
    found = []
    stack: list[tuple[dict, list[int], bool, bool]] = [(root, [], False, False)]
    while stack:
        frame, path, under_ours, reverted = stack.pop()
        kind = str(frame.get("type") or "").lower()
        sender, to = (frame.get("from") or "").lower(), (frame.get("to") or "").lower()
        reverted = reverted or bool(frame.get("error"))
        under_ours = under_ours or (sender == us and kind in ACTING_KINDS)
        value = _hex(frame.get("value")) or 0
        if path and value and not reverted and sender != to:
            if to == us and kind == "call":
                payer = _sender(root, path) or sender
                found.append((frame, path, payer, under_ours or payer == us))
            elif sender == us and kind in LEAVING_KINDS:
                found.append((frame, path, sender, True))
        children = [c for c in frame.get("calls") or [] if isinstance(c, dict) and not _quiet_precompile(c)]
        stack += [(c, [*path, i], under_ours, reverted) for i, c in reversed(list(enumerate(children)))]
    return found


# --- a coin minted to the address: whose it is (the crawler's mint rule, crawlers/decode/mints.py) ------------
#
# A Transfer from the zero address has no sender, but Circle's CCTP names one: its MessageTransmitter's
# receiveMessage mints to the burn message's mintRecipient, then emits MessageReceived(..., messageBody),
# whose burn message names the depositor (messageSender). A mint followed in its transaction's logs by a known
# transmitter's MessageReceived (the first after it, with no other mint to the address between them: one
# message, one mint) sent by a source domain's TokenMessenger (anyone can send a message of their own, with any
# body) naming the address and exactly the amount minted (v2: amount - feeExecuted) is messageSender's
# donation, whoever relayed the message: anyone holding the public attestation may, the sale's own address too,
# so relaying it makes nobody's money the sale's. messageSender being the address makes it its own money; a mint
# no message names a depositor for is its own where it signed the transaction or called out in it; any other
# mint must be an unexplained inflow.
# Burn message: version uint32 at 0, burnToken at 4, mintRecipient at 36, amount at 68, messageSender at 100
# (v1: exactly 132 bytes; v2 adds maxFee at 132, feeExecuted at 164, expirationBlock at 196, hookData).

CCTP_TRANSMITTERS = frozenset(
    {
        "0x0a992d191deec32afe36203ad87d7d289a738f81",  # v1 Ethereum
        "0x8186359af5f57fbb40c6b14a588d2a59c0c29880",  # v1 Avalanche
        "0x4d41f22c5a0e5c74090899e5a8fb597a8842b3e8",  # v1 OP Mainnet
        "0xc30362313fbba5cf9163f0bb16a0e01f01a896ca",  # v1 Arbitrum
        "0xad09780d193884d503182ad4588450c416d6f9d4",  # v1 Base
        "0xf3be9355363857f3e001be68856a2f96b4c39ba9",  # v1 Polygon PoS
        "0x7865fafc2db2093669d92c0f33aeef291086befd",  # v1 Sepolia, Base Sepolia, OP Sepolia
        "0xacf1ceef35caac005e15888ddb8a3515c41b4872",  # v1 Arbitrum Sepolia
        "0x81d40f21f12a8f0e3252bccb954d722d4c464b64",  # v2, every mainnet
        "0xe737e5cebeeba77efe34d4aa090756590b1ce275",  # v2, every testnet
    }
)
# Who sends a burn (MessageReceived's `sender`): each source domain's TokenMessenger, v1 (False) and v2 (True).
CCTP_TOKEN_MESSENGERS = {
    False: frozenset(
        {
            "0x000000000000000000000000bd3fa81b58ba92a82136038b25adec7066af3155",  # v1 Ethereum
            "0x0000000000000000000000006b25532e1060ce10cc3b0a99e5683b91bfde6982",  # v1 Avalanche
            "0x0000000000000000000000002b4069517957735be00cee0fadae88a26365528f",  # v1 OP Mainnet
            "0x00000000000000000000000019330d10d9cc8751218eaf51e8885d058642e08a",  # v1 Arbitrum
            "0x0000000000000000000000001682ae6375c4e4a97e4b583bc394c861a46d8962",  # v1 Base
            "0x0000000000000000000000009daf8c91aefae50b9c0e69629d3f6ca40ca3b3fe",  # v1 Polygon PoS
            "0x0000000000000000000000004e744b28e787c3ad0e810ed65a24461d4ac5a762",  # v1 Unichain
            "0x0000000000000000000000009f3b8679c73c2fef8b59b4f3444d4e156fb70aa5",  # v1 Sepolia and its rollups
            "0xa65fc943419a5ad590042fd67c9791fd015acf53a54cc823edb8ff81b9ed722e",  # v1 Solana
        }
    ),
    True: frozenset(
        {
            "0x00000000000000000000000028b5a0e9c621a5badaa536219b3a228c8168cf5d",  # v2, every EVM mainnet
            "0x0000000000000000000000008fe6b999dc680ccfdd5bf7eb0974218be2542daa",  # v2, every EVM testnet
            "0xa65fc81d0fefa8860cb3b83f089b0224be8a6687b7ae49f594c0b9b4d7e93893",  # v2 Solana
        }
    ),
}
MESSAGE_RECEIVED_V1 = "0x58200b4c34ae05ee816d710053fff3fb75af4395915d3d2a771b24aa10e3cc5d"
MESSAGE_RECEIVED_V2 = "0xff48c13eda96b1cceacc6b9edeedc9e9db9d6226afbc30146b720c19d3addb1c"


def _mints_to(log: dict, recipient: str) -> bool:
    """`log` is a Transfer from the zero address to `recipient`, of any contract."""
    topics = [str(t).lower() for t in log.get("topics") or []]
    return (
        len(topics) == 3
        and topics[0] == TRANSFER_TOPIC
        and topics[1] == "0x" + "0" * 64
        and topics[2][-40:] == recipient[2:]
        and not log.get("removed")
    )


def _burn_message(body: bytes, v2: bool) -> tuple[str, int, str] | None:
    """(mintRecipient, what it receives, messageSender) of a burn message in its version's layout, or None."""
    if (len(body) != 132 if not v2 else len(body) < 228) or int.from_bytes(body[:4], "big") != int(v2):
        return None
    recipient, depositor = body[36:68], body[100:132]
    amount = int.from_bytes(body[68:100], "big")
    fee = int.from_bytes(body[164:196], "big") if v2 else 0
    if any(recipient[:12]) or any(depositor[:12]) or fee > amount:
        return None
    return "0x" + recipient[12:].hex(), amount - fee, "0x" + depositor[12:].hex()


def _log_index(log: dict) -> int:
    value = log.get("logIndex")
    return int(value, 16) if isinstance(value, str) and QUANTITY.fullmatch(value) else -1


def mint_depositor(mint: dict, logs: list[Any], recipient: str) -> str | None:
    """Who deposited what the Transfer `mint` (from the zero address to `recipient`) brought, by the first
    MessageReceived of a known CCTP transmitter after it among its transaction's `logs`; None: no such message,
    another mint to `recipient` before it (the message is that one's), or one that is not a TokenMessenger's
    burn naming `recipient` and exactly the amount minted."""
    tx, after = str(mint.get("transactionHash") or "").lower(), _log_index(mint)
    following = sorted(
        (
            log
            for log in logs
            if isinstance(log, dict)
            and str(log.get("transactionHash") or "").lower() == tx
            and _log_index(log) > after >= 0
            and not log.get("removed")
        ),
        key=_log_index,
    )
    first = None
    for log in following:
        if _mints_to(log, recipient):
            return None
        topics = [str(t).lower() for t in log.get("topics") or []][:1]
        if str(log.get("address") or "").lower() in CCTP_TRANSMITTERS and topics in (
            [MESSAGE_RECEIVED_V1],
            [MESSAGE_RECEIVED_V2],
        ):
            first = log
            break
    if first is None:
        return None
    try:
        data = bytes.fromhex(str(first.get("data") or "0x")[2:])
    except ValueError:
        return None
    v2 = str(first["topics"][0]).lower() == MESSAGE_RECEIVED_V2
    if "0x" + data[32:64].hex() not in CCTP_TOKEN_MESSENGERS[v2]:
        return None
    offset = int.from_bytes(data[64:96], "big")
    size = int.from_bytes(data[offset : offset + 32], "big") if offset + 32 <= len(data) else -1
    if size < 0 or offset + 32 + size > len(data):
        return None
    burn = _burn_message(data[offset + 32 : offset + 32 + size], v2)
    if burn is None or burn[0] != recipient or burn[1] != int(str(mint.get("data") or "0x0"), 16):
        return None
    return burn[2]


# --- what the check relies on: from your node, or from you ----------------------------------------------------

DECIMALS = "0x313ce567"  # decimals()


class Sale:
    """The donation address and the coins a proof is checked for: the site's, each equal to what you pinned
    (--address, --coin), every coin's decimals read from your node's contract, never taken from the site."""

    def __init__(self, address: str, coins: list[tuple[str, str, int]]) -> None:
        self.address, self.coins = address, coins  # coins: (asset, contract, decimals), lower case

    @classmethod
    def of(cls, node: Node, proof: dict, rows: list[dict], pins: dict[str, str]) -> Sale:
        address = proof["donation_address"].lower()
        pinned = pins.get("address")
        if pinned is not None and pinned != address:
            raise Mismatch(f"the site's donation address is {address}; you gave {pinned}")
        listed = {a["asset"]: a for a in proof["assets"]}
        if "eth" not in listed or listed["eth"]["decimals"] != 18:
            raise Mismatch("the site's proof does not account for ETH (with its 18 decimals)")
        for asset, contract in pins.items():
            if asset == "address":
                continue
            if asset not in listed:
                raise Mismatch(f"you named {asset} {contract}; the site's proof does not account for it")
            theirs = (listed[asset]["contract"] or "").lower()
            if theirs != contract:
                raise Mismatch(f"the site's {asset} contract is {theirs}; you gave {contract}")
        unlisted = sorted({r["asset"] for r in rows} - set(listed))
        if unlisted:
            raise Mismatch(
                f"the donation list holds {unlisted[0]} donations; the site's proof does not account for {unlisted[0]}"
            )
        coins = [(a["asset"], a["contract"].lower()) for a in proof["assets"] if a["asset"] != "eth"]
        answers = node.batch([("eth_call", [{"to": contract, "data": DECIMALS}, "latest"]) for _, contract in coins])
        found = []
        for (asset, contract), answer in zip(coins, answers, strict=True):
            decimals = _word(answer)
            if decimals is None or decimals > 77:
                raise Mismatch(f"the site's {asset} contract {contract} answers no decimals() on your node")
            if decimals != listed[asset]["decimals"]:
                raise Mismatch(
                    f"the site says {asset} ({contract}) has {listed[asset]['decimals']} decimals; "
                    f"its contract says {decimals} on your node"
                )
            found.append((asset, contract, decimals))
        return cls(address, found)

    def describe(self) -> str:
        if not self.coins:
            return "coins checked: none (ETH only)"
        return "coins checked: " + ", ".join(
            f"{asset} {contract} ({decimals} decimals, from your node)" for asset, contract, decimals in self.coins
        )


def _word(answer: object) -> int | None:
    """A uint256 an eth_call returned, or None (an error, no code there: "0x", not one word)."""
    if not isinstance(answer, str) or not re.fullmatch(r"0x[0-9a-fA-F]{64}", answer):
        return None
    return int(answer, 16)


# --- one range: every payment found, and what the rules say each is -------------------------------------------


def raw_amount(text: str, decimals: int) -> int:
    whole, _, fraction = text.partition(".")
    fraction = (fraction + "0" * decimals)[:decimals]
    if text.partition(".")[2].rstrip("0")[decimals:]:
        raise Mismatch(f"the donation amount {text} has more decimals than the asset")
    return int(whole) * 10**decimals + int(fraction or "0")


class Payment:
    """Value that reached the donation address, as your node shows it: an ETH transaction to it (`where` ""),
    ETH in an internal call (`where` its path, "0.1"), a coin's Transfer log (`where` "log N"), or what a
    deposit the address made on L1 minted to it. `own`: the address's own money by the crawler's rule (None:
    not known yet, asked of the node only if the list does not hold it)."""

    def __init__(
        self, asset: str, block: int, block_hash: str, tx: str, where: str, sender: str, raw: int, own: bool | None
    ) -> None:
        self.asset, self.block, self.block_hash, self.tx = asset, block, block_hash.lower(), tx.lower()
        self.where, self.sender, self.raw, self.own = where, sender.lower(), raw, own

    @property
    def identity(self) -> tuple[str, str, str]:
        """As the donation list names a donation: (tx_hash, log_index, trace_address)."""
        if self.where.startswith("log "):
            return self.tx, self.where[4:], ""
        return self.tx, "", self.where

    @property
    def internal(self) -> bool:
        return bool(self.where) and not self.where.startswith(("log ", "mint"))

    def describe(self) -> str:
        unit = "wei" if self.asset == "eth" else f"raw units of {self.asset}"
        how = {"": "", "mint": " (minted by its deposit from L1)"}.get(self.where)
        if how is None:
            how = f" ({self.where})" if self.where.startswith("log ") else f" (internal call {self.where})"
        return f"transaction {self.tx} paid the address {self.raw} {unit} in block {self.block} from {self.sender}{how}"


def column_unit(asset: str, decimals: int) -> int:
    """The smallest amount the donation column holds, in raw units: ETH is kept at 8 decimals, a coin at
    10 (so a 6-decimal coin has no dust). Below it is dust; the remainder of a donation below it, rounding."""
    return 10 ** max(0, decimals - (ETH_DECIMALS if asset == "eth" else COLUMN_DECIMALS))


def _identity(row: dict) -> tuple[str, str, str]:
    return row["tx_hash"].lower(), row.get("log_index") or "", row.get("trace_address") or ""


LISTED = "a listed donation"
OWN = "the address's own money by the crawler's rules, not credited"
HELD = "not credited, an open unexplained inflow the site lists"


class Ledger:
    """What arrived in one range, sorted by what the rules say each payment is: a listed donation, the
    address's own money, dust, a donation not confirmed yet (listed under `pending`), or an unexplained
    inflow the site lists in its block. Then the site's `uncredited` must be exactly the dust, the rounding,
    the own money and the pending of it, each found here."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.listed: dict[tuple[str, str, str], dict] = {}
        for row in check.rows:
            if _identity(row) in self.listed:  # one payment cannot be two donations (nor earn its tokens twice)
                raise Mismatch(f"the donation list holds the donation {' '.join(filter(None, _identity(row)))} twice")
            self.listed[_identity(row)] = row
        self.pending = {_identity(p): p for p in check.found["pending"]}
        self.inflows: dict[tuple[int, str], int] = {}  # (block, asset) -> every inflow listed there
        self.open: dict[tuple[int, str], int] = {}  # ... those still open (not closed as "not a donation")
        for inflow in check.found["inflows"]:
            key = (inflow["block_number"], inflow["asset"])
            if key in self.inflows:  # the sale keeps one a block and asset: its status is all that arrived there
                many = sum((i["block_number"], i["asset"]) == key for i in check.found["inflows"])
                raise Mismatch(f"the site lists {many} unexplained inflows of {key[1]} in block {key[0]}")
            self.inflows[key] = self.inflows.get(key, 0) + int(inflow["amount_raw"])
            if inflow.get("status") == "open":
                self.open[key] = self.open.get(key, 0) + int(inflow["amount_raw"])
        self.need: dict[tuple[int, str], int] = {}  # arrived there that only an inflow can account for
        self.donated: dict[tuple[int, str], int] = {}  # ... of it, donations by the rules: open inflows only
        self.maybe: dict[tuple[int, str], int] = {}  # internal own money and dust: a crawler without traces
        self.unlisted: dict[tuple[int, str], Payment] = {}  # ... counts it into the block's inflow
        self.held: list[Payment] = []  # donors' payments only an open inflow accounts for: not credited
        self.booked: dict[str, list[tuple[Payment, str]]] = {}  # transaction -> its payments, what each is
        self.parts: dict[str, dict[str, int]] = {}  # asset -> own, dust, rounding, pending
        self.closed: set[str] = set()  # the assets whose every payment was found and sorted
        self.unlogged: dict[str, int] = {}  # a coin's balance change no Transfer log explains, over the range

    def part(self, asset: str) -> dict[str, int]:
        return self.parts.setdefault(asset, {"own": 0, "dust": 0, "rounding": 0, "pending": 0, "pending rows": 0})

    def sort(self, payment: Payment) -> None:
        unit = column_unit(payment.asset, self.check.decimals[payment.asset])
        parts, key = self.part(payment.asset), (payment.block, payment.asset)
        row = self.listed.pop(payment.identity, None)
        if row is not None:
            if payment.own:
                raise Mismatch(f"the listed donation {row['tx_hash']} is the address's own money: {payment.describe()}")
            self.same(row, payment, unit, "listed donation")
            parts["rounding"] += payment.raw % unit
            self.book(payment, LISTED)
            return
        if payment.raw < unit:
            parts["dust"] += payment.raw
            self.book(payment, "dust (below what the donation list holds), not credited")
        elif payment.own if payment.own is not None else self.check.own_coin(payment):
            parts["own"] += payment.raw
            self.book(payment, OWN)
        else:
            self.pend(payment, unit, parts, key)
            return
        if payment.internal:
            self.maybe[key] = self.maybe.get(key, 0) + payment.raw

    def pend(self, payment: Payment, unit: int, parts: dict[str, int], key: tuple[int, str]) -> None:
        """A donation by the rules that the list does not hold: not confirmed yet, or an inflow."""
        item = self.pending.pop(payment.identity, None)
        if item is not None:
            self.same(item, payment, unit, "donation the site lists as not confirmed yet")
            parts["pending"] += payment.raw - payment.raw % unit
            parts["pending rows"] += 1
            parts["rounding"] += payment.raw % unit
            self.book(payment, "a donation the site lists as not confirmed yet")
            return
        self.need[key] = self.need.get(key, 0) + payment.raw
        self.donated[key] = self.donated.get(key, 0) + payment.raw
        self.unlisted.setdefault(key, payment)
        self.held.append(payment)
        self.book(payment, HELD)

    def book(self, payment: Payment, how: str) -> None:
        self.booked.setdefault(payment.tx, []).append((payment, how))

    def same(self, row: dict, payment: Payment, unit: int, what: str) -> None:
        if (
            row["asset"] != payment.asset
            or raw_amount(row["amount"], self.check.decimals[payment.asset]) != payment.raw - payment.raw % unit
            or row["donor"].lower() != payment.sender
            or int(row["block_number"]) != payment.block
            or row["block_hash"].lower() != payment.block_hash
        ):
            raise Mismatch(f"the {what} {row['tx_hash']} is not what your node shows: {payment.describe()}")

    def unattributed(self, block: int, asset: str, raw: int) -> None:
        """Value that arrived in `block` outside any transaction, call or log (a self-destruct's beneficiary,
        a withdrawal): only an inflow the site lists there accounts for it."""
        if raw:
            self.need[(block, asset)] = self.need.get((block, asset), 0) + raw

    def close(self, asset: str, mode: str, left_over: int = 0) -> None:
        """Every inflow-only arrival of `asset` covered by the inflows the site lists in its block, and no
        listed donation left that your node does not show. `mode` "block" (ETH, read block by block): no
        inflow listed where nothing arrived unexplained either; "range" (a coin, whose balance is read at the
        range's edges only): what no log explains over the range (`left_over`) and the unlisted payments are
        the range's inflows together; "lower" (no balances to judge by): only the first rule."""
        unit = "wei" if asset == "eth" else f"raw units of {asset}"
        for key in sorted({k for k in (*self.need, *self.inflows) if k[1] == asset}):
            covered, needed, donated = self.inflows.get(key, 0), self.need.get(key, 0), self.donated.get(key, 0)
            if donated and self.open.get(key, 0) < donated:  # a donor's payment "not a donation"? No.
                raise Mismatch(
                    f"{self.unlisted[key].describe()}, and it is neither a listed donation nor an open unexplained "
                    "inflow the site lists"
                )
            if covered < needed and (needed or mode != "range"):  # (a coin that fell without a log: < 0)
                raise Mismatch(
                    f"{needed} {unit} arrived in block {key[0]} that no transfer explains; the site lists "
                    f"{covered} {unit} of unexplained inflows there"
                )
            if mode == "block" and covered > needed + self.maybe.get(key, 0):
                raise Mismatch(
                    f"the site lists {covered} {unit} of unexplained inflows in block {key[0]}; {needed} {unit} "
                    "arrived there that no transfer explains"
                )
        if mode == "range":
            self.unlogged[asset] = left_over
            listed = sum(v for k, v in self.inflows.items() if k[1] == asset)
            needed = sum(v for k, v in self.need.items() if k[1] == asset) + left_over
            if listed != needed:
                raise Mismatch(
                    f"the {asset} Transfer logs and the unexplained inflows do not explain the balance change: "
                    f"{needed} {unit} arrived that no donation or own money accounts for, the site lists {listed}"
                )
        for row in self.listed.values():
            if row["asset"] == asset:
                where = f" (log {row['log_index']})" if row.get("log_index") else ""
                where = f" ({row['trace_address']})" if row.get("trace_address") else where
                raise Mismatch(
                    f"the listed donation {row['tx_hash']}{where} is not a payment to the address in block "
                    f"{row['block_number']} on your node"
                )
        self.closed.add(asset)

    def uncredited(self, asset: str) -> None:
        """The site's `uncredited` is what the rules say it is, found here part by part."""
        parts = self.part(asset)
        # What the site lists as unexplained beyond what only an inflow accounts for (and, for a coin, beyond what
        # no log explains: a rebase, a burn without a log): the own money and dust a crawler without traces
        # counted into a block's inflow, so not into its uncredited.
        slack = sum(v for k, v in self.inflows.items() if k[1] == asset)
        slack -= sum(v for k, v in self.need.items() if k[1] == asset) + self.unlogged.get(asset, 0)
        expected = parts["own"] + parts["dust"] + parts["rounding"] + parts["pending"] - slack
        said = self.check.site[asset]["uncredited"]
        if said is not None and int(said) != expected:
            raise Mismatch(
                f"the site's uncredited {asset} is {said}; your node shows {expected}: dust {parts['dust']}, "
                f"rounding {parts['rounding']}, the address's own money {parts['own']}, not confirmed yet "
                f"{parts['pending']}" + (f", less {slack} the site lists as unexplained" if slack else "")
            )


# --- one range: the check against your node -------------------------------------------------------------------


class Check:
    """One range's check against the node."""

    def __init__(self, node: Node, sale: Sale, found: dict, rows: list[dict]) -> None:
        self.node, self.found, self.rows = node, found, rows
        self.us = sale.address
        self.decimals = {"eth": 18, **{asset: decimals for asset, _, decimals in sale.coins}}
        self.coins = [(asset, contract) for asset, contract, _ in sale.coins]
        self.first, self.last = found["first_block"], found["last_block"]
        # The block whose state opens the range: the one before it; for a range from the genesis block, the genesis
        # block itself (no node has a block -1, and the genesis block holds no transaction: only its allocation).
        self.before = max(self.first - 1, 0)
        self.site = {a["asset"]: a for a in found["assets"]}
        absent = [asset for asset in self.decimals if asset not in self.site]
        if absent:
            raise Mismatch(f"the site gives no figures for {absent[0]}")
        self.missing: list[str] = []  # what could not be checked
        self.ledger = Ledger(self)
        self.authorizing: dict[int, bool] = {}  # block -> the address signed an EIP-7702 authorization there
        self.coded: set[int] | None = None  # the blocks in which it had code (None: not known)

    def run(self) -> None:
        self.listed_sums()
        block = self.node.call("eth_getBlockByNumber", hex(self.last), False)
        if not isinstance(block, dict) or block.get("hash", "").lower() != self.found["last_block_hash"].lower():
            raise Mismatch(
                f"block {self.last} is {block.get('hash') if isinstance(block, dict) else None} on your node, "
                f"the site says {self.found['last_block_hash']}"
            )
        to_us, from_us = self.coin_logs()
        # "Unproven" is your node's question, not the site's: where your node has the history, the range is
        # checked in full whatever the site says (against the figures it does give).
        try:
            edges = balances(self.node, self.us, self.coins, [self.before, self.last])
        except NoHistory as exc:
            self.missing.append(f"balances not checked: {exc}")
            self.coin_rows_alone(to_us)
            self.eth_rows_without_blocks()
            return
        self.compare_balances(edges)
        self.eth_payments(edges)
        self.coin_payments(to_us, from_us, edges)
        for asset in sorted(self.ledger.closed):
            self.ledger.uncredited(asset)

    def pending_note(self) -> str:
        notes = []
        if self.found["status"] != "proven":
            notes.append(
                f"the site calls it {printable(self.found['status'], 20)} ({printable(self.found['reason'])}); "
                "your node answered everything"
            )
        for asset, parts in self.ledger.parts.items():
            if parts["pending rows"]:
                unit = "wei" if asset == "eth" else f"raw units of {asset}"
                notes.append(f"{parts['pending rows']} donation(s) not confirmed yet: {parts['pending']} {unit}")
        for payment in self.ledger.held:  # a sale could hold every donation so for ever: each is named
            notes.append(f"{HELD}: {payment.describe()}")
        return "; " + "; ".join(notes) if notes else ""

    def listed_sums(self) -> None:
        """The site's arithmetic, its credited equal to the listed donations, its unexplained to the inflows it
        lists."""
        for asset in self.decimals:
            figures = self.site[asset]
            mine = [r for r in self.rows if r["asset"] == asset]
            listed = sum(raw_amount(r["amount"], self.decimals[asset]) for r in mine)
            if listed != int(figures["credited"]) or len(mine) != figures["donations"]:
                raise Mismatch(
                    f"the site says {figures['credited']} raw units of {asset} were credited in "
                    f"{figures['donations']} donations; its donation list has {listed} in {len(mine)}"
                )
            inflows = sum(int(i["amount_raw"]) for i in self.found["inflows"] if i["asset"] == asset)
            if inflows != int(figures["unexplained"]):
                raise Mismatch(
                    f"the site says {figures['unexplained']} raw units of {asset} arrived unexplained; the inflows "
                    f"it lists add up to {inflows}"
                )
            if None in (figures["opening"], figures["closing"], figures["left"], figures["uncredited"]):
                continue  # a figure the site does not know: no arithmetic to check (the payments still are)
            change = int(figures["closing"]) - int(figures["opening"])
            accounted = listed + int(figures["unexplained"]) + int(figures["uncredited"]) - int(figures["left"])
            if int(figures["uncredited"]) < 0:
                raise Mismatch(f"the site credits {asset} more than arrived (uncredited {figures['uncredited']})")
            if change != accounted:
                raise Mismatch(
                    f"the site's {asset} figures do not add up: closing - opening = {change}, "
                    f"credited + unexplained + uncredited - left = {accounted}"
                )

    def compare_balances(self, edges: dict[int, dict]) -> None:
        for block, side in ((self.before, "opening"), (self.last, "closing")):
            for asset, value in edges[block].items():
                said = self.found["nonce"][side] if asset == "nonce" else self.site[asset][side]
                if said is None and self.found["status"] != "proven":
                    continue  # an unproven range's figure the site does not know: it claims nothing there
                if said is None or int(said) != value:
                    raise Mismatch(
                        f"the {asset} balance at block {block} is {value} on your node, the site says {said}"
                    )

    # --- coins ---------------------------------------------------------------------------------------------

    def coin_logs(self) -> tuple[list[dict], list[dict]]:
        if not self.coins:
            return [], []
        contracts = [c for _, c in self.coins]
        return (
            transfer_logs(self.node, contracts, [TRANSFER_TOPIC, None, _topic(self.us)], self.first, self.last),
            transfer_logs(self.node, contracts, [TRANSFER_TOPIC, _topic(self.us)], self.first, self.last),
        )

    def coin_payment(self, log: dict) -> Payment:
        by_contract = {c: a for a, c in self.coins}
        contract, sender = log["address"].lower(), "0x" + log["topics"][1][-40:].lower()
        own = True if sender == self.us else None  # else asked only if the list does not hold it
        if sender == ZERO_ADDRESS:  # a mint: its depositor, if a CCTP message names one, is the payer
            receipt = self.node.call("eth_getTransactionReceipt", log["transactionHash"])
            logs = receipt.get("logs") if isinstance(receipt, dict) else None
            depositor = mint_depositor(log, logs if isinstance(logs, list) else [], self.us)
            if depositor is not None:  # the depositor's, whoever relayed the message (anyone may, the sale too)
                sender, own = depositor, depositor == self.us
        return Payment(
            by_contract[contract],
            int(log["blockNumber"], 16),
            log["blockHash"],
            log["transactionHash"],
            f"log {int(log['logIndex'], 16)}",
            sender,
            int(log.get("data") or "0x0", 16),
            own,
        )

    def coin_payments(self, to_us: list[dict], from_us: list[dict], edges: dict[int, dict]) -> None:
        """Every coin Transfer to the address sorted (ledger), what left by Transfer logs equal to the site's
        `left`, and what no log explains of each coin's balance change covered by the inflows the site lists."""
        arrived = dict.fromkeys(self.decimals, 0)
        left = dict.fromkeys(self.decimals, 0)
        for log in to_us:
            payment = self.coin_payment(log)
            arrived[payment.asset] += payment.raw
            self.ledger.sort(payment)
        by_contract = {c: a for a, c in self.coins}
        for log in from_us:
            left[by_contract[log["address"].lower()]] += int(log.get("data") or "0x0", 16)
        for asset, _ in self.coins:
            site = self.site[asset]
            if site["left"] is not None and int(site["left"]) != left[asset]:
                raise Mismatch(
                    f"{left[asset]} raw units of {asset} left in Transfer logs, the site says {site['left']}"
                )
            change = edges[self.last][asset] - edges[self.before][asset]
            self.ledger.close(asset, "range", left_over=change - arrived[asset] + left[asset])

    def coin_rows_alone(self, to_us: list[dict]) -> None:
        """Without the balances: each coin Transfer to the address is still sorted against the list."""
        for log in to_us:
            self.ledger.sort(self.coin_payment(log))
        for asset, _ in self.coins:
            self.ledger.close(asset, "lower")
        self.ledger.closed.clear()  # the balances were not read: nothing to judge "uncredited" by

    def own_coin(self, payment: Payment) -> bool:
        contract = next(c for a, c in self.coins if a == payment.asset)
        return self.own_transaction(payment.tx, contract)

    def own_transaction(self, tx_hash: str, contract: str) -> bool:
        """Whether the address's own doing brought the coin of `contract` in (never a donation): it signed
        the transaction, or (an address with code) every call into the coin's contract there sits under a
        call the address itself made. Value paid beside such a call is a donor's: anyone can make a Safe
        call out. A node without call traces: noted, not refuted."""
        try:
            tx = self.node.call("eth_getTransactionByHash", tx_hash)
        except RpcError as exc:
            raise Unreadable(f"your node did not give transaction {tx_hash}: {exc}") from exc
        if isinstance(tx, dict) and (tx.get("from") or "").lower() == self.us:
            return True
        block = int(tx["blockNumber"], 16) if isinstance(tx, dict) and tx.get("blockNumber") else None
        if self.coded is not None and block is not None and block not in self.coded:
            return False  # a plain account acts outside itself only by the transactions it signs
        try:
            trace = self.node.call("debug_traceTransaction", tx_hash, {"tracer": "callTracer"})
        except RpcError:
            self.missing.append(f"transaction {tx_hash}: your node gives no call traces to tell whether it is ours")
            return True
        into = []  # for each successful call into the coin's contract: whether it is under our own call
        frames = [(trace, False, False)] if isinstance(trace, dict) else []
        while frames:
            frame, under_ours, failed = frames.pop()
            kind = str(frame.get("type") or "").lower()
            under_ours = under_ours or ((frame.get("from") or "").lower() == self.us and kind in ACTING_KINDS)
            failed = failed or bool(frame.get("error"))
            if kind == "call" and (frame.get("to") or "").lower() == contract and not failed:
                into.append(under_ours)
            frames += [(c, under_ours, failed) for c in frame.get("calls") or [] if isinstance(c, dict)]
        return bool(into) and all(into)

    def authorized_in(self, tx: object) -> bool:
        """Whether the address may have had code during this transaction's block though it has none after it:
        the block moved its nonce by more than its own transactions (an EIP-7702 authorization it signed)."""
        return (
            isinstance(tx, dict)
            and tx.get("blockNumber") is not None
            and self.authorizing.get(int(tx["blockNumber"], 16), False)
        )

    # --- ETH -----------------------------------------------------------------------------------------------

    def eth_payments(self, edges: dict[int, dict]) -> None:
        """Every block where the ETH balance or the nonce moved (halving), and every block in which the address
        had code, read in full: its own transactions (what left, and what its deposits minted to it), the
        transactions paying it, and, where the balance moved by more than those explain or the address had
        code, the block's call traces: every internal call paying it, and every one by which it paid out."""
        low, high = (self.before, edges[self.before]), (self.last, edges[self.last])
        try:
            moved = moved_blocks(self.node, self.us, low, high)
        except NoHistory as exc:
            self.missing.append(f"ETH transfers not re-read: {exc}")
            self.eth_rows_without_blocks()
            return
        changes = {n: after["eth"] - before["eth"] for n, before, after in moved}
        nonces = {n: after["nonce"] - before["nonce"] for n, before, after in moved}
        coded = self.blocks_with_code(moved)
        extra = sorted(self.blocks_called(coded) - set(changes))
        if extra:
            around = self.node.batch([("eth_getBalance", [self.us, hex(n)]) for b in extra for n in (b - 1, b)])
            for i, number in enumerate(extra):
                before, after = around[2 * i : 2 * i + 2]
                if isinstance(before, RpcError) or isinstance(after, RpcError):
                    raise Unreadable(f"your node did not give the balance around block {number}: {before} {after}")
                changes[number], nonces[number] = int(after, 16) - int(before, 16), 0
        numbers = sorted(changes)
        answers = self.node.batch([("eth_getBlockByNumber", [hex(n), True]) for n in numbers])
        blocks = dict(zip(numbers, answers, strict=True))
        residual, left, sent = dict(changes), 0, dict.fromkeys(numbers, 0)
        ours = []  # (block, tx) of transactions from or to the address
        for number in numbers:
            block = blocks[number]
            if isinstance(block, RpcError) or not isinstance(block, dict):
                raise Unreadable(f"your node did not give block {number}: {block}")
            ours += [
                (number, tx)
                for tx in block["transactions"]
                if self.us in ((tx.get("from") or "").lower(), (tx.get("to") or "").lower())
            ]
        receipts = self.node.batch([("eth_getTransactionReceipt", [tx["hash"]]) for _, tx in ours])
        for (number, tx), receipt in zip(ours, receipts, strict=True):
            if isinstance(receipt, RpcError):
                raise Unreadable(f"your node did not give the receipt of {tx['hash']}: {receipt}")
            ok, value = receipt.get("status") == "0x1", int(tx.get("value") or "0x0", 16)
            block_hash, sender = blocks[number]["hash"], (tx.get("from") or "").lower()
            if sender == self.us:
                try:
                    if _is_deposit(tx) != _is_deposit(receipt):
                        raise UnreadableAmount("its block and its receipt disagree on whether it is a deposit")
                    spent, minted = (value if ok else 0) + _fee(receipt), _mint(tx)
                except UnreadableAmount as exc:
                    raise Unreadable(
                        f"your node does not say readably what transaction {tx['hash']} (sent by the address in "
                        f"block {number}) cost: {exc}"
                    ) from None
                left += spent
                sent[number] += 1
                residual[number] += spent
                if minted:  # a deposit the address made on L1 minted ETH to it: its own money
                    residual[number] -= minted
                    self.ledger.sort(Payment("eth", number, block_hash, tx["hash"], "mint", sender, minted, True))
            if (tx.get("to") or "").lower() == self.us and ok and value:
                residual[number] -= value
                self.ledger.sort(Payment("eth", number, block_hash, tx["hash"], "", sender, value, sender == self.us))
        # A nonce that moved by more than the address's own transactions: an EIP-7702 authorization it signed.
        self.authorizing = {n: nonces[n] > sent[n] for n in numbers}
        coded |= {n for n, signed in self.authorizing.items() if signed}
        self.coded = coded
        if any(v < 0 for n, v in residual.items() if n not in coded) and not self.missing:
            number = next(n for n, v in residual.items() if v < 0 and n not in coded)
            raise Mismatch(f"ETH left the address in block {number} that no transaction of it shows")
        traced = sorted(n for n in numbers if residual[n] or n in coded)
        out = self.internal_payments(traced, blocks, residual, coded)
        if out is None and coded:
            return  # what left by internal calls is unknown too
        if out is not None:
            self.ledger.close("eth", "block")  # first: a payment nobody accounts for is the graver finding
        left += out or 0
        if self.site["eth"]["left"] is not None and left != int(self.site["eth"]["left"]):
            raise Mismatch(f"{left} wei left the address in its transactions; the site says {self.site['eth']['left']}")

    def blocks_with_code(self, moved: list[tuple[int, dict, dict]]) -> set[int]:
        """The blocks of the range in which the address had code (a contract, an EIP-7702 delegation) at any
        point. Its code is read at the opening edge and after every block where its nonce moved: a delegation
        comes or goes only with an authorization the address signs, which moves its nonce (a block where it
        signed one is added by eth_payments, which counts its own transactions there). Code at the closing
        edge that is not the code after the last such block: the whole range."""
        moves = sorted(n for n, before, after in moved if after["nonce"] != before["nonce"])
        points = sorted({self.before, *moves, self.last})
        answers = self.node.batch([("eth_getCode", [self.us, hex(n)]) for n in points])
        if any(isinstance(c, RpcError) or not isinstance(c, str) for c in answers):
            raise Unreadable(f"your node did not give the address's code: {answers}")
        code = dict(zip(points, (c not in ("0x", "0x0", "") for c in answers), strict=True))
        if code[self.last] != code[max(p for p in points if p in moves or p == self.before)]:
            return set(range(self.before + 1, self.last + 1))  # its code changed with no nonce move: trust no edge
        coded: set[int] = set()
        for before, end in itertools.pairwise(points):
            if code[before]:
                coded |= set(range(before + 1, end + 1))  # had it from the block after `before` on
            if code[end] and end in moves:
                coded.add(end)  # got it within `end`
        self.coded = coded
        return coded

    def blocks_called(self, coded: set[int]) -> set[int]:
        """Of the blocks in which the address had code, those in which it took part in a call, found by
        trace_filter (to and from it, over each stretch) where your node serves it; else all of them."""
        spans: list[list[int]] = []
        for number in sorted(coded):
            if spans and spans[-1][1] == number - 1:
                spans[-1][1] = number
            else:
                spans.append([number, number])
        calls = [
            ("trace_filter", [{"fromBlock": hex(a), "toBlock": hex(b), direction: [self.us]}])
            for a, b in spans
            for direction in ("toAddress", "fromAddress")
        ]
        found: set[int] = set()
        for answer in self.node.batch(calls, size=2):
            if not isinstance(answer, list):
                return coded  # not served (or no answer): every block
            for item in answer:
                said: Any = item.get("blockNumber") if isinstance(item, dict) else None
                number = int(said, 16) if isinstance(said, str) and QUANTITY.fullmatch(said) else said
                if not isinstance(number, int) or number not in coded:
                    return coded  # an answer we cannot place: every block
                found.add(number)
        return found

    def internal_payments(
        self, numbers: list[int], blocks: dict[int, dict], residual: dict[int, int], coded: set[int]
    ) -> int | None:
        """The call traces of `numbers`: each internal call paying the address sorted (ledger), what arrived
        outside any call covered by inflows, and what left by internal calls (returned). None when your node
        gives no call traces: then what arrived outside the transactions is only bounded, and noted."""
        if not numbers:
            return 0
        calls = [("debug_traceBlockByNumber", [hex(n), {"tracer": "callTracer"}]) for n in numbers]
        traces = self.node.batch(calls, size=TRACE_BATCH)
        if any(isinstance(t, RpcError) for t in traces):
            refused = str(next(t for t in traces if isinstance(t, RpcError)))[:80]
            with_code = sorted(coded & set(numbers))
            self.missing.append(
                f"the address had code in blocks {with_code[0]}..{with_code[-1]}: ETH can come and go in internal "
                f"calls that cancel out in the balances, and your node gives no call traces ({refused})"
                if with_code
                else f"ETH that arrived outside the address's transactions in {len(numbers)} block(s) from block "
                f"{numbers[0]} is not itemised: your node gives no call traces ({refused})"
            )
            self.bound_internal(residual)
            return None
        out = 0
        for number, trace in zip(numbers, traces, strict=True):
            block = blocks[number]
            hashes = [tx["hash"].lower() for tx in block["transactions"]]
            if not isinstance(trace, list) or len(trace) != len(hashes):
                raise Unreadable(f"your node's call traces of block {number} do not list its transactions")
            arrived = left = 0
            for tx_hash, item in zip(hashes, trace, strict=True):
                root = item.get("result") if isinstance(item, dict) else None
                if not isinstance(root, dict):
                    raise Unreadable(f"your node gives no call trace of {tx_hash} in block {number}")
                for frame, path, payer, own in _eth_frames(root, self.us):
                    value = _hex(frame.get("value")) or 0
                    if (frame.get("to") or "").lower() == self.us:
                        arrived += value
                        where = ".".join(map(str, path))
                        self.ledger.sort(Payment("eth", number, block["hash"], tx_hash, where, payer, value, own))
                    else:
                        left += value
            out += left
            outside = residual[number] - arrived + left
            if outside < 0:
                raise Mismatch(f"ETH left the address in block {number} that no transaction or call of it shows")
            self.ledger.unattributed(number, "eth", outside)
        return out

    def bound_internal(self, residual: dict[int, int]) -> None:
        """Without traces: the listed internal donations each checked by their receipt, and together with the
        unexplained inflows no more than what arrived outside the address's transactions."""
        internal = [r for r in self.rows if r["asset"] == "eth" and r["trace_address"]]
        for row in internal:
            self.succeeded(row)
            self.ledger.listed.pop(_identity(row), None)
        arrived = sum(v for v in residual.values() if v > 0)
        credited = sum(raw_amount(r["amount"], 18) for r in internal)
        if credited + int(self.site["eth"]["unexplained"]) > arrived:
            raise Mismatch(
                f"the site credits {credited} wei of internal ETH and {self.site['eth']['unexplained']} "
                f"unexplained, but only {arrived} wei arrived outside the address's transactions"
            )
        self.ledger.inflows = {k: v for k, v in self.ledger.inflows.items() if k[1] != "eth"}

    def succeeded(self, row: dict, method: str = "eth_getTransactionReceipt") -> dict:
        """The listed donation's receipt (or transaction): it exists on your node and succeeded in its block."""
        try:
            answer = self.node.call(method, row["tx_hash"])
        except RpcError:
            raise Mismatch(f"your node does not know the listed donation's transaction {row['tx_hash']}") from None
        if method == "eth_getTransactionReceipt" and (
            answer.get("status") != "0x1"
            or int(answer["blockNumber"], 16) != int(row["block_number"])
            or answer.get("blockHash", "").lower() != row["block_hash"].lower()
        ):
            raise Mismatch(f"the listed donation {row['tx_hash']} did not succeed in block {row['block_number']}")
        return answer

    def internal_rows(self, rows: list[dict]) -> None:
        """Without the blocks: each internal ETH donation re-read through the node's trace of its transaction."""
        for row in rows:
            self.succeeded(row)
            try:
                trace = self.node.call("debug_traceTransaction", row["tx_hash"], {"tracer": "callTracer"})
            except RpcError:
                self.missing.append(
                    f"internal ETH donation {row['tx_hash']} ({row['trace_address']}): your node gives no "
                    "call traces, so only its receipt was checked"
                )
                continue
            path = [int(i) for i in row["trace_address"].split(".")]
            frame, failed = _frame_at(trace, path)
            value = (_hex(frame.get("value")) or 0) if frame else 0
            if frame is not None and _sender(trace, path) == self.us:
                raise Mismatch(
                    f"the listed donation {row['tx_hash']} ({row['trace_address']}) is the address's own money: "
                    "it bridged that ETH from L1 itself"
                )
            if (
                frame is None
                or failed
                or (frame.get("to") or "").lower() != self.us
                or _sender(trace, path) != row["donor"].lower()
                or value - value % 10 ** (18 - ETH_DECIMALS) != raw_amount(row["amount"], 18)
            ):
                raise Mismatch(
                    f"the listed donation {row['tx_hash']} ({row['trace_address']}) is not what its call trace says"
                )

    def eth_rows_without_blocks(self) -> None:
        """Without the blocks' balances: each listed ETH donation's own transaction, at least."""
        rows = [r for r in self.rows if r["asset"] == "eth"]
        self.internal_rows([r for r in rows if r["trace_address"]])
        for row in (r for r in rows if not r["trace_address"]):
            self.succeeded(row)
            tx = self.succeeded(row, "eth_getTransactionByHash")
            value = int(tx.get("value") or "0x0", 16)
            if (tx.get("to") or "").lower() != self.us or raw_amount(row["amount"], 18) != value - value % 10 ** (
                18 - ETH_DECIMALS
            ):
                raise Mismatch(f"the listed donation {row['tx_hash']} is not what its transaction says")


# --- the whole proof ------------------------------------------------------------------------------------------


def following(previous: dict, found: dict) -> str | None:
    """ "" when `found` starts right after `previous`; None when it is `previous` again, longer (the crawler extended
    the newest range between two pages); else what is wrong: blocks no range covers, or blocks published twice."""
    if found["first_block"] == previous["first_block"] and found["last_block"] > previous["last_block"]:
        return None
    if found["first_block"] > previous["last_block"] + 1:
        return f"blocks {previous['last_block'] + 1}..{found['first_block'] - 1}: no range covers them"
    if found["first_block"] <= previous["last_block"]:
        again = f"{found['first_block']}..{min(found['last_block'], previous['last_block'])}"
        return (
            f"blocks {found['first_block']}..{found['last_block']}: the site publishes blocks {again} again (in "
            f"blocks {previous['first_block']}..{previous['last_block']} already)"
        )
    return ""


def your_blocks(node: Node, txs: list[str], chain: str) -> dict[str, int]:
    """The block of each transaction you paid in, from your node."""
    found = {}
    for tx, receipt in zip(txs, node.batch([("eth_getTransactionReceipt", [t]) for t in txs]), strict=True):
        number = receipt.get("blockNumber") if isinstance(receipt, dict) else None
        if not isinstance(number, str) or not QUANTITY.fullmatch(number):
            raise Unreadable(f"your node does not know transaction {tx}: is it on chain {chain}?")
        found[tx] = int(number, 16)
    return found


def your_payments(check: Check, paid: dict[str, int], out: Any) -> int:
    """What the range's check made of each transaction you paid in inside it, printed; MISMATCH where the site
    books a payment of yours as the address's own money, INCOMPLETE where the range could not be checked in
    full and none was found, BAD_ARGUMENTS where your node shows it paid the address nothing."""
    verdict = MATCHES
    for tx, block in paid.items():
        if not check.first <= block <= check.last:
            continue
        booked = check.ledger.booked.get(tx, [])
        for payment, how in booked:
            if how == OWN:
                print(
                    f"does not match: your transaction: {payment.describe()}, and the site books it as {how}", file=out
                )
                return MISMATCH
            print(f"your transaction: {payment.describe()}: {how}", file=out)
        if not booked and check.missing:
            print(
                f"your transaction {tx} (block {block}): not checked, your node could not answer everything", file=out
            )
            verdict = INCOMPLETE
        elif not booked:
            print(f"your transaction {tx} (block {block}) paid the donation address nothing on your node", file=out)
            return BAD_ARGUMENTS
    return verdict


def verify(
    site: str,
    rpc: str,
    chain: str | None,
    timeout: float,
    pins: dict[str, str] | None = None,
    out: Any = sys.stdout,
    yours: list[str] | None = None,
) -> int:
    """Check the proof of `chain` (the site's first when None); `pins`: what you said the address ("address")
    and each coin's contract (by asset) are; `yours`: the transactions you paid in, each of which must be in a
    range checked and is said what the proof made of it."""
    site = site.rstrip("/")
    node = Node(rpc, timeout)
    node_chain, head = (int(n, 16) for n in (node.call("eth_chainId"), node.call("eth_blockNumber")))
    proof = Proof(site, chain, timeout, head)
    rows = read_donations(site, proof["chain"], timeout)
    if node_chain != proof["chain_id"]:
        raise Unreadable(f"your node is on chain id {node_chain}; the proof is for chain id {proof['chain_id']}")
    print(
        f"proof of {site}, chain {proof['chain']} (chain id {node_chain}, from your node), "
        f"donation address {proof['donation_address'].lower()}",
        file=out,
    )
    try:
        sale = Sale.of(node, proof.chain, rows, pins or {})
    except Mismatch as exc:
        print(f"does not match: {exc}", file=out)
        return MISMATCH
    print(sale.describe(), file=out)
    paid = your_blocks(node, yours or [], proof["chain"])
    blocks = [int(r["block_number"]) for r in rows]
    first: dict | None = None
    previous: dict | None = None
    incomplete, count = [], 0
    for found in proof.ranges():
        name = f"blocks {found['first_block']}..{found['last_block']}"
        if previous is None:
            first = found
            starts = proof.get("first_block")
            if starts is not None and found["first_block"] > starts:
                print(
                    f"does not match: blocks {starts}..{found['first_block'] - 1}: no range covers them (the site "
                    f"says its proof starts at block {starts})",
                    file=out,
                )
                return MISMATCH
            for tx, block in paid.items():
                if block < found["first_block"]:
                    print(
                        f"does not match: your transaction {tx} (block {block}) lies before block "
                        f"{found['first_block']}, where the site's proof starts: it leaves your payment out",
                        file=out,
                    )
                    return MISMATCH
            covered = bisect.bisect_left(blocks, found["first_block"])
            if covered:
                print(
                    f"note: {covered} listed donation(s) lie before the first range (block {found['first_block']})",
                    file=out,
                )
        else:
            follows = following(previous, found)
            if follows is None:
                count -= 1  # the newest range, extended between two pages: checked again, whole
            elif follows:
                print(f"does not match: {follows}", file=out)
                return MISMATCH
        inside = rows[
            bisect.bisect_left(blocks, found["first_block"]) : bisect.bisect_right(blocks, found["last_block"])
        ]
        try:
            check = Check(node, sale, found, inside)
            check.run()
        except Mismatch as exc:
            print(f"does not match: {name}: {exc}", file=out)
            return MISMATCH
        if check.missing:
            incomplete.append(name)
            print(
                f"{name}: checked what could be ({len(inside)} donation(s)); not checked: " + "; ".join(check.missing),
                file=out,
            )
        else:
            print(f"{name}: matches ({len(inside)} donation(s)){check.pending_note()}", file=out)
        verdict = your_payments(check, paid, out)
        if verdict in (MISMATCH, BAD_ARGUMENTS):
            return verdict
        if verdict == INCOMPLETE and name not in incomplete:
            incomplete.append(name)
        previous, count = found, count + 1
    if first is None or previous is None:  # (both or neither)
        print("the site has published no range yet: nothing to check", file=out)
        return INCOMPLETE
    late = []
    for tx, block in paid.items():
        if block > previous["last_block"]:
            print(
                f"your transaction {tx} (block {block}) lies after the last range the site publishes (block "
                f"{previous['last_block']}): not in the proof yet, check again later",
                file=out,
            )
            late.append(tx)
    beyond = len(blocks) - bisect.bisect_right(blocks, previous["last_block"])
    if beyond:
        print(
            f"note: {beyond} listed donation(s) lie after the last range (confirmed since it was published)", file=out
        )
    checked = len(rows) - bisect.bisect_left(blocks, first["first_block"]) - beyond
    span = f"{count} range(s), blocks {first['first_block']}..{previous['last_block']}, {checked} donation(s)"
    if incomplete or late:
        unchecked = [f"{len(incomplete)} range(s) not fully checked ({incomplete[0]} first)"] if incomplete else []
        unchecked += [f"your transaction {late[0]} is not in it yet"] if late else []
        print(f"matches as far as it could be checked: {span}; {'; '.join(unchecked)}", file=out)
        return INCOMPLETE
    print(f"matches: {span} ({node.calls} calls to your node)", file=out)
    return MATCHES


def _address(text: str) -> str:
    if not ADDRESS.fullmatch(text):
        raise argparse.ArgumentTypeError("an address: 0x and 40 hex digits")
    return text.lower()


def _tx_hash(text: str) -> str:
    if not HASH.fullmatch(text):
        raise argparse.ArgumentTypeError("a transaction hash: 0x and 64 hex digits")
    return text.lower()


def _coin(text: str) -> tuple[str, str]:
    asset, _, contract = text.partition("=")
    if not ASSET_NAME.fullmatch(asset) or asset == "eth" or not ADDRESS.fullmatch(contract):
        raise argparse.ArgumentTypeError("ASSET=0xCONTRACT, e.g. usdc=0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48")
    return asset, contract.lower()


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86400:  # NaN fails this too
        raise argparse.ArgumentTypeError("a number of seconds, more than 0 and at most 86400")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dws-verify", description="Check a dws sale's proof of completeness against your own node."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--site", required=True, help="the sale's address, e.g. https://sale.example")
    parser.add_argument(
        "--rpc", required=True, help="your Ethereum node's JSON-RPC URL (an archive node for old ranges)"
    )
    parser.add_argument("--chain", help="which of the sale's chains to check (default: its first)")
    parser.add_argument(
        "--address", type=_address, help="the donation address you paid (the check fails if the site says another)"
    )
    parser.add_argument(
        "--coin",
        type=_coin,
        action="append",
        default=[],
        metavar="ASSET=0xCONTRACT",
        help="a coin you paid in, e.g. usdc=0xa0b8...eb48 (repeatable; the check fails if the site lists another "
        "contract for it, or leaves it out)",
    )
    parser.add_argument(
        "--tx",
        type=_tx_hash,
        action="append",
        default=[],
        metavar="0xTRANSACTION",
        help="a transaction you paid in (repeatable): it must lie in the proof, and you are told what it made of it",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        help="seconds for each answer to arrive in full (default 60; the donation CSV gets ten times this)",
    )
    args = parser.parse_args(argv)
    pins = dict(args.coin) | ({"address": args.address} if args.address else {})
    try:
        return verify(args.site, args.rpc, args.chain, args.timeout, pins, yours=args.tx)
    except (Unreadable, RpcError) as exc:
        print(f"could not check: {exc}", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - an answer nobody foresaw: one line and exit 4, never a traceback
        print(f"could not check: an answer the verifier cannot read ({type(exc).__name__}: {exc})", file=sys.stderr)
    except KeyboardInterrupt:
        print("could not check: interrupted", file=sys.stderr)
    return UNREADABLE


if __name__ == "__main__":
    sys.exit(main())
