"""What the finalized crawler last saw of a chain's check provider (DWS_RPC_CHECK_URL), for /health.

One state per chain, kept in Redis beside the donation address's mode (a status, not a record): since when
it has been so, why, and the check provider's finalized block and how far it trails ours.

* `agreeing`: it answers, and the last range it was asked about it showed as the primary did;
* `lagging`: it answers, but its finalized block trails ours and nothing is left to confirm below it: the
  finalized crawler waits for it (WARNING lines);
* `waiting`: it gave no evidence (down, an error, a time-out, a 429): nothing is confirmed until it
  answers (WARNING lines);
* `disagreeing`: it answered differently about a block about to be recorded: the chain holds (CRITICAL).

A state that came from its `finalized` block (`tip`) is cleared by the next answer about it; one that came
from a range's cross-check (`range`) stands until the next cross-check, so the state does not flip between
runs while a range holds.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.utils import timezone
from redis.exceptions import RedisError

from dws_project.chain_settings import ChainSettings
from dws_project.redaction import redact_url
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

AGREEING = "agreeing"
LAGGING = "lagging"
WAITING = "waiting"
DISAGREEING = "disagreeing"
TIP = "tip"  # the state came from the check provider's finalized block
RANGE = "range"  # ... from a range's cross-check


def _key(chain: str) -> str:
    return f"dws:check-provider:{chain}"


def _previous(chain: str) -> dict[str, Any]:
    raw = get_redis().get(_key(chain))
    value = json.loads(raw) if raw else None
    return value if isinstance(value, dict) else {}


def note_check(
    chain: ChainSettings, origin: str, state: str, *, source: str, reason: str | None = None, **facts: Any
) -> None:
    """Keep the check provider's state (since when: kept while the state stays); a state from its tip does
    not replace one a range's cross-check left (`agreeing` then only updates the facts)."""
    try:
        previous = _previous(chain.name)
        if source == TIP and state == AGREEING and previous.get("source") == RANGE:
            state, reason, source = previous["state"], previous.get("reason"), RANGE
        same = previous.get("state") == state
        status = {
            "origin": origin,
            "state": state,
            "since": previous.get("since") if same else timezone.now().isoformat(),
            "reason": reason,
            "source": source,
            "finalized": facts.get("finalized", previous.get("finalized")),
            "lag_blocks": facts.get("lag_blocks", previous.get("lag_blocks")),
            # the furthest block a range's cross-check showed (a single block re-crawled never moves it back)
            "checked_through": max(
                (n for n in (facts.get("checked_through"), previous.get("checked_through")) if n is not None),
                default=None,
            ),
            "at": timezone.now().isoformat(),
        }
        get_redis().set(_key(chain.name), json.dumps(status))
    except (RedisError, ValueError) as exc:
        logger.warning("check provider status of %s not shared: %s", chain.name, type(exc).__name__)


def check_status(chain: ChainSettings) -> dict[str, Any] | None:
    """For /health: None when the chain has no check provider; else its last state (`unknown` before the
    finalized crawler asked it, or when Redis does not answer)."""
    if chain.rpc_check_url is None:
        return None
    try:
        status = _previous(chain.name)
    except (RedisError, ValueError):
        status = {}
    if not status:
        return {"origin": redact_url(chain.rpc_check_url), "state": "unknown"}
    return {k: v for k, v in status.items() if k != "source"}
