"""DWS_CHAINS and every chain's settings (DESIGN "Chains"): chain eth keeps the single-chain variables, any
other chain has its own; every bad one is named at once, and no provider's key is ever echoed."""

from __future__ import annotations

import pytest

from dws_project.config import ConfigError, load_config
from tests.processes import RPC_KEY, base_environment, leaked_secrets, run_manage

BASE_USDC = "usdc:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913:6"
ARB_USDT = "usdt:0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9:6"


def three_chains() -> dict[str, str]:
    """Ethereum, Base and Arbitrum One, as deploy/env.example shows them."""
    env = base_environment()
    env.update(
        {
            "DWS_CHAINS": "eth,base,arb",
            "DWS_BASE_RPC_URL": f"https://base.example.org/v2/{RPC_KEY}",
            "DWS_BASE_CHAIN_ID": "8453",
            "DWS_BASE_STABLE_COINS": BASE_USDC,
            "DWS_BASE_START_BLOCK": "23000000",
            "DWS_BASE_TRACE": "debug",
            "DWS_BASE_WALLET_RPC_URL": "https://mainnet.base.org",
            "DWS_BASE_EXPLORER_URL": "https://basescan.org/tx/{tx}",
            "DWS_ARB_RPC_URL": f"https://arb.example.org/v2/{RPC_KEY}",
            "DWS_ARB_CHAIN_ID": "42161",
            "DWS_ARB_STABLE_COINS": ARB_USDT,
            "DWS_ARB_LABEL": "Arbitrum",
            "DWS_ARB_DONATION_ADDRESS": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        }
    )
    return env


def problems(env: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConfigError) as raised:
        load_config(env)
    return dict(raised.value.problems)


def test_a_single_chain_deployment_is_chain_eth_of_the_single_chain_variables():
    config = load_config(base_environment())

    (chain,) = config.chains
    assert (chain.name, chain.chain_id, chain.display_label) == ("eth", 1, "Ethereum")
    assert chain.donation_address == "0xa0ee7a142d267c1f36714e4a8f75612f20a79720"
    assert [c.asset for c in chain.stable_coins] == ["usdt", "usdc"]


