"""The Transfer logs to and from the donation address over a range: both filters in one round trip when the
span is within what the provider accepts, else through `RpcClient.get_logs`, which splits it.

The filter to us asks every contract (crawlers/chain/calls.py `transfer_log_contracts`): the donation coins'
logs are split from the rest here, once, so the balance proof and the detection see exactly the coins' logs,
and the rest (`ForeignLogs`: coins the sale does not take, spam; the stray tokens leaving us) goes to the
refund register's decoding (crawlers/decode/strays.py).

Anyone can emit a Transfer event naming the donation address from a contract of their own, with as much
data as gas buys: one block's answer to the every-contract filter can be past DWS_RPC_MAX_ANSWER_MB
however far `get_logs` halves the span. Such a range is asked again for the contracts whose logs decide
something (the donation coins and the stray tokens): the rest are only counted (crawlers/decode/strays.py),
and a stranger's log must never hold the chain. Where even one coin's Transfer logs of one block are past
the cap (thousands of zero-value transfers to the address in one block), that coin's logs of that block
are not read (`RangeLogs.unread`): the balance proof records what the balances say it brought there as an
unexplained inflow, with the reason (crawlers/scan/proof.py), and the cursor moves on."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from crawlers.chain.calls import transfer_filters, transfer_log_calls, transfer_log_contracts
from crawlers.chain.outcomes import TOO_LARGE, Answer, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")
# The logs of the coins' Transfers (to us, from us), as the node answered them.
TransferLogs = tuple[list[dict], list[dict]]


@dataclass(frozen=True)
class ForeignLogs:
    """Transfer logs at the donation address that are not its donation coins': to it, of any other contract;
    from it, of its stray tokens."""

    to_us: list[dict] = field(default_factory=list)
    from_us: list[dict] = field(default_factory=list)

    def through(self, last: int) -> ForeignLogs:
        """The logs of blocks up to `last`."""
        return ForeignLogs(
            [log for log in self.to_us if _block(log) <= last], [log for log in self.from_us if _block(log) <= last]
        )


@dataclass(frozen=True)
class RangeLogs:
    """A range's Transfer logs at the donation address: its coins' (what the proof accounts) and the rest."""

    coins: TransferLogs
    foreign: ForeignLogs = field(default_factory=ForeignLogs)
    # Blocks whose Transfer logs of these coins (by asset) are past the answer cap even alone: not in `coins`.
    unread: dict[int, frozenset[str]] = field(default_factory=dict)


NO_LOGS = RangeLogs(([], []))


def _block(log: dict) -> int:
    try:
        return int(log.get("blockNumber") or "0x0", 16)
    except (TypeError, ValueError):
        return 0


def split_logs(chain: ChainSettings, to_us: list[dict], from_us: list[dict]) -> RangeLogs:
    """The two filters' answers split into the donation coins' logs and the foreign ones."""
    coins = {c.contract for c in chain.stable_coins}
    strays = {t.contract for t in chain.stray_tokens}

    def contract(log: dict) -> str:
        return str(log.get("address") or "").lower()

    return RangeLogs(
        ([log for log in to_us if contract(log) in coins], [log for log in from_us if contract(log) in coins]),
        ForeignLogs(
            [log for log in to_us if contract(log) not in coins], [log for log in from_us if contract(log) in strays]
        ),
    )


def logs_in_one_batch(client: RpcClient, chain: ChainSettings, start: int, end: int) -> bool:
    """Whether both Transfer filters over start..end go in one batch: the span is within what the provider
    accepts (else `get_logs` splits it)."""
    return end - start + 1 <= client.log_span


def range_logs(client: RpcClient, chain: ChainSettings, start: int, last: int) -> RangeLogs:
    """The range's Transfer logs at the donation address. A provider that refuses the span (or either
    filter) is asked again through `get_logs`; anything short of two full answers raises NoEvidenceError."""
    if logs_in_one_batch(client, chain, start, last):
        outcomes = client.batch(transfer_log_calls(chain, start, last))
        answered = answered_logs(chain, outcomes)
        if answered is not None:
            return answered
    unread: dict[int, set[str]] = {}
    to_us, from_us = (
        _logs_that_fit(client, chain, contracts, topics, start, last, unread)
        for contracts, topics in zip(transfer_log_contracts(chain), transfer_filters(chain), strict=True)
    )
    found = split_logs(chain, to_us, from_us)
    if not unread:
        return found
    assets = {coin.contract: coin.asset for coin in chain.stable_coins}
    named = {n: frozenset(assets[c] for c in contracts if c in assets) for n, contracts in unread.items()}
    return RangeLogs(found.coins, found.foreign, {n: a for n, a in named.items() if a})


def _logs_that_fit(
    client: RpcClient,
    chain: ChainSettings,
    contracts: list[str] | None,
    topics: list,
    start: int,
    last: int,
    unread: dict[int, set[str]],
) -> list[dict]:
    """One filter's logs over start..last, split until each answer fits (see the module doc): a filter of every
    contract (`contracts` None) is asked again for the coins' and stray tokens' contracts alone (none: no log
    of another contract decides anything); then by halves of the range, then contract by contract; one
    contract's logs of one block past the cap are left out and noted in `unread` (block -> contracts)."""
    try:
        return client.get_logs(addresses=contracts, topics=topics, from_block=start, to_block=last)
    except NoEvidenceError as exc:
        if exc.outcome.kind != TOO_LARGE:
            raise
    if contracts is None:
        deciding = [c.contract for c in (*chain.stable_coins, *chain.stray_tokens)]
        logger.warning(
            "blocks %d..%d of %s: the Transfer logs at the donation address of every contract are past "
            "DWS_RPC_MAX_ANSWER_MB even for one block (anyone can emit a large one); asking the %d coin and stray "
            "token contract(s) alone: the other contracts' Transfers in these blocks are not counted",
            start,
            last,
            chain.name,
            len(deciding),
        )
        return _logs_that_fit(client, chain, deciding, topics, start, last, unread) if deciding else []
    if start < last:
        middle = (start + last) // 2
        return _logs_that_fit(client, chain, contracts, topics, start, middle, unread) + _logs_that_fit(
            client, chain, contracts, topics, middle + 1, last, unread
        )
    if len(contracts) > 1:
        return [log for c in contracts for log in _logs_that_fit(client, chain, [c], topics, start, last, unread)]
    unread.setdefault(start, set()).add(contracts[0])
    logger.error(
        "block %d of %s: the Transfer logs of %s at the donation address are past DWS_RPC_MAX_ANSWER_MB even alone: "
        "not read; what the balances say that coin brought in the block is an unexplained inflow",
        start,
        chain.name,
        contracts[0],
    )
    return []


def transfer_logs(client: RpcClient, chain: ChainSettings, start: int, last: int) -> TransferLogs:
    """(the coins' logs to us, from us): `range_logs` without the foreign ones."""
    return range_logs(client, chain, start, last).coins


def answered_logs(chain: ChainSettings, answers: Sequence[RpcOutcome]) -> RangeLogs | None:
    """The two filters' logs from answers already in hand (a batch they rode in), or None unless both are
    full answers."""
    if len(answers) != 2:
        return None
    to_us, from_us = answers
    if not (isinstance(to_us, Answer) and isinstance(from_us, Answer)):
        return None
    if isinstance(to_us.value, list) and isinstance(from_us.value, list):
        return split_logs(chain, to_us.value, from_us.value)
    return None
