"""How far behind a crawler is in time: the seconds between its cursor block and its tip block."""

from __future__ import annotations

from crawlers.chain.calls import header_call
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from crawlers.decode.blocks import header_of


def lag_seconds(client: RpcClient, cursor: int | None, tip: int | None) -> int | None:
    """The two blocks' timestamps apart, in one round trip (0 when current); None when unknown."""
    if cursor is None or tip is None:
        return None
    if tip <= cursor:
        return 0
    outcomes = client.batch([header_call(cursor), header_call(tip)])
    at_cursor, at_tip = (header_of(o.value) if isinstance(o, Answer) else None for o in outcomes)
    if at_cursor is None or at_tip is None:
        return None
    return int((at_tip.time - at_cursor.time).total_seconds())