def test_three_chains_are_read_in_order_each_with_its_own_settings():
    config = load_config(three_chains())

    assert config.chain_names == ("eth", "base", "arb")
    base, arb = config.chain("base"), config.chain("arb")
    assert (base.chain_id, base.display_label, base.start_block, base.trace_mode) == (8453, "Base", 23000000, "debug")
    assert [(c.asset, c.contract) for c in base.stable_coins] == [
        ("usdc", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913")
    ]
    assert base.wallet_rpc_url == "https://mainnet.base.org"
    assert base.explorer_url == "https://basescan.org/tx/{tx}"
    assert base.donation_address == config.first_chain.donation_address  # DWS_DONATION_ADDRESS, the default
    assert (arb.display_label, arb.donation_address) == ("Arbitrum", "0x70997970c51812dc3a010c7d01b50e0d17dc79c8")
    assert arb.rpc_check_url is None
    # every chain's provider key is a secret for the log redactor
    assert all(RPC_KEY in secret for secret in config.secrets() if RPC_KEY in secret)
    assert any(RPC_KEY in secret for secret in config.secrets())


def test_a_chain_without_coins_takes_eth_only():
    env = three_chains()
    del env["DWS_BASE_STABLE_COINS"]

    assert load_config(env).chain("base").stable_coins == ()


def test_every_bad_chain_setting_is_named_at_once():
    env = three_chains()
    env.update(
        {
            "DWS_BASE_RPC_URL": f"http://base.example.org/{RPC_KEY}",  # plain http beyond loopback
            "DWS_BASE_STABLE_COINS": "dai:0x6B175474E89094C44Da98b954EedeAC495271d0F:18",
            "DWS_BASE_TRACE": "sometimes",
            "DWS_BASE_START_BLOCK": "-3",
            "DWS_BASE_LABEL": "<script>",
            "DWS_ARB_CHAIN_ID": "mainnet",
            "DWS_ARB_EXPLORER_URL": "https://arbiscan.io/tx/",
            "DWS_ARB_DONATION_ADDRESS": "0x0000000000000000000000000000000000000000",
        }
    )
    del env["DWS_ARB_RPC_URL"]

    found = problems(env)

    assert set(found) == {
        "DWS_BASE_RPC_URL",
        "DWS_BASE_STABLE_COINS",
        "DWS_BASE_TRACE",
        "DWS_BASE_START_BLOCK",
        "DWS_BASE_LABEL",
        "DWS_ARB_RPC_URL",
        "DWS_ARB_CHAIN_ID",
        "DWS_ARB_EXPLORER_URL",
        "DWS_ARB_DONATION_ADDRESS",
    }
    assert RPC_KEY not in " ".join(found.values())


@pytest.mark.parametrize(
    "value", [" , ", "eth,eth", "Eth", "eth,base-2", "1eth", "eth,abcdefghijklmnopq", "eth,,base,base"]
)
def test_bad_chain_names_are_refused(value):
    env = three_chains()
    env["DWS_CHAINS"] = value

    assert "DWS_CHAINS" in problems(env)


def test_two_chains_with_the_same_chain_id_are_refused():
    env = three_chains()
    env["DWS_ARB_CHAIN_ID"] = "8453"

    assert "is 8453, the chain id of chain base too" in problems(env)["DWS_ARB_CHAIN_ID"]


def test_two_chains_on_one_provider_are_refused():
    env = three_chains()
    env["DWS_ARB_RPC_URL"] = env["DWS_BASE_RPC_URL"]

    assert "names the provider of chain base" in problems(env)["DWS_ARB_RPC_URL"]


@pytest.mark.parametrize(("chain_id", "coin"), [("56", "BNB"), ("137", "POL"), ("43114", "AVAX")])
def test_a_chain_whose_native_coin_is_not_eth_is_refused(chain_id, coin):
    env = three_chains()
    env["DWS_ARB_CHAIN_ID"] = chain_id

    assert coin in problems(env)["DWS_ARB_CHAIN_ID"]


def test_the_wallet_rpc_url_is_never_the_providers():
    env = three_chains()
    env["DWS_BASE_WALLET_RPC_URL"] = env["DWS_BASE_RPC_URL"]

    assert "never the provider's" in problems(env)["DWS_BASE_WALLET_RPC_URL"]
    assert RPC_KEY not in problems(env)["DWS_BASE_WALLET_RPC_URL"]


@pytest.mark.parametrize(
    ("provider", "wallet"),
    [
        ("DWS_BASE_RPC_URL", "https://base.example.org/v2/{key}/"),  # a trailing slash
        ("DWS_BASE_RPC_URL", "https://BASE.Example.ORG/v2/{key}"),  # the host upper-cased
        ("DWS_BASE_RPC_URL", "https://base.example.org:443/v2/{key}"),  # the default port spelt out
        ("DWS_BASE_RPC_URL", "https://base.example.org./v2/{key}"),  # the root's trailing dot
        ("DWS_BASE_RPC_URL", "https://base.example.org/v2/{key}?chain=base"),  # an extra query
        ("DWS_BASE_RPC_URL", "https://base.example.org/v2/%72pcKEY-9f8e7d6c5b4a"),  # percent-encoded
        ("DWS_BASE_RPC_URL", "https://base.example.org/rpc?key={key}"),  # the key moved to the query
        ("ETH_RPC_URL", "https://node.example.org/public?apikey={key}"),  # another chain's provider, its query
        ("DWS_BASE_RPC_CHECK_URL", "https://check.example.org/{key}"),  # the check provider's
    ],
)
def test_a_wallet_rpc_url_sharing_a_providers_host_and_key_is_refused_without_echoing_either(provider, wallet):
    env = three_chains()
    env["DWS_BASE_RPC_CHECK_URL"] = f"https://check.example.org/{RPC_KEY}"
    env["DWS_BASE_WALLET_RPC_URL"] = wallet.format(key=RPC_KEY)

    problem = problems(env)["DWS_BASE_WALLET_RPC_URL"]

    assert "never the provider's" in problem
    assert provider in problem
    assert RPC_KEY not in problem
    assert "example.org" not in problem


@pytest.mark.parametrize(
    ("provider", "wallet"),
    [
        (None, "https://base.example.org/#/v2/{key}"),  # in the fragment: never sent, still on the page
        (None, "https://base.example.org/rpc?chain=base;key={key}"),  # after a ';' (some servers split there)
        (None, "https://base.example.org/{key}.json"),  # inside a longer path segment
        (None, "https://base.example.org\\v2\\{key}"),  # backslashes: a browser reads them as slashes
        (None, "https://base-sepolia.example.org/v2/{key}"),  # the same key on another of the provider's hosts
        (None, "https://%62ase.example.org/v2/{key}"),  # a percent-encoded host
        ("https://{key}.nodes.example.org", "https://%72pc{key_rest}.nodes.example.org"),  # the key is the host
        ("https://{key}.nodes.example.org", "https://\uff52pc{key_rest}.nodes.example.org"),  # a full-width letter
        ("https://[2001:db8::7]", "https://[2001:db8:0:0:0:0:0:7]/"),  # an IPv6 host spelt out
        ("https://192.0.2.7", "https://3221225991/"),  # an IPv4 host as one number
        ("https://192.0.2.7", "https://0xc0.0.2.7/"),  # ... or with a hexadecimal part
    ],
)
def test_no_spelling_of_a_providers_key_or_host_gets_past_the_wallet_rpc_url_check(provider, wallet):
    """The check compared the URLs' exact path segments, query pairs and host strings: the key elsewhere in
    the URL, or the provider's host written another way a browser reads the same, went onto the page."""
    env = three_chains()
    if provider is not None:
        env["DWS_BASE_RPC_URL"] = provider.format(key=RPC_KEY.lower())
    env["DWS_BASE_WALLET_RPC_URL"] = wallet.format(key=RPC_KEY, key_rest=RPC_KEY.lower()[3:])

    problem = problems(env)["DWS_BASE_WALLET_RPC_URL"]

    assert "never the provider's" in problem
    assert "DWS_BASE_RPC_URL" in problem
    assert RPC_KEY.lower() not in problem.lower()


@pytest.mark.parametrize(
    "wallet",
    [
        "https://mainnet.base.org",  # another host altogether
        "https://base.example.org/public",  # the provider's host, none of its key
    ],
)
def test_a_wallet_rpc_url_that_shares_no_key_with_a_provider_is_accepted(wallet):
    env = three_chains()
    env["DWS_BASE_WALLET_RPC_URL"] = wallet

    assert load_config(env).chain("base").wallet_rpc_url == wallet


def test_a_local_dev_node_may_be_handed_to_the_wallet_as_it_is():
    env = three_chains()
    env.update({"DWS_BASE_RPC_URL": "http://127.0.0.1:8546", "DWS_BASE_WALLET_RPC_URL": "http://127.0.0.1:8546"})

    assert load_config(env).chain("base").wallet_rpc_url == "http://127.0.0.1:8546"


@pytest.mark.parametrize(
    ("variable", "instead"),
    [("DWS_ETH_RPC_URL", "ETH_RPC_URL"), ("DWS_ETH_CHAIN_ID", "DWS_CHAIN_ID"), ("DWS_ETH_TRACE", "DWS_TRACE")],
)
def test_chain_eth_is_configured_by_the_single_chain_variables_only(variable, instead):
    env = three_chains()
    env[variable] = "1"

    assert instead in problems(env)[variable]


def test_every_chain_may_have_its_own_donation_address_and_then_none_is_shared():
    env = three_chains()
    del env["DWS_DONATION_ADDRESS"]
    assert "DWS_DONATION_ADDRESS" in problems(env)  # eth and base have none of their own

    env["DWS_ETH_DONATION_ADDRESS"] = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
    env["DWS_BASE_DONATION_ADDRESS"] = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
    config = load_config(env)
    assert config.first_chain.donation_address == "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"


def test_the_dev_price_is_refused_unless_every_chain_is_a_development_chain():
    env = three_chains()
    env.update({"DWS_CHAIN_ID": "31337", "DWS_DEV_ETH_PRICE": "2000"})

    reason = problems(env)["DWS_DEV_ETH_PRICE"]
    assert "DWS_BASE_CHAIN_ID is 8453" in reason
    assert "DWS_ARB_CHAIN_ID is 42161" in reason


def test_a_process_refuses_to_start_naming_each_bad_chain_variable():
    env = three_chains()
    env["DWS_BASE_CHAIN_ID"] = "1"  # eth's
    env["DWS_ARB_RPC_URL"] = f"ftp://arb.example.org/{RPC_KEY}"

    result = run_manage("check", env=env)

    assert result.returncode == 2
    assert "configuration error: DWS_BASE_CHAIN_ID is 1, the chain id of chain eth too" in result.stderr
    assert "configuration error: DWS_ARB_RPC_URL must be https" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_each_chains_block_cache_and_debug_store_is_a_directory_named_after_it():
    env = three_chains()
    env.update({"DWS_BLOCK_CACHE": "/var/lib/dws/blocks", "DWS_DEBUG_DATA_STORE": "/var/lib/dws/debug"})

    config = load_config(env)

    assert [c.block_cache for c in config.chains] == [f"/var/lib/dws/blocks/{n}" for n in ("eth", "base", "arb")]
    assert config.chain("base").debug_data_store == "/var/lib/dws/debug/base"
