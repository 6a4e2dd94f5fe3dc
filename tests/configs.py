"""A configuration with a few values changed, for a test: one chain's settings (its provider, chain id,
start block, ...) on that chain, the rest on the whole configuration."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from dws_project.chain_settings import ChainSettings
from dws_project.config import Config

CHAIN_FIELDS = {f.name for f in dataclasses.fields(ChainSettings)} - {"name"}
# Kept on both: the whole configuration's value is every chain's.
SHARED_FIELDS = {"block_cache", "debug_data_store", "rpc_max_answer_bytes", "rpc_max_in_flight"}


def configured(config: Config, *, chain: str | None = None, **changes: Any) -> Config:
    """`config` with `changes`: chain settings go to `chain` (the first chain when None), shared ones to every
    chain and the configuration, the rest to the configuration."""
    chain_changes = {k: v for k, v in changes.items() if k in CHAIN_FIELDS and k not in SHARED_FIELDS}
    shared = {k: v for k, v in changes.items() if k in SHARED_FIELDS}
    own = {k: v for k, v in changes.items() if k not in CHAIN_FIELDS or k in SHARED_FIELDS}
    target = chain or config.first_chain.name
    chains = tuple(
        dataclasses.replace(c, **_per_chain(shared, c.name), **(chain_changes if c.name == target else {}))
        for c in config.chains
    )
    if target not in {c.name for c in chains}:
        raise KeyError(f"no chain {target!r} in the configuration")
    return dataclasses.replace(config, **own, chains=chains)


def _per_chain(shared: dict[str, Any], name: str) -> dict[str, Any]:
    """The shared settings as a chain has them: the file stores in a directory named after the chain."""
    return {
        k: (os.path.join(v, name) if k in ("block_cache", "debug_data_store") and v else v) for k, v in shared.items()
    }


def with_chains(config: Config, *chains: ChainSettings) -> Config:
    """`config` with exactly these chains (the first is the page's default)."""
    return dataclasses.replace(config, chains=tuple(chains))
