"""DWS_STRAY_TOKENS (and DWS_NAME_STRAY_TOKENS): the well-known tokens the sale does not take, a default list
per known chain id without the coins the chain takes, `none`, and every bad entry named at start."""

from __future__ import annotations

import dataclasses

from dws_project.config import load_config
from tests.foundation.test_chain_configuration import problems, three_chains

DAI = "0x6b175474e89094c44da98b954eedeac495271d0f"


def test_each_known_chain_has_a_default_list_without_the_coins_it_takes():
    config = load_config(three_chains())

    eth, base, arb = (config.chain(n) for n in ("eth", "base", "arb"))
    assert [t.asset for t in eth.stray_tokens] == ["dai", "weth"]  # usdt and usdc are its donation coins
    assert [t.asset for t in base.stray_tokens] == ["usdt", "usdbc", "dai", "weth"]  # usdc taken
    assert [t.asset for t in arb.stray_tokens] == ["usdc", "usdc.e", "dai", "weth"]  # usdt taken
    assert dataclasses.astuple(eth.stray_tokens[0]) == ("dai", DAI, 18)
    assert arb.stray_token("0xff970a61a04b1ca14834a43f5de4533ebddb5cc8").asset == "usdc.e"


def test_a_list_replaces_the_default_and_none_empties_it():
    env = three_chains() | {
        "DWS_STRAY_TOKENS": "dai:0x6B175474E89094C44Da98b954EedeAC495271d0F:18",
        "DWS_BASE_STRAY_TOKENS": "none",
    }
    config = load_config(env)

    assert [(t.asset, t.contract, t.scale) for t in config.chain("eth").stray_tokens] == [("dai", DAI, 18)]
    assert config.chain("base").stray_tokens == ()
    assert [t.asset for t in config.chain("arb").stray_tokens] == ["usdc", "usdc.e", "dai", "weth"]


def test_bad_entries_are_named_at_start():
    env = three_chains() | {
        "DWS_STRAY_TOKENS": "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:6",  # a donation coin of eth
        "DWS_BASE_STRAY_TOKENS": "Dai:0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb:18",
        "DWS_ARB_STRAY_TOKENS": "dai:0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1:99",
        "DWS_ETH_STRAY_TOKENS": "none",
    }
    found = problems(env)

    assert found["DWS_STRAY_TOKENS"] == "lists usdt, which the chain takes as a donation coin (its STABLE_COINS)"
    assert found["DWS_BASE_STRAY_TOKENS"] == "entry 1: 'Dai' is not a token name (lower case letters, digits, dots)"
    assert found["DWS_ARB_STRAY_TOKENS"] == "entry 1 (dai): decimals must be a whole number from 0 to 18"
    assert found["DWS_ETH_STRAY_TOKENS"] == "chain eth is configured by DWS_STRAY_TOKENS; set that instead"
