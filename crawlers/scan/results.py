"""What a scan hands up: blocks with what they hold, or a hold saying why the scan stopped before a block.

A hold is a value, not an exception: the scan returns the blocks it could prove and the hold; the run
decides what to log and report. `ReadMode` is what a crawler's label means down here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crawlers.chain.logs import ForeignLogs
from crawlers.chain.outcomes import RpcOutcome
from crawlers.decode.balances import NONCE
from crawlers.decode.blocks import BlockHeader
from crawlers.decode.transfers import Movement
from donations.refund_values import Payout, StrayTransfer
from donations.sightings import Transfer

STUCK_POINTER = 'if this persists see docs/operating.md, "a crawler is stuck on a block"'


@dataclass(frozen=True)
class ReadMode:
    """How a scan reads: `name` prefixes the debug store's files; `final`: the blocks are finalized, so
    they come through DWS_BLOCK_CACHE and what the proof cannot explain is an inflow to record (else it is
    only logged, and recorded once the block is final). `run`: names one crawler run (what the scan
    remembers across runs, crawlers/scan/history.py, tells this run from an earlier one)."""

    name: str
    final: bool
    run: str = ""


def stuck_message(number: int, reason: str) -> str:
    return f"block: {number} -- {reason}; {STUCK_POINTER}"


@dataclass(frozen=True)
class BlockHeld:
    """A block we cannot prove; the cursor stays before it."""

    number: int
    reason: str

    def describe(self) -> str:
        return stuck_message(self.number, self.reason)

    def __str__(self) -> str:
        return self.reason


@dataclass
class ScannedBlock:
    header: BlockHeader
    transfers: list[Transfer] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)  # ETH txs to us whose receipt says status 0
    # Raw change at the donation address that the block's transactions and logs explain, per asset
    # ("eth" in wei, each coin in its base units, NONCE in transactions sent): arrivals - departures.
    flows: dict[str, int] = field(default_factory=dict)
    logs_bloom: str = ""
    # What the balance proof could not explain (finalized blocks record it): (asset, raw amount), one
    # entry an asset (`add_unexplained`), and why, where more can be said than "no transfer explains it".
    unexplained: list[tuple[str, int]] = field(default_factory=list)
    unexplained_why: dict[str, str] = field(default_factory=dict)
    # Of `flows`, what left the address (a positive amount per asset), for the published proof.
    outflows: dict[str, int] = field(default_factory=dict)
    # What the balance proof accepted beyond `flows` where the block did not close on them: traced internal
    # ETH, unexplained inflows and the column's rounding (so flows + settled is the block's exact change).
    settled: dict[str, int] = field(default_factory=dict)
    # What reached the address by its own doing (self-transfers, value returned in its own transactions):
    # part of `flows` or `settled`, never a donation; finalized blocks record it for the admin.
    own: list[Movement] = field(default_factory=list)
    # EIP-7702 authorizations the donation address signed in the block (each moves its nonce by one).
    authorized: int = 0
    # The block's call traces were read and their ETH frames at the donation address are in `flows` (an
    # address with code: crawlers/scan/with_code.py); what still does not close is not asked of them again.
    traced: bool = False
    # Value that left the address to someone else (its transactions' ETH, its calls' ETH, its Transfer logs of
    # a coin or a stray token): a finalized block hands them to the refund register, which matches each to an
    # owed refund (crawlers/scan/payouts.py).
    payouts: list[Payout] = field(default_factory=list)
    # Of a traced block, the transactions whose trace alone is past DWS_RPC_MAX_ANSWER_MB (not in `flows`).
    untraced: list[str] = field(default_factory=list)
    # Our provider gave no call traces for the block: ETH paid by an internal call is in its unexplained inflow.
    traces_refused: bool = False
    # Transactions that minted a coin to the address whose receipt alone is past DWS_RPC_MAX_ANSWER_MB: whose
    # mint it is cannot be read (crawlers/scan/own.py `open_mints` says so in the inflow's reason).
    unread_receipts: list[str] = field(default_factory=list)
    # Coins (by asset) whose Transfer logs at the address in this block are past DWS_RPC_MAX_ANSWER_MB even alone
    # (crawlers/chain/logs.py): not in `flows`; what the balances say they brought is an unexplained inflow.
    unread_logs: frozenset[str] = frozenset()

    def add_unexplained(self, asset: str, raw: int, why: str = "") -> None:
        """Note `raw` units of `asset` no transfer accounts for (added to what the asset has already), and why."""
        found = dict(self.unexplained)
        found[asset] = found.get(asset, 0) + raw
        self.unexplained[:] = [(a, r) for a, r in found.items() if r != 0]
        if why:
            known = self.unexplained_why.get(asset)
            self.unexplained_why[asset] = f"{known}; {why}" if known else why

    # Stray coins that reached the address in it from someone else (a well-known token the sale does not take,
    # crawlers/scan/strays.py): a finalized block owes each back to its sender, before its payouts are matched.
    strays: list[StrayTransfer] = field(default_factory=list)

    def add_flow(self, asset: str, raw: int) -> None:
        self.flows[asset] = self.flows.get(asset, 0) + raw
        if raw < 0 and asset != NONCE:
            self.outflows[asset] = self.outflows.get(asset, 0) - raw

    @property
    def quiet(self) -> bool:
        """Nothing to write: no donation, no revert, no unexplained inflow, no internal movement, no payout, no
        stray coin."""
        return not (self.transfers or self.reverted or self.unexplained or self.own or self.payouts or self.strays)


@dataclass
class RangeRead:
    """What `read_range` found: the proven prefix of the range, why it stopped early, the extra answers."""

    blocks: list[ScannedBlock]
    held: BlockHeld | None
    extra: list[RpcOutcome]
    foreign: ForeignLogs = field(default_factory=ForeignLogs)  # the range's logs of coins the sale does not take
