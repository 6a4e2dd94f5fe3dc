"""Reading a range of blocks in four steps: fetch, continuity check, decode, flow accounting.

* fetch: one batched request for the range's full blocks (the proof's balance calls riding along), one
  for the coins' Transfer logs to and from the donation address, and one for the receipts of the
  transactions moving ETH at it (only when there are any);
* continuity: the blocks' parent hashes must chain together, and every log and receipt must name the
  block we fetched: a re-org between our requests shows up as a mismatch, which is no evidence either;
* decode: headers, ETH candidates and ETH moves (crawlers/decode);
* flow accounting (crawlers/scan/flows.py): each block's donations and raw flows at the donation
  address, which the balance proof (crawlers/scan/proof.py) checks against the balances.

`read_range` returns the blocks it could prove and, if it stopped early, the `BlockHeld` saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from crawlers.chain.block_store import block_well_formed, fetch_blocks_with
from crawlers.chain.calls import receipt_calls
from crawlers.chain.files import debug_dump
from crawlers.chain.logs import RangeLogs, range_logs
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome, too_large
from crawlers.chain.rpc import RpcClient
from crawlers.decode.amounts import log_block_number
from crawlers.decode.authorizations import authorizations_by
from crawlers.decode.blocks import block_header
from crawlers.decode.mints import mint_depositors
from crawlers.decode.transfers import EthCandidate, EthMove, coin_mints, eth_candidates, eth_moves
from crawlers.scan.flows import account_logs, account_receipts
from crawlers.scan.payouts import account_payouts
from crawlers.scan.results import BlockHeld, RangeRead, ReadMode, ScannedBlock
from crawlers.scan.strays import account_strays
from donations.sightings import amount_scale
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

RANGE_BLOCKS = 50  # blocks fetched per batch: one round trip for the blocks, one for the logs


def read_range(
    client: RpcClient,
    chain: ChainSettings,
    start: int,
    end: int,
    mode: ReadMode,
    *,
    extra: Sequence[Call] = (),
    numbers: Sequence[int] | None = None,
    logs: RangeLogs | None = None,
) -> RangeRead:
    """Blocks start..end with their donations and raw flows; stops at the first block it cannot prove.

    `numbers` (the sparse path, crawlers/scan/sparse.py) reads only those blocks of the range, with the
    range's Transfer `logs` already in hand; only blocks next to each other must chain. The range's foreign
    logs (coins the sale does not take) ride along in `RangeRead.foreign`, each block's stray coins in its
    `strays` (crawlers/scan/strays.py) and its transfers out of the address in its `payouts`
    (crawlers/scan/payouts.py).
    """
    numbers = list(numbers) if numbers is not None else range(start, end + 1)
    outcomes, extra_outcomes = fetch_blocks_with(client, chain, numbers, through_cache=mode.final, extra=extra)
    blocks, held = _chained(chain, mode, numbers, outcomes)
    if not blocks:
        return RangeRead([], held, extra_outcomes)
    last = int(blocks[-1]["number"], 16)
    scanned, candidates, moves = _decoded(chain, blocks)

    if logs is not None:  # the sparse path asked them for the whole range: keep those of the blocks read
        to_us, from_us = ([log for log in found if log_block_number(log) <= last] for found in logs.coins)
        foreign, unread = logs.foreign.through(last), logs.unread
    else:
        try:
            found_logs = range_logs(client, chain, start, last)
        except NoEvidenceError as exc:
            return RangeRead(
                [], BlockHeld(start, f"no Transfer logs for blocks {start}..{last} ({exc})"), extra_outcomes
            )
        (to_us, from_us), foreign, unread = found_logs.coins, found_logs.foreign, found_logs.unread
    for number, assets in unread.items():
        if number in scanned:
            scanned[number].unread_logs = assets
    signed = {move.tx_hash for move in moves if move.sender == chain.donation_address}
    mints = coin_mints(to_us, chain.stable_coins, chain.donation_address)
    receipts = _receipts(client, chain, {m.tx_hash for m in moves} | {_tx(log) for log in mints})
    depositors, unread_mint = _depositors(chain, scanned, mints, receipts)
    cut = account_logs(chain, scanned, to_us, from_us, last, signed, depositors=depositors)
    # The blocks before a hold are recorded: their transactions' receipts are accounted too.
    moves = [move for move in moves if cut is None or move.block_number < cut.number]
    cut = _earlier(cut, account_receipts(chain, scanned, candidates, moves, receipts))
    cut = _earlier(cut, unread_mint)
    cut = _earlier(cut, account_strays(chain, scanned, blocks, foreign.to_us, last, signed))
    account_payouts(chain, scanned, [*from_us, *foreign.from_us], moves, receipts)
    if cut is not None:
        return RangeRead(_prefix(scanned, cut.number), cut, extra_outcomes, foreign)
    return RangeRead(_prefix(scanned, last + 1), held, extra_outcomes, foreign)


def _earlier(held: BlockHeld | None, other: BlockHeld | None) -> BlockHeld | None:
    """The hold at the earlier block of the two (either may be None)."""
    if held is None or (other is not None and other.number < held.number):
        return other
    return held


def _chained(
    chain: ChainSettings, mode: ReadMode, numbers: Sequence[int], outcomes: Sequence[RpcOutcome]
) -> tuple[list[dict], BlockHeld | None]:
    """The fetched blocks up to the first that is missing, malformed or does not build on the one before."""
    blocks: list[dict] = []
    for number, outcome in zip(numbers, outcomes, strict=True):
        if isinstance(outcome, NoEvidence) and outcome.kind == "cache-write":
            return blocks, BlockHeld(number, f"DWS_BLOCK_CACHE: could not write the block ({outcome.detail})")
        if isinstance(outcome, NoEvidence):
            return blocks, BlockHeld(number, f"no block from the provider ({outcome.kind}: {outcome.detail})")
        if not block_well_formed(outcome.value, number):
            reason = "the provider's block is malformed (wrong number, no hash or no transactions)"
            return blocks, BlockHeld(number, reason)
        if (
            blocks
            and int(blocks[-1]["number"], 16) == number - 1
            and outcome.value["parentHash"].lower() != blocks[-1]["hash"].lower()
        ):
            return blocks, BlockHeld(number, "block does not build on the previous one fetched (re-org under way)")
        blocks.append(outcome.value)
        debug_dump(chain, f"{mode.name}-{number}.json", outcome.value)
    return blocks, None


def _decoded(
    chain: ChainSettings, blocks: Sequence[dict]
) -> tuple[dict[int, ScannedBlock], list[EthCandidate], list[EthMove]]:
    """Each block's header, the ETH transfers to us worth recording (non-zero at the column scale), and
    every transaction moving ETH at the donation address (for the raw flows)."""
    scanned: dict[int, ScannedBlock] = {}
    candidates: list[EthCandidate] = []
    moves: list[EthMove] = []
    for block in blocks:
        header = block_header(block)
        scanned[header.number] = ScannedBlock(
            header=header,
            logs_bloom=str(block.get("logsBloom") or ""),
            authorized=authorizations_by(block.get("transactions") or [], chain.donation_address, chain.chain_id),
        )
        candidates += eth_candidates(block, chain.donation_address, amount_scale("eth"))
        moves += eth_moves(block, chain.donation_address)
    return scanned, candidates, moves


def _tx(log: dict) -> str:
    return (log.get("transactionHash") or "").lower()


def _depositors(
    chain: ChainSettings, scanned: dict[int, ScannedBlock], mints: Sequence[dict], receipts: dict[str, RpcOutcome]
) -> tuple[dict[tuple[str, int], str], BlockHeld | None]:
    """Who deposited each coin minted to the address (crawlers/decode/mints.py), read from its transaction's
    receipt; and a hold at the first mint whose receipt is no evidence or of another block (whether it is a
    donation is not known without it: the blocks from there are not handed on). A receipt past the answer cap
    even alone (anyone can add a megabyte log to a transaction that mints to the address) names nobody: the
    mint is an open question for the operator, never a hold for good."""
    logs_by_tx: dict[str, list[dict]] = {}
    held = None
    for mint in mints:
        tx, number = _tx(mint), log_block_number(mint)
        outcome = receipts[tx]
        receipt = outcome.value if isinstance(outcome, Answer) else None
        block = scanned.get(number)
        if too_large(outcome) and block is not None:
            if tx not in block.unread_receipts:
                block.unread_receipts.append(tx)
                logger.warning(
                    "block %d: the receipt of tx %s, which minted a coin to the donation address, is past "
                    "DWS_RPC_MAX_ANSWER_MB even alone: the mint is an unexplained inflow",
                    number,
                    tx,
                )
            continue
        if (
            not isinstance(receipt, dict)
            or block is None
            or str(receipt.get("blockHash") or "").lower() != block.header.hash
        ):
            why = outcome.describe() if isinstance(outcome, NoEvidence) else "a receipt of another block"
            held = BlockHeld(number, f"no receipt for tx '{tx}', which minted a coin to the donation address ({why})")
            break
        logs_by_tx[tx] = [log for log in receipt.get("logs") or [] if isinstance(log, dict)]
    return mint_depositors(mints, logs_by_tx, chain.donation_address), held


def _receipts(client: RpcClient, chain: ChainSettings, hashes_wanted: set[str]) -> dict[str, RpcOutcome]:
    """The receipts of these transactions (those moving ETH at the address, those minting a coin to it),
    in one batch, by hash."""
    hashes = sorted(hashes_wanted)
    receipts = dict(zip(hashes, client.batch(receipt_calls(hashes)) if hashes else [], strict=True))
    for tx_hash, outcome in receipts.items():
        debug_dump(chain, f"txr-{tx_hash}.json", outcome.value if isinstance(outcome, Answer) else None)
    return receipts


def _prefix(scanned: dict[int, ScannedBlock], stop: int) -> list[ScannedBlock]:
    """The scanned blocks before `stop`, in order."""
    return [scanned[n] for n in sorted(scanned) if n < stop]
