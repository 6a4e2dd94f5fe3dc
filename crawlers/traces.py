"""Internal ETH transfers: value that reaches the donation address inside a transaction, from a contract.

INTERFACE STUB (filled in by the traces work of issue #10): the crawl calls `internal_eth_transfers` for a
block whose ETH balance change no top-level transaction explains.
"""

from __future__ import annotations

from crawlers.detection import Transfer
from crawlers.rpc import RpcClient
from dws_project.config import Config


class TracesUnavailable(Exception):
    """The provider answers no trace method we know (or DWS_TRACE=off): internal transfers cannot be seen."""


def internal_eth_transfers(client: RpcClient, config: Config, *, block_number: int, block_hash: str) -> list[Transfer]:
    """Every successful call frame below the top level that moved ETH to the donation address in the block.

    Returns `Transfer`s with `asset="eth"`, `log_index=None`, `donor` = the frame's `from`, the amount at
    the ETH column scale (rounded down, zero-at-scale dropped), and `trace_address` set (never None).
    Raises `NoEvidenceError` for a transient provider failure (hold the block and retry) and
    `TracesUnavailable` when the provider cannot trace at all (record an unexplained inflow instead).
    """
    raise TracesUnavailable("internal ETH transfers are not implemented yet")
