"""A coin's configured scale against its contract: the scale DWS_STABLE_COINS gives a coin
(`usdc:0xA0b8…eB48:6`) must be what the contract's `decimals()` says.

The scale turns a Transfer's raw amount into the donation's amount: USDC configured at 18 instead of 6 makes
a 50 USDC donation 0.00000000005 USDC, below the column's scale, credited to nobody, while every published
figure still adds up (the public verifier reads decimals() from the donor's own node for the same reason).
So a worker reads every configured coin's decimals() when it starts (crawlers/runs/start_checks.py), keeps
what each contract said in Redis for every process, and says CRITICAL, naming the variable, for a scale
that differs; from then on every run of that chain holds with the same words, as for a chain id mismatch,
and nothing is recorded until the configuration is right. Runs ask nothing themselves (they read the note):
a contract that did not answer is no evidence, and nothing is refused on it.
"""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

KEY = "dws:coin-decimals"  # hash: "<chain>:<contract>" -> the decimals its contract said
DECIMALS = "0x313ce567"  # decimals()


class ScaleMismatchError(ChainMismatchError):
    """A configured coin's scale is not its contract's decimals(): amounts would be written wrong."""

    def hold_reason(self) -> str:
        return f"{self}; holding, nothing is recorded until {self.variable} gives each coin its contract's decimals"


def _field(chain: ChainSettings, contract: str) -> str:
    return f"{chain.name}:{contract.lower()}"


def read_decimals(client: RpcClient, chain: ChainSettings) -> dict[str, int]:
    """Each configured coin's decimals() as its contract says them now (one batch), noted for every process;
    a coin whose contract gave no readable answer is left out."""
    coins = chain.stable_coins
    outcomes = client.batch([("eth_call", [{"to": coin.contract, "data": DECIMALS}, "latest"]) for coin in coins])
    said: dict[str, int] = {}
    for coin, outcome in zip(coins, outcomes, strict=True):
        value = outcome.value if isinstance(outcome, Answer) else None
        if isinstance(value, str) and len(value) == 66 and value.startswith("0x"):
            try:
                said[coin.contract] = int(value, 16)
            except ValueError:
                continue
    if said:
        try:
            get_redis().hset(KEY, mapping={_field(chain, contract): d for contract, d in said.items()})
        except RedisError as exc:
            logger.warning("coin decimals of %s not shared: %s", chain.name, type(exc).__name__)
    return said


def scale_mismatch(chain: ChainSettings, said: dict[str, int] | None = None) -> ScaleMismatchError | None:
    """The first configured coin of `chain` whose scale differs from what its contract said (`said`, else the
    note in Redis), or None (all agree, or nothing is known yet)."""
    if said is None:
        try:
            noted = get_redis().hmget(KEY, [_field(chain, c.contract) for c in chain.stable_coins])
        except RedisError:
            return None
        said = {c.contract: int(v) for c, v in zip(chain.stable_coins, noted, strict=True) if v is not None}
    variable = chain.variable("STABLE_COINS")
    for coin in chain.stable_coins:
        decimals = said.get(coin.contract)
        if decimals is not None and decimals != coin.scale:
            return ScaleMismatchError(
                f"the {coin.asset} contract {coin.contract} on {chain.name} says {decimals} decimals, "
                f"{variable} gives it scale {coin.scale}",
                variable,
            )
    return None


def require_coin_scales(chain: ChainSettings) -> None:
    """For every run: raise ScaleMismatchError when a noted contract's decimals differ from its scale."""
    mismatch = scale_mismatch(chain)
    if mismatch is not None:
        raise mismatch


def check_coin_scales(process: str, config: Config) -> bool:
    """At a worker's start: every chain's coins' decimals(), CRITICAL for each scale that differs. Whether all
    agreed (False also when a contract did not answer: a WARNING, and nothing is refused on it)."""
    agreed = True
    for chain in config.chains:
        if not chain.stable_coins:
            continue
        said = read_decimals(make_probe_client(chain), chain)
        mismatch = scale_mismatch(chain, said)
        if mismatch is not None:
            logger.critical("%s: %s", process, mismatch.hold_reason())
            agreed = False
        silent = [c.asset for c in chain.stable_coins if c.contract not in said]
        if silent:
            logger.warning(
                "%s: the contracts of %s on %s did not say their decimals at start; nothing is refused on that",
                process,
                ", ".join(silent),
                chain.name,
            )
            agreed = False
    return agreed
