"""A crawler's catch-up: how far behind it is, how fast it moves, and when it should be current.

A run that stops at its per-run cap with blocks still to do is followed at once by the next one (the
Celery task re-queues itself; the command loop skips its pause). Each such run stores its progress here
(in Redis, shared by every worker) so `/health` and the log can say when the catch-up should end.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from redis.exceptions import RedisError

from crawlers.models import FINALIZED, LATEST
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

KEY = "dws:crawl-progress:{chain}:{label}"
TTL_SECONDS = 600  # progress older than this is no longer a catch-up under way


@dataclass(frozen=True)
class CatchUp:
    chain: str
    label: str
    cursor: int
    tip: int
    blocks_per_second: float  # this run's speed: a progress figure, never used for money
    eta_seconds: int

    @property
    def behind(self) -> int:
        return self.tip - self.cursor

    def describe(self) -> str:
        return (
            f"crawl {self.label} on {self.chain}: catching up, {self.behind} block(s) behind tip {self.tip} at "
            f"{self.blocks_per_second:.0f} blocks/s, about {self.eta_seconds} s to go"
        )


def catch_up_record(*, chain: str, label: str, cursor: int, tip: int, blocks: int, seconds: float) -> CatchUp:
    """Store and log the progress of a run that ended behind its tip; returns it."""
    speed = blocks / seconds if seconds > 0 else 0.0
    behind = max(tip - cursor, 0)
    eta = int(behind / speed) + 1 if speed > 0 else -1
    progress = CatchUp(chain, label, cursor, tip, round(speed, 1), eta)
    try:
        get_redis().set(KEY.format(chain=chain, label=label), json.dumps(asdict(progress)), ex=TTL_SECONDS)
    except RedisError as exc:  # progress is a courtesy; the crawl itself does not depend on it
        logger.warning("catch-up progress not stored: %s", type(exc).__name__)
    logger.info("%s", progress.describe())
    return progress


def catch_up_clear(chain: str, label: str) -> None:
    with contextlib.suppress(RedisError):
        get_redis().delete(KEY.format(chain=chain, label=label))


def catch_up_status(chain: str, label: str) -> dict[str, Any] | None:
    """The stored progress of a catch-up under way, for /health; None when the crawler is current."""
    try:
        raw = get_redis().get(KEY.format(chain=chain, label=label))
    except RedisError:
        return None
    if not raw:
        return None
    data = json.loads(raw)
    data["behind"] = data["tip"] - data["cursor"]
    return data


# --- where each crawler stands: following, catching up, or stuck ----------------------------------------

FOLLOWING = "following"
CATCHING_UP = "catching up"
STUCK = "stuck"
STATES = (FOLLOWING, CATCHING_UP, STUCK)
# A crawler behind its tip whose cursor has not moved for this long is stuck (the finalized tag itself
# moves every ~6.4 minutes, in jumps of 32 blocks, so its crawler gets more slack).
STUCK_AFTER = {LATEST: timedelta(minutes=5), FINALIZED: timedelta(minutes=20)}
# Within this many blocks of its tip a crawler is following it (the peers' bar: never more than 5 behind).
FOLLOWING_BLOCKS = 5
TIP_KEY = "dws:crawl-tip:{chain}:{label}"
TIP_TTL_SECONDS = 86400  # a tip seen a day ago still says the chain had moved past a cursor standing still


def crawler_state(label: str, *, cursor: int, tip: int, since_moved: timedelta) -> str:
    """The one rule /health and the metrics tell a crawler's state by: stuck when it is behind its tip and
    its cursor has not moved for STUCK_AFTER; else following within FOLLOWING_BLOCKS; else catching up."""
    behind = tip - cursor
    if behind > 0 and since_moved > STUCK_AFTER.get(label, STUCK_AFTER[LATEST]):
        return STUCK
    return FOLLOWING if behind <= FOLLOWING_BLOCKS else CATCHING_UP


def tip_note(chain: str, label: str, tip: int) -> None:
    """The tip a crawler (or the head follower) last saw, for the metrics' state (they ask no provider)."""
    with contextlib.suppress(RedisError):
        get_redis().set(TIP_KEY.format(chain=chain, label=label), str(tip), ex=TIP_TTL_SECONDS)


def tip_noted(chain: str, label: str) -> int | None:
    try:
        raw = get_redis().get(TIP_KEY.format(chain=chain, label=label))
    except RedisError:
        return None
    return int(raw) if raw else None
